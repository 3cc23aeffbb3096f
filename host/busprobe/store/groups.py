"""The fleet view: stored runs grouped by a hop, one line per group and direction.

For each group (the runs that went through the same controller, root port, chipset path, kernel
or host) and each direction and MPS, the plateau of every clean run's verdict entry gives the
group's median and spread; runs with data errors are counted and left out of the figures
(``flagged``). A group where most runs are ``upstream-limited`` is named: the sign of a cap in
the path (a chipset slot's ~290 MiB/s on a Gen2 x1 card) rather than in the card.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import select

from .database import Store
from .query import EVERY_RUN, GROUP_COLUMNS, RunFilter
from .tables import runs, verdicts

__all__ = ["Group", "group_runs", "upstream_limited", "NONE"]

#: How a group of runs without that hop (a USB run grouped by chipset) is named.
NONE = "(none)"


@dataclass
class Group:
    """The runs of one hop value, one direction and one MPS.

    Attributes
    ----------
    hop : str
        What the runs were grouped by (``root-port``).
    value : str
        The hop they share (``0000:00:1c.0 (8086:a338)``), or :data:`NONE`.
    bus : str
        The bus kind (``pcie``, ``usb2-hs``): runs of different buses never share figures.
    direction : str
        ``in``, ``out``, ``write``, ``read``, ...
    mps : int or None
        The MPS of the entries, where swept.
    plateaus : list of float
        Bytes per second, one per clean run's entry.
    run_ids : list of str
        The clean runs, in the order of ``plateaus``.
    verdicts : Counter
        How many entries gave each verdict.
    flagged : set of str
        Runs with data errors: stored, counted here, never in the figures.
    """

    hop: str
    value: str
    bus: str
    direction: str
    mps: int | None
    plateaus: list[float] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    verdicts: Counter[str] = field(default_factory=Counter)
    flagged: set[str] = field(default_factory=set)

    @property
    def median(self) -> float | None:
        return statistics.median(self.plateaus) if self.plateaus else None

    @property
    def spread(self) -> float | None:
        """(max − min) / median of the plateaus: how far the group's runs lie apart."""
        median = self.median
        if not median:
            return None
        return (max(self.plateaus) - min(self.plateaus)) / median

    @property
    def verdict(self) -> str | None:
        """The verdict most of the group's entries gave."""
        return self.verdicts.most_common(1)[0][0] if self.verdicts else None


def group_runs(store: Store, hop: str, selection: RunFilter = EVERY_RUN) -> list[Group]:
    """The groups of the runs ``selection`` names, by ``hop`` (a key of ``GROUP_COLUMNS``),
    sorted by hop value, bus, direction and MPS."""
    if hop not in GROUP_COLUMNS:
        raise ValueError(f"--group-by {hop!r}: one of {', '.join(GROUP_COLUMNS)}")
    column = GROUP_COLUMNS[hop]
    statement = (select(column.label("value"), runs.c.bus_kind, runs.c.run_id, runs.c.flagged,
                        verdicts.c.direction, verdicts.c.mps, verdicts.c.plateau,
                        verdicts.c.verdict)
                 .join(verdicts, verdicts.c.run_id == runs.c.run_id)
                 .where(selection.where()))
    groups: dict[tuple[str, str, str, int | None], Group] = {}
    for row in store.execute_all(statement):
        value = row.value or NONE
        key = (value, row.bus_kind, row.direction, row.mps)
        group = groups.get(key) or groups.setdefault(
            key, Group(hop, value, row.bus_kind, row.direction, row.mps))
        if row.flagged:
            group.flagged.add(str(row.run_id))
            continue
        if row.plateau is not None:
            group.plateaus.append(row.plateau)
            group.run_ids.append(str(row.run_id))
        group.verdicts[row.verdict] += 1
    return [groups[key] for key in sorted(groups, key=lambda k: (*k[:3], k[3] or 0))]


def upstream_limited(groups: list[Group]) -> list[Group]:
    """The groups where most clean entries are ``upstream-limited``."""
    return [group for group in groups
            if group.verdicts["upstream-limited"] * 2 > sum(group.verdicts.values()) > 0]
