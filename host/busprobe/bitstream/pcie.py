"""``busprobe build --design pcie`` for Artix-7 boards: LiteX generates, Vivado builds.

Generation writes the Verilog, the XDC (pins from the board's litex-boards platform file, clock
constraints from LitePCIe), the Vivado TCL (which also creates the ``pcie_7x`` IP) and LiteX's
CSR map into one directory. Vivado is not a PyPI package: where ``vivado`` is on ``PATH`` the
build script runs; otherwise the command stops after generation and says what to run.
"""

from __future__ import annotations

import importlib
import logging
import shlex
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from busprobe.gateware.boards import Board

from .designs import Design
from .result import BuildError

__all__ = ["BUILD_NAME", "PCIeTarget", "generate_pcie_target", "lint_pcie_target",
           "build_pcie_target"]

log = logging.getLogger(__name__)

BUILD_NAME = "busprobe_pcie"


@dataclass
class PCIeTarget:
    """The generated files of a PCIe target, and the bitstream if Vivado ran.

    Attributes
    ----------
    gateware_dir : str
        Where Vivado runs (holds ``.v``, ``.xdc``, ``.tcl``, ``build_*.sh``).
    verilog, xdc, tcl, csr_csv : str
    vivado_command : str
        The exact command that builds the bitstream.
    bitstream : str or None
        Set when Vivado ran and produced it.
    generate_seconds : float
    """

    board: str
    design: str
    fpga: str
    gateware_dir: str
    verilog: str
    xdc: str
    tcl: str
    csr_csv: str
    vivado_command: str
    generate_seconds: float
    bitstream: str | None = None
    build_seconds: float | None = None
    lint_findings: list[str] | None = None
    lint_style_warnings: int | None = None

    @property
    def verilog_path(self) -> Path:
        return Path(self.verilog)

    @property
    def xdc_path(self) -> Path:
        return Path(self.xdc)

    @property
    def tcl_path(self) -> Path:
        return Path(self.tcl)

    def summary_lines(self) -> list[str]:
        lines = [f"{self.design} on {self.board} ({self.fpga}): LiteX target generated in "
                 f"{self.generate_seconds:.1f} s",
                 f"  verilog {self.verilog}", f"  xdc     {self.xdc}", f"  tcl     {self.tcl}"]
        if self.lint_findings is not None:
            verdict = ("clean" if not self.lint_findings else
                       f"{len(self.lint_findings)} findings, first: {self.lint_findings[0]}")
            lines.append(f"  verilator lint: {verdict} ({self.lint_style_warnings} LiteX style "
                         "warnings set aside)")
        if self.bitstream:
            lines.append(f"  bitstream {self.bitstream} (Vivado, {self.build_seconds:.0f} s)")
        else:
            lines.append(f"vivado not on PATH: to build the bitstream run: {self.vivado_command}")
        return lines

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def generate_pcie_target(board: Board, design: Design, *,
                         out_dir: Path) -> tuple[object, PCIeTarget]:
    """Generate the LiteX target into ``out_dir``: ``(finalised SoC, PCIeTarget)``."""
    from litex.soc.integration.builder import Builder

    from busprobe.gateware.boards.pcie_target import build_pcie_target_soc

    if design.bus != "pcie":
        raise BuildError(f"board {board.name} carries PCIe designs, not {design.name!r}")
    design.load()  # a clear error if the core is not there
    module_name, _, cls = board.platform.partition(":")
    start = time.monotonic()
    platform = getattr(importlib.import_module(module_name), cls)()
    from .firmware import build_firmware

    soc = build_pcie_target_soc(platform, lanes=board.phy, firmware=list(build_firmware().words))
    out_dir = Path(out_dir).resolve()
    builder = Builder(soc, output_dir=str(out_dir), compile_software=False,
                      compile_gateware=False, csr_csv=str(out_dir / "csr.csv"))
    builder.build(build_name=BUILD_NAME, run=False)
    gateware = out_dir / "gateware"
    target = PCIeTarget(
        board=board.name, design=design.name, fpga=platform.device, gateware_dir=str(gateware),
        verilog=str(gateware / f"{BUILD_NAME}.v"), xdc=str(gateware / f"{BUILD_NAME}.xdc"),
        tcl=str(gateware / f"{BUILD_NAME}.tcl"), csr_csv=str(out_dir / "csr.csv"),
        vivado_command=f"cd {shlex.quote(str(gateware))} && sh build_{BUILD_NAME}.sh",
        generate_seconds=round(time.monotonic() - start, 1))
    for path in (target.verilog, target.xdc, target.tcl):
        if not Path(path).exists():
            raise BuildError(f"LiteX did not write {path}")
    return soc, target


def lint_pcie_target(soc: object, target: PCIeTarget) -> None:
    """Verilator lint of the generated Verilog, black-box stubs beside it; fills ``lint_*``."""
    from .xilinx_stubs import verilator_lint, write_blackbox_stubs

    stubs = Path(target.gateware_dir) / "xilinx_stubs.v"
    # The CPU's Verilog (the platform's sources also list the top LiteX wrote).
    cpu = [Path(path) for path, _, _ in soc.platform.sources
           if path.endswith(".v") and Path(path).name != target.verilog_path.name]
    write_blackbox_stubs(soc, target.verilog_path, stubs, cpu)
    report = verilator_lint([stubs, target.verilog_path, *cpu], BUILD_NAME)
    target.lint_findings = report.findings
    target.lint_style_warnings = report.style_warnings


def build_pcie_target(board: Board, design: Design, *, root: Path, out: Path | None = None,
                      lint: bool = False) -> PCIeTarget:
    """Generate the target (and lint it); run Vivado on it when it is installed."""
    out_dir = Path(out) if out is not None else root / "gateware" / f"{board.name}-{design.name}"
    soc, target = generate_pcie_target(board, design, out_dir=out_dir)
    if lint:
        lint_pcie_target(soc, target)
    if shutil.which("vivado") is None:
        return target
    start = time.monotonic()
    proc = subprocess.run(["sh", f"build_{BUILD_NAME}.sh"], cwd=target.gateware_dir)
    if proc.returncode != 0:
        raise BuildError(f"vivado failed (exit status {proc.returncode}); see "
                         f"{target.gateware_dir}/vivado.log")
    bitstream = Path(target.gateware_dir) / f"{BUILD_NAME}.bit"
    if not bitstream.exists():
        raise BuildError(f"vivado finished without {bitstream}")
    target.bitstream = str(bitstream)
    target.build_seconds = round(time.monotonic() - start, 1)
    return target
