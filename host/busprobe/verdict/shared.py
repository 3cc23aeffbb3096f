"""The verdict of a multi-target sweep: ``shared-limited`` or ``independent``.

Per point, the targets' throughputs summed together (``sum_throughput``) are compared with the
sum of their figures alone (``sum_alone``). The verdict looks at the longest lengths, where every
target alone has the most to give, per direction:

``shared-limited``
    Targets on one bus whose sum together falls short of the sum alone by more than the repeats'
    spread (the widest of the together sums' and the targets' alone spreads, and at least
    :data:`MIN_SHORTFALL`) share something they all pass through. The shared hop is the common
    ancestor of their topologies (:mod:`busprobe.topology.shared`). When the sum together
    plateaus (:func:`~busprobe.verdict.plateau.detect_plateau`) the plateau is the ceiling the
    hop implies; without a plateau (one length, or a curve still moving) the shortfall is still
    a verdict when it is beyond reach of the spread (more than :data:`REACH` times it): the
    entry states what is lost at least and leaves ``ceiling`` empty, since only a plateau
    measures the hop's ceiling.
``independent``
    The sum together matches the sum alone within that spread.
``inconclusive``
    A shortfall within reach of the spread that does not settle at one figure, or targets on
    different buses (no hop of one topology is shared).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..topology.shared import shared_hop
from ..units import Units
from .plateau import detect_plateau

__all__ = ["assess_shared", "SHARED_LIMITED", "INDEPENDENT", "INCONCLUSIVE", "MIN_SHORTFALL",
           "REACH"]

SHARED_LIMITED, INDEPENDENT, INCONCLUSIVE = "shared-limited", "independent", "inconclusive"
#: Least relative shortfall called a shortfall, however close the repeats agree (a
#: deterministic simulation): 2 %, above a sum's own start-up misalignment of a few transfers.
MIN_SHORTFALL = 0.02
#: How many times the spread a shortfall must exceed to be a verdict without a plateau: a
#: shortfall just past the spread may be a curve not yet settled; one twice the spread is not
#: noise whatever the curve does.
REACH = 2.0


def assess_shared(rows: Sequence[dict[str, Any]], topologies: Sequence[Sequence[dict]],
                  buses: Sequence[str | None], units: Units = Units.MB) -> list[dict[str, Any]]:
    """One verdict entry per direction from the per-point ``rows`` of
    :meth:`busprobe.sweep_multi.MultiSweep.sums`; ``topologies`` and ``buses`` (kinds) are the
    targets'."""
    kinds = {b.split("-")[0] for b in buses if b}
    entries = []
    for direction in dict.fromkeys(r["direction"] for r in rows):
        mine = [r for r in rows if r["direction"] == direction
                and r.get("sum_throughput") and r.get("sum_alone")]
        if not mine:
            continue
        longest = max(r["length"] for r in mine)
        at_longest = [r for r in mine if r["length"] == longest]
        together = max(r["sum_throughput"] for r in at_longest)
        alone = max(r["sum_alone"] for r in at_longest)
        spread = max([MIN_SHORTFALL, *(r.get("sum_spread") or 0 for r in at_longest),
                      *(r.get("alone_spread") or 0 for r in at_longest)])
        shortfall = (alone - together) / alone
        plateau = detect_plateau((r["length"], r["sum_throughput"], r.get("sum_spread"))
                                 for r in mine)
        entry: dict[str, Any] = {"direction": direction, "length": longest,
                                 "sum_together": together, "sum_alone": alone,
                                 "shortfall": shortfall, "band": spread,
                                 "plateau": plateau.value if plateau else None,
                                 "plateau_lengths": list(plateau.lengths) if plateau else [],
                                 "plateau_reached": bool(plateau and plateau.reached),
                                 "shared_hop": None, "ceiling": None}
        fmt = units.format
        if shortfall <= spread:
            entry["verdict"] = INDEPENDENT
            entry["explanation"] = (
                f"{direction}: together {fmt(together)} = the sum alone {fmt(alone)} within "
                f"{spread:.0%}: nothing they share limits them")
        elif len(kinds) > 1:
            entry["verdict"] = INCONCLUSIVE
            entry["explanation"] = (
                f"{direction}: together {fmt(together)} is {shortfall:.0%} short of the sum "
                f"alone, but the targets are on different buses ({', '.join(sorted(kinds))}): "
                "no hop of one topology is shared; the host itself (CPU, memory) is")
        elif not (plateau and plateau.reached):
            if shortfall <= REACH * spread:
                entry["verdict"] = INCONCLUSIVE
                entry["explanation"] = (
                    f"{direction}: together {fmt(together)} is {shortfall:.0%} short of the sum "
                    f"alone {fmt(alone)}, within reach of the repeats' spread ({spread:.0%}), "
                    f"and the sum does not settle at one ceiling "
                    f"({plateau.why if plateau else 'no figure'}); sweep longer lengths")
            else:
                hop = _hop(topologies)
                entry.update(verdict=SHARED_LIMITED, shared_hop=hop)
                where = hop["what"] if hop else "a hop the topology does not show"
                why = plateau.why if plateau else "no figure"
                entry["explanation"] = (
                    f"{direction}: together the targets sum to {fmt(together)} at "
                    f"{longest} B, {shortfall:.0%} short of the {fmt(alone)} they reach alone "
                    f"(the repeats agree within {spread:.0%}): they share {where}; at least "
                    f"this much is lost ({fmt(alone - together)}); sweep longer lengths to "
                    f"measure the hop's ceiling (the sum has no plateau: {why})")
        else:
            hop = _hop(topologies)
            entry.update(verdict=SHARED_LIMITED, ceiling=plateau.value, shared_hop=hop)
            where = hop["what"] if hop else "a hop the topology does not show"
            entry["explanation"] = (
                f"{direction}: together the targets sum to {fmt(plateau.value)}, "
                f"{shortfall:.0%} short of the {fmt(alone)} they reach alone, flat from "
                f"{plateau.lengths[0]} B on: they share {where}, which carries at most "
                f"~{fmt(plateau.value)}")
        entries.append(entry)
    return entries


def _hop(topologies: Sequence[Sequence[dict]]) -> dict[str, Any] | None:
    try:
        return shared_hop(topologies)
    except ValueError:
        return None
