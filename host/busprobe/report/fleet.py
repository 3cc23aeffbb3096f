"""The fleet view in text: stored runs grouped by a hop (``compare --store --group-by HOP``).

One line per group, direction and MPS: how many clean runs, their plateaus' median and spread
(min..max), the verdicts they gave; then the groups that are ``upstream-limited`` by name, and
the runs left out of every figure for their data errors.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..store import Store
from ..store.columns import verdict_entries
from ..store.groups import Group, upstream_limited
from ..store.query import RunFilter
from ..units import Units
from .compare import Run, runs_from_docs

__all__ = ["stored_runs", "group_rows", "format_groups", "plateau_range", "verdict_counts"]


def stored_runs(store: Store, selection: RunFilter, units: Units = Units.MB, *,
                stored_verdicts: bool = False) -> list[Run]:
    """The runs ``selection`` names as :class:`Run` objects, labelled ``A``, ``B``, ... with
    their run id (first 8 digits) as the source. With ``stored_verdicts`` their entries are the
    verdicts they were stored with (as the group figures are), else assessed again as
    ``compare`` of files does."""
    docs, sources = [], []
    for run_id, raw, _flagged in store.documents(selection):
        doc: dict[str, Any] = json.loads(raw)
        if stored_verdicts:
            doc = dict(doc, entries=verdict_entries(doc))
        docs.append(doc)
        sources.append(run_id)
    if not docs:
        raise ValueError(f"no stored run in {store.name} matches")
    return runs_from_docs(docs, sources, units)


def plateau_range(group: Group, units: Units) -> str:
    if not group.plateaus:
        return "-"
    return f"{units.convert(min(group.plateaus)):.2f}..{units.convert(max(group.plateaus)):.2f}"


def verdict_counts(group: Group) -> str:
    return ", ".join(f"{verdict} {count}" for verdict, count in group.verdicts.most_common())


def group_rows(groups: Sequence[Group], units: Units) -> list[tuple[str, ...]]:
    """Header plus one row per group (the text table and the lab page share it)."""
    hop = groups[0].hop if groups else "group"
    rows: list[tuple[str, ...]] = [(hop, "bus", "direction", "MPS", "runs", f"median {units.label}",
                                    "spread", f"min..max {units.label}", "verdicts",
                                    "left out (data errors)")]
    for g in groups:
        rows.append((g.value, g.bus, g.direction, str(g.mps or "-"), str(len(g.plateaus)),
                     "-" if g.median is None else f"{units.convert(g.median):.2f}",
                     "-" if g.spread is None else f"{g.spread * 100:.1f} %",
                     plateau_range(g, units), verdict_counts(g) or "-",
                     str(len(g.flagged)) if g.flagged else "-"))
    return rows


def upstream_lines(groups: Sequence[Group], units: Units) -> list[str]:
    """One sentence per ``upstream-limited`` group."""
    out = []
    for g in upstream_limited(list(groups)):
        median = "-" if g.median is None else units.format(g.median)
        out.append(f"{g.hop} {g.value}: {g.bus} {g.direction}"
                   + (f" MPS {g.mps}" if g.mps else "")
                   + f" upstream-limited in {g.verdicts['upstream-limited']} of "
                   f"{sum(g.verdicts.values())} runs, median plateau {median}")
    return out


def format_groups(groups: Sequence[Group], units: Units = Units.MB) -> str:
    """The text ``compare --store --group-by`` prints."""
    if not groups:
        return "no stored run with a verdict matches"
    rows = group_rows(groups, units)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [f"stored runs by {groups[0].hop}: plateau in {units.label} "
             f"({'10^6' if units is Units.MB else '2^20'} B/s); spread = (max - min) / median",
             ""]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
              for r in rows]
    lines.insert(3, "  ".join("-" * w for w in widths))
    upstream = upstream_lines(groups, units)
    if upstream:
        lines += ["", "Upstream-limited groups (a cap in the path, not in the device):"]
        lines += [f"  {line}" for line in upstream]
    flagged = sorted({run for g in groups for run in g.flagged})
    if flagged:
        lines += ["", f"!! {len(flagged)} run(s) with data errors are stored but left out of "
                      f"every figure: {', '.join(r[:8] for r in flagged)}"]
    return "\n".join(lines)
