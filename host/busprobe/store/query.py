"""Which stored runs a command means: the filters ``ls``, ``compare`` and ``report`` share.

Every value a user or a result file gives becomes a bound parameter (SQLAlchemy expressions,
never text pasted into SQL); ``--controller`` matches a part of the name with ``LIKE``'s own
wildcards escaped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, and_, exists, select, true

from .tables import runs, verdicts

__all__ = ["RunFilter", "EVERY_RUN", "parse_since", "GROUP_COLUMNS"]

#: ``--group-by`` HOP -> the run column holding it (:mod:`.columns` says what each is).
GROUP_COLUMNS = {"controller": runs.c.controller, "root-port": runs.c.root_port,
                 "chipset": runs.c.chipset, "kernel": runs.c.kernel, "host": runs.c.host_name}

_AGO = re.compile(r"(\d+)\s*([dhm])")


def parse_since(text: str) -> datetime:
    """``--since``: an ISO date or time (UTC unless it says), or an age: ``7d``, ``12h``,
    ``30m``."""
    match = _AGO.fullmatch(text.strip())
    if match:
        unit = {"d": "days", "h": "hours", "m": "minutes"}[match[2]]
        return datetime.now(UTC) - timedelta(**{unit: int(match[1])})
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--since {text[:40]!r}: give a date (2026-12-01), a time "
                         "(2026-12-01T08:00) or an age (7d, 12h, 30m)") from None
    # Stored times are UTC (SQLite keeps no zone; columns.run_row converts before storing).
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC)


@dataclass(frozen=True)
class RunFilter:
    """The runs a command selects; a field left None selects every run.

    Attributes
    ----------
    host : str
        The host name, exactly.
    controller : str
        A part of the controller's name (``xhci``, ``8086:a36d``).
    bus : str
        The bus kind, exactly (``pcie``, ``usb2-hs``).
    since : datetime
        Runs started at or after it.
    verdict : str
        Runs with at least one verdict entry of this verdict.
    """

    host: str | None = None
    controller: str | None = None
    bus: str | None = None
    since: datetime | None = None
    verdict: str | None = None

    def where(self) -> ColumnElement[bool]:
        """The SQL condition on ``runs`` (parameters bound)."""
        terms: list[ColumnElement[bool]] = []
        if self.host is not None:
            terms.append(runs.c.host_name == self.host)
        if self.controller is not None:
            terms.append(runs.c.controller.contains(self.controller, autoescape=True))
        if self.bus is not None:
            terms.append(runs.c.bus_kind == self.bus)
        if self.since is not None:
            terms.append(runs.c.started >= self.since)
        if self.verdict is not None:
            terms.append(exists(select(verdicts.c.run_id).where(
                verdicts.c.run_id == runs.c.run_id, verdicts.c.verdict == self.verdict)))
        return and_(true(), *terms)


#: The filter that selects every stored run.
EVERY_RUN = RunFilter()
