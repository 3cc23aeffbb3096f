"""What a build produced: bitstream, Fmax per clock domain, utilisation, build time.

Written as ``build.json`` next to the bitstream and printed by ``busprobe build``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

__all__ = ["RESULT_FILE", "BuildError", "ClockTiming", "BuildResult", "SUMMARY_CELLS",
           "comparison_table"]

RESULT_FILE = "build.json"

#: Utilisation lines shown in the summary: (key in ``utilisation``, label).
SUMMARY_CELLS = (("LUT4", "LUT4"), ("CCU2C", "CCU2C"), ("TRELLIS_FF", "FF"),
                 ("DP16KD", "EBR (DP16KD)"), ("TRELLIS_COMB", "slice comb cells"))


class BuildError(RuntimeError):
    """A build could not be made or did not meet its constraints; ``str()`` is one line."""


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
    """

    board: str
    design: str
    design_class: str
    fpga: str
    bitstream: str
    clocks: list[ClockTiming]
    utilisation: dict[str, dict[str, int]]
    build_seconds: float
    toolchain: dict[str, str]
    key: str
    cached: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

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
            raise BuildError(
                f"{self.design} on {self.board}: timing not met: {worst.domain} reaches "
                f"{worst.achieved_mhz:.2f} MHz, needs {worst.constraint_mhz:.2f} MHz{where}")

    def clock(self, domain: str) -> ClockTiming:
        for clock in self.clocks:
            if clock.domain == domain:
                return clock
        raise KeyError(f"no clock for domain {domain!r} in the {self.design} build")

    def used(self, cell: str) -> int:
        return self.utilisation.get(cell, {}).get("used", 0)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("cached")
        return data

    def save(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> BuildResult:
        data = json.loads(Path(path).read_text())
        data["clocks"] = [ClockTiming(**c) for c in data["clocks"]]
        return cls(**data)

    def copy_to(self, out: Path) -> BuildResult:
        """Copy the bitstream to ``out/`` with a ``build.json`` beside it; the copy's result."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        source = Path(self.bitstream)
        target = out / f"{self.board}-{self.design}{source.suffix}"
        shutil.copyfile(source, target)
        copied = replace(self, bitstream=str(target))
        copied.save(out / f"{self.board}-{self.design}.json")
        return copied

    def summary_lines(self) -> list[str]:
        """Human-readable lines: bitstream, Fmax per domain, utilisation, time."""
        origin = "cached" if self.cached else f"built in {self.build_seconds:.1f} s"
        lines = [f"{self.design} on {self.board} ({self.fpga}): {self.bitstream} ({origin}; "
                 f"original build {self.build_seconds:.1f} s)" if self.cached else
                 f"{self.design} on {self.board} ({self.fpga}): {self.bitstream} ({origin})"]
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
        return lines


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
