"""Reading the place-and-route results: nextpnr's ``--report`` JSON and yosys' cell statistics.

nextpnr gives Fmax per clock net and cell use per bel type (``TRELLIS_COMB`` counts LUT4s and
carry halves together); yosys' last ``stat`` gives the LUT4 / CCU2C split people quote. Its
worst path per clock (:func:`critical_paths`) says which blocks a missed clock runs through and
how much of the delay is wire.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from .designs import BuildError
from .result import ClockTiming, critical_path_line

__all__ = ["NextpnrReport", "CriticalPath", "parse_nextpnr_report", "parse_yosys_cells",
           "clock_domain_of", "critical_paths"]

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


@dataclass(frozen=True)
class CriticalPath:
    """nextpnr's worst register-to-register path within one clock.

    Attributes
    ----------
    domain : str
        The clock's domain (as the build's :class:`~.result.ClockTiming` names its net).
    total_ns, logic_ns, routing_ns : float
        The path's delay, and its cell (clock-to-out, logic, setup) and wire parts.
    levels : int
        Logic cells on the path (a carry chain's cells each count).
    blocks : tuple of str
        The design hierarchy the path's cells belong to, in path order, repeats collapsed.
    """

    domain: str
    total_ns: float
    logic_ns: float
    routing_ns: float
    levels: int
    blocks: tuple[str, ...]

    def line(self) -> str:
        """One line: delay, its split, and the blocks the path crosses."""
        return critical_path_line(asdict(self))


def critical_paths(path: Path, *, net_domains: Mapping[str, str] = {}) -> list[CriticalPath]:
    """The worst path of each clock from ``nextpnr --report`` (cross-clock paths left out);
    ``net_domains`` names each clock net's domain (else the net's name is kept)."""
    try:
        reported = json.loads(Path(path).read_text()).get("critical_paths", [])
    except (OSError, ValueError, AttributeError) as exc:
        raise BuildError(f"unreadable nextpnr report {path}: {exc}") from exc
    found = []
    for entry in reported:
        if entry["from"] != entry["to"] or not entry["from"].startswith("posedge "):
            continue
        net = entry["from"].removeprefix("posedge ")
        steps = entry["path"]
        total = sum(step["delay"] for step in steps)
        logic = sum(step["delay"] for step in steps if step["type"] != "routing")
        blocks: list[str] = []
        for step in steps:
            block = _block_of(step["to"]["cell"])
            if block and (not blocks or blocks[-1] != block):
                blocks.append(block)
        found.append(CriticalPath(
            domain=net_domains.get(net, net), total_ns=round(total, 2),
            logic_ns=round(logic, 2), routing_ns=round(total - logic, 2),
            levels=sum(1 for step in steps if step["type"] == "logic"), blocks=tuple(blocks)))
    return found


def _block_of(cell: str) -> str | None:
    """``design.link.replay`` of ``design.link.replay.sending_new_LUT4_A``: the cell's path in
    the design, its own name, a memory's row/column indices and Amaranth's anonymous submodules
    (``U$2``) dropped; None for cells nextpnr or yosys made up (``$nextpnr_CCU2C_17``)."""
    if cell.startswith("$"):
        return None
    parts = cell.split(".")[:-1]
    while parts and (parts[-1].isdigit() or re.fullmatch(r"U\$\d+", parts[-1])):
        parts.pop()
    return ".".join(parts) or None
