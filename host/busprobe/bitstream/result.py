"""What a build produced: bitstream, Fmax per clock domain, utilisation, build time.

Written as ``build.json`` next to the bitstream and printed by ``busprobe build``. A build that
misses timing writes no bitstream; its figures are kept (``timing-failed.json``) and travel with
the :class:`TimingNotMet` it raises.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

__all__ = ["RESULT_FILE", "TIMING_FAILED_FILE", "BuildError", "TimingNotMet", "ClockTiming",
           "BuildResult", "SUMMARY_CELLS", "comparison_table", "seed_table",
           "critical_path_line"]

RESULT_FILE = "build.json"
#: The figures of a build that missed timing, in its build directory (there is no bitstream).
TIMING_FAILED_FILE = "timing-failed.json"

#: Utilisation lines shown in the summary: (key in ``utilisation``, label).
SUMMARY_CELLS = (("LUT4", "LUT4"), ("CCU2C", "CCU2C"), ("TRELLIS_FF", "FF"),
                 ("DP16KD", "EBR (DP16KD)"), ("TRELLIS_COMB", "slice comb cells"))


class BuildError(RuntimeError):
    """A build could not be made or did not meet its constraints; ``str()`` is one line."""


class TimingNotMet(BuildError):
    """A clock missed its constraint: no bitstream. ``result`` holds the build's figures."""

    def __init__(self, message: str, result: BuildResult) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class ClockTiming:
    """Timing of one clock net after place and route.

    Attributes
    ----------
    domain : str
        Clock domain the net drives (``usb``, ``sync``), or the net name when it maps to none.
    net : str
        nextpnr's name for the clock net.
    achieved_mhz, constraint_mhz : float
        Fmax reached, and the frequency the net is constrained to.
    """

    domain: str
    net: str
    achieved_mhz: float
    constraint_mhz: float

    @property
    def met(self) -> bool:
        return self.achieved_mhz >= self.constraint_mhz


@dataclass
class BuildResult:
    """One bitstream and its figures (see module docstring).

    ``utilisation`` maps a cell type to ``{"used": n}`` plus ``"available"`` where the device
    has a fixed number of them. ``cached`` is true when the bitstream came from the build cache.
    ``bitstream`` is None when timing was not met; ``nextpnr_seed`` None is nextpnr's default.
    ``extra["critical_paths"]``, when there: each clock's worst path
    (:class:`~.nextpnr_report.CriticalPath` as a dict), shown by :meth:`summary_lines`.
    """

    board: str
    design: str
    design_class: str
    fpga: str
    bitstream: str | None
    clocks: list[ClockTiming]
    utilisation: dict[str, dict[str, int]]
    build_seconds: float
    toolchain: dict[str, str]
    key: str
    cached: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    nextpnr_seed: int | None = None

    @property
    def timing_met(self) -> bool:
        return not self.failing_clocks()

    def failing_clocks(self) -> list[ClockTiming]:
        """Clocks below their constraint, worst (largest shortfall ratio) first."""
        failing = [c for c in self.clocks if not c.met]
        return sorted(failing, key=lambda c: c.achieved_mhz / c.constraint_mhz)

    def check_timing(self, report: Path | str = "") -> None:
        """Raise :class:`BuildError` naming the worst clock if any clock misses its constraint."""
        failing = self.failing_clocks()
        if failing:
            worst = failing[0]
            where = f" (report {report})" if report else ""
            seed = f" with nextpnr seed {self.nextpnr_seed}" if self.nextpnr_seed else ""
            raise TimingNotMet(
                f"{self.design} on {self.board}: timing not met{seed}: {worst.domain} reaches "
                f"{worst.achieved_mhz:.2f} MHz, needs {worst.constraint_mhz:.2f} MHz; no "
                f"bitstream written{where}", self)

    def clock(self, domain: str) -> ClockTiming:
        for clock in self.clocks:
            if clock.domain == domain:
                return clock
        raise KeyError(f"no clock for domain {domain!r} in the {self.design} build")

    def used(self, cell: str) -> int:
        return self.utilisation.get(cell, {}).get("used", 0)

    def to_json(self) -> dict[str, Any]:
        """The report: every clock with its constraint, Fmax and verdict; ``timing_met``."""
        data = asdict(self)
        data.pop("cached")
        for clock, timing in zip(data["clocks"], self.clocks, strict=True):
            clock["met"] = timing.met
        data["timing_met"] = self.timing_met
        return data

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> BuildResult:
        data = json.loads(Path(path).read_text())
        data.pop("timing_met", None)  # derived, as each clock's "met"
        data["clocks"] = [ClockTiming(**{k: v for k, v in c.items() if k != "met"})
                          for c in data["clocks"]]
        return cls(**data)

    def copy_to(self, out: Path) -> BuildResult:
        """Copy the bitstream to ``out/`` with a ``build.json`` beside it; the copy's result."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        if self.bitstream is None:
            raise BuildError(f"{self.design} on {self.board}: no bitstream to copy")
        source = Path(self.bitstream)
        target = out / f"{self.board}-{self.design}{source.suffix}"
        shutil.copyfile(source, target)
        copied = replace(self, bitstream=str(target))
        copied.save(out / f"{self.board}-{self.design}.json")
        return copied

    def summary_lines(self) -> list[str]:
        """Human-readable lines: bitstream, Fmax per domain, utilisation, time."""
        origin = (f"cached; original build {self.build_seconds:.1f} s" if self.cached
                  else f"built in {self.build_seconds:.1f} s")
        if self.nextpnr_seed is not None:
            origin += f", nextpnr seed {self.nextpnr_seed}"
        made = self.bitstream or "timing not met, no bitstream"
        lines = [f"{self.design} on {self.board} ({self.fpga}): {made} ({origin})"]
        for c in self.clocks:
            verdict = "met" if c.met else "FAILED"
            lines.append(f"  Fmax {c.domain:<6} {c.achieved_mhz:7.2f} MHz "
                         f"(constraint {c.constraint_mhz:.2f} MHz, {verdict})")
        for key, label in SUMMARY_CELLS:
            if key in self.utilisation:
                cell = self.utilisation[key]
                avail = cell.get("available")
                share = f" / {avail} ({100 * cell['used'] / avail:.1f} %)" if avail else ""
                lines.append(f"  {label:<17}{cell['used']:>6}{share}")
        lines += [f"  {critical_path_line(path)}" for path in self.extra.get("critical_paths", [])]
        return lines


def critical_path_line(path: dict[str, Any]) -> str:
    """One line of a clock's worst path: delay, its split, the blocks it crosses."""
    return (f"critical path {path['domain']}: {path['total_ns']:.2f} ns ({path['logic_ns']:.2f} "
            f"logic, {path['routing_ns']:.2f} routing, {path['levels']} logic levels): "
            + " > ".join(path["blocks"]))


def comparison_table(results: list[BuildResult]) -> str:
    """Builds side by side: Fmax per domain, LUT4/FF/EBR, build time (one column per build)."""
    domains = sorted({c.domain for r in results for c in r.clocks})
    rows = [("", [r.design for r in results])]
    for domain in domains:
        cells = []
        for r in results:
            clock = next((c for c in r.clocks if c.domain == domain), None)
            cells.append(f"{clock.achieved_mhz:.1f} MHz" if clock else "-")
        rows.append((f"Fmax {domain}", cells))
    for key, label in SUMMARY_CELLS[:4]:
        rows.append((label, [str(r.used(key)) for r in results]))
    rows.append(("build time", [f"{r.build_seconds:.0f} s" for r in results]))
    width = max(len(label) for label, _ in rows)
    columns = [max(len(row[1][i]) for row in rows) for i in range(len(results))]
    return "\n".join(
        f"{label:<{width}}  " + "  ".join(f"{cell:>{columns[i]}}" for i, cell in enumerate(cells))
        for label, cells in rows)


def seed_table(results: list[BuildResult]) -> str:
    """One build per nextpnr seed, a row each: Fmax per clock, met or not, LUT4/FF/EBR, time."""
    domains = list(dict.fromkeys(c.domain for r in results for c in r.clocks))
    header = ["seed", *(f"{d} MHz" for d in domains), "met", "LUT4", "FF", "EBR", "time"]
    rows = [header]
    for r in results:
        fmax = {c.domain: f"{c.achieved_mhz:.1f}" for c in r.clocks}
        rows.append([str(r.nextpnr_seed), *(fmax.get(d, "-") for d in domains),
                     "yes" if r.timing_met else "NO", str(r.used("LUT4")),
                     str(r.used("TRELLIS_FF")), str(r.used("DP16KD")), f"{r.build_seconds:.0f} s"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.rjust(widths[i]) for i, cell in enumerate(row))
                      for row in rows)
