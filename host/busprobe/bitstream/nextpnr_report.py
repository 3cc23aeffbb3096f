"""Reading the place-and-route results: nextpnr's ``--report`` JSON and yosys' cell statistics.

nextpnr gives Fmax per clock net and cell use per bel type (``TRELLIS_COMB`` counts LUT4s and
carry halves together); yosys' last ``stat`` gives the LUT4 / CCU2C split people quote.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .designs import BuildError
from .result import ClockTiming

__all__ = ["NextpnrReport", "parse_nextpnr_report", "parse_yosys_cells", "clock_domain_of"]

_GLOBAL_PREFIX = "$glbnet$"
_STAT_LINE = re.compile(r"^\s+(\d+)\s+([A-Za-z_][\w$]*)\s*$")


@dataclass(frozen=True)
class NextpnrReport:
    clocks: list[ClockTiming]
    utilisation: dict[str, dict[str, int]]


def clock_domain_of(net: str, constraint_mhz: float, domains_mhz: Mapping[str, float]) -> str:
    """The clock domain a nextpnr clock net belongs to.

    A net named ``...clk_<domain>`` is that domain; a PLL output net (``..._clk_120MHz``) is the
    one domain constrained to its frequency; anything else keeps its net name.
    """
    name = net.removeprefix(_GLOBAL_PREFIX)
    for domain in domains_mhz:
        if re.search(rf"(^|[._]){re.escape(domain)}_clk$|clk_{re.escape(domain)}$", name):
            return domain
    same = [d for d, mhz in domains_mhz.items() if abs(mhz - constraint_mhz) < 0.01 * mhz]
    return same[0] if len(same) == 1 else name


def parse_nextpnr_report(path: Path, *, domains_mhz: Mapping[str, float] = {},
                         yosys_log: Path | None = None) -> NextpnrReport:
    """Clocks and utilisation from ``nextpnr --report`` (plus yosys' LUT4/CCU2C counts)."""
    try:
        data = json.loads(Path(path).read_text())
        fmax, used = data["fmax"], data["utilization"]
    except (OSError, ValueError, KeyError) as exc:
        raise BuildError(f"unreadable nextpnr report {path}: {exc}") from exc
    clocks = [ClockTiming(domain=clock_domain_of(net, v["constraint"], domains_mhz), net=net,
                          achieved_mhz=round(v["achieved"], 2),
                          constraint_mhz=round(v["constraint"], 2))
              for net, v in sorted(fmax.items())]
    utilisation = {cell: {"used": int(v["used"]), "available": int(v["available"])}
                   for cell, v in sorted(used.items()) if v["used"]}
    if yosys_log is not None:
        for cell, count in parse_yosys_cells(yosys_log).items():
            utilisation.setdefault(cell, {"used": count})
    return NextpnrReport(clocks=clocks, utilisation=utilisation)


def parse_yosys_cells(path: Path) -> dict[str, int]:
    """Cell counts of the last ``Printing statistics`` section of a yosys log."""
    text = Path(path).read_text(errors="replace")
    last = text.rfind("Printing statistics")
    if last < 0:
        return {}
    cells = {}
    for line in text[last:].splitlines():
        match = _STAT_LINE.match(line)
        if match and match.group(2).isupper():  # cell types, not "wires", "cells", "top"
            cells[match.group(2)] = int(match.group(1))
    return cells
