"""Black-box stubs for the Xilinx parts a LiteX design instantiates, so Verilator can lint it.

Nothing vendor-made is copied: primitives (``MMCME2_ADV``, ``BUFG``, ``FDPE``, ``IBUFDS_GTE2``,
GTP/PCIe blocks, ...) get their ports and parameters from the Xilinx cell library that ships with
Yosys (``+/xilinx/cells_sim.v``, ``cells_xtra.v``, read through the YoWASP Yosys from PyPI); IP
cores Vivado generates at build time (``pcie_s7``) get them from the design's own Migen
``Instance`` (direction and width of every connection). Stubs are written under the build
directory (:func:`busprobe.build_cache.build_root`).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..toolchain import find_tool
from .result import BuildError

__all__ = ["undefined_modules", "iter_instances", "instance_stub", "primitive_stubs",
           "write_blackbox_stubs", "verilator_lint", "LintReport", "LITEX_STYLE_WARNINGS"]

#: Warnings Migen/LiteX-generated Verilog always raises (blocking assignments in combinational
#: always blocks, implicit widening, cases without default, empty ``always @*``). They say nothing
#: about whether the design is wired correctly; anything else, and any warning on an instance
#: port (``PIN``), is a finding.
LITEX_STYLE_WARNINGS = frozenset({"COMBDLY", "WIDTHEXPAND", "WIDTHTRUNC", "CASEINCOMPLETE",
                                  "ALWNEVER"})
#: Verilator's UNOPTFLAT on LitePCIe's TLP dispatcher: Migen puts the dispatcher's outputs
#: (``dispatch_sink_ready``, ``endpoint2_last``) in one combinational block and the completion
#: crossbar's FSM (its ``master_out`` ``ready`` and next state, which reads ``last``) in another,
#: so Verilator sees a loop between the two blocks where no bit depends on itself (``ready``
#: never depends on ``last``). It appeared when the SoC (CPU, UART, timer) joined the design,
#: which changed no line of either block; a real loop would also stop Vivado (LUTLP-1).
_FALSE_LOOPS = ("depacketizer_dispatch_sink_ready'",)
_MESSAGE = re.compile(r"^%(Error|Warning)(?:-([A-Z0-9_]+))?: (.*)$", re.MULTILINE)

_VERILOG_WORDS = {
    "module", "endmodule", "input", "output", "inout", "wire", "reg", "logic", "assign", "always",
    "initial", "begin", "end", "if", "else", "case", "endcase", "default", "function",
    "endfunction", "localparam", "parameter", "integer", "genvar", "generate", "endgenerate",
    "for", "task", "endtask", "signed", "posedge", "negedge",
}
# An instantiation at the start of a line: `NAME #(` or `NAME inst_name (`.
_INSTANTIATION = re.compile(r"^\s*([A-Za-z_]\w*)\s+(?:#\s*\(|[A-Za-z_]\w*\s*\()", re.MULTILINE)
_DEFINITION = re.compile(r"^\s*module\s+([A-Za-z_]\w*)", re.MULTILINE)


def undefined_modules(verilog: str) -> list[str]:
    """Module types instantiated in ``verilog`` but not defined there."""
    used = {m.group(1) for m in _INSTANTIATION.finditer(verilog)} - _VERILOG_WORDS
    return sorted(used - set(_DEFINITION.findall(verilog)))


def iter_instances(module: object) -> Iterator[object]:
    """Every Migen ``Instance`` of a finalised Migen/LiteX ``module`` (submodules included)."""
    from migen.fhdl.specials import Instance

    for special in module._fragment.specials:  # after finalize(): submodules merged in
        if isinstance(special, Instance):
            yield special


def instance_stub(instance: object) -> str:
    """A ``(* blackbox *)`` module with the ports and parameters one Migen ``Instance`` uses."""
    from migen.fhdl.specials import Instance

    ports, params = [], []
    for item in instance.items:
        if isinstance(item, Instance.Parameter):
            params.append(f"  parameter {item.name} = 0;")
        elif isinstance(item, (Instance.Input, Instance.Output, Instance.InOut)):
            direction = {Instance.Input: "input", Instance.Output: "output",
                         Instance.InOut: "inout"}[type(item)]
            width = len(item.expr)
            ports.append((item.name, direction, width))
    return _module_text(instance.of, ports, params)


def primitive_stubs(names: Iterable[str], *, workdir: Path) -> dict[str, str]:
    """Stubs for Xilinx primitives from Yosys' cell library; names it does not know are left out."""
    names = sorted(names)
    if not names:
        return {}
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "xilinx_cells.json"
    selection = " ".join(f"={name}" for name in names)
    script = ("read_verilog -lib -specify +/xilinx/cells_sim.v; "
              "read_verilog -lib +/xilinx/cells_xtra.v; "
              f"select -none; select -add {selection}; "
              # Library cells are marked as boxes, which the JSON backend skips: unmark them.
              "setattr -mod -unset blackbox; setattr -mod -unset whitebox; "
              "setattr -mod -unset lib_whitebox; proc; "
              f"write_json -selected {out.name}")
    yosys = find_tool("YOSYS")
    proc = subprocess.run([yosys, "-q", "-p", script], cwd=workdir, capture_output=True,
                          text=True)
    if proc.returncode != 0 or not out.exists():
        raise BuildError(f"yosys could not describe Xilinx cells {names}: "
                         f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    modules = json.loads(out.read_text())["modules"]
    stubs = {}
    for name, module in modules.items():
        ports = [(port, info["direction"], len(info["bits"]))
                 for port, info in module["ports"].items()]
        params = [f"  parameter {p} = 0;" for p in module.get("parameter_default_values", {})]
        stubs[name] = _module_text(name, ports, params)
    return stubs


def _module_text(name: str, ports: list[tuple[str, str, int]], params: list[str]) -> str:
    lines = ["(* blackbox *)", f"module {name} ("]
    lines.append(",\n".join(f"  {direction} wire {_range(width)}{port}"
                            for port, direction, width in ports))
    lines.append(");")
    lines += params
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


def _range(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


def write_blackbox_stubs(design: object, verilog: Path, out: Path,
                         sources: Iterable[Path] = ()) -> list[str]:
    """Write stubs for every module ``verilog`` instantiates but neither it nor ``sources`` (the
    design's other Verilog files, e.g. its CPU) define.

    Instances of ``design`` (the LiteX SoC that produced ``verilog``) describe IP cores; Yosys'
    Xilinx library describes primitives. Raises :class:`BuildError` for a module neither knows.
    Returns the stubbed module names.
    """
    missing = undefined_modules(Path(verilog).read_text())
    for source in sources:
        defined = set(_DEFINITION.findall(Path(source).read_text()))
        missing = [name for name in missing if name not in defined]
    from_instances = {}
    for instance in iter_instances(design):
        if instance.of in missing and instance.of not in from_instances:
            from_instances[instance.of] = instance_stub(instance)
    with tempfile.TemporaryDirectory(dir=out.parent) as scratch:
        primitives = primitive_stubs(set(missing) - set(from_instances), workdir=Path(scratch))
    stubs = {**primitives, **from_instances}
    unknown = sorted(set(missing) - set(stubs))
    if unknown:
        raise BuildError(f"no description for modules {', '.join(unknown)} in {verilog}")
    header = (f"// Black-box stubs for Verilator lint of {Path(verilog).name}; generated by "
              "busprobe.bitstream.xilinx_stubs (ports from Yosys' Xilinx cell library and from "
              "the design's Instances).\n`timescale 1ns/1ps\n")
    out.write_text(header + "\n".join(stubs[name] for name in sorted(stubs)))
    return sorted(stubs)


@dataclass(frozen=True)
class LintReport:
    """Verilator's lint messages, split into findings and LiteX style noise.

    Attributes
    ----------
    findings : list of str
        Errors, warnings outside :data:`LITEX_STYLE_WARNINGS`, and warnings on instance ports.
    style_warnings : int
        How many LiteX style warnings were set aside.
    seconds : float
    """

    findings: list[str]
    style_warnings: int
    seconds: float

    @property
    def clean(self) -> bool:
        return not self.findings


def verilator_lint(sources: Iterable[Path], top: str) -> LintReport:
    """``verilator --lint-only`` on ``sources`` with ``top`` as top module."""
    from ..toolchain import apply_verilator_env

    apply_verilator_env()
    argv = ["verilator", "--lint-only", "-Wno-fatal", "--top-module", top,
            *(str(s) for s in sources)]
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.monotonic() - start
    findings, style = [], 0
    for kind, code, text in _MESSAGE.findall(proc.stdout + proc.stderr):
        if kind == "Warning" and code in LITEX_STYLE_WARNINGS and "PIN" not in text:
            style += 1
        elif code == "UNOPTFLAT" and text.endswith(_FALSE_LOOPS):
            style += 1
        else:
            findings.append(f"%{kind}{'-' + code if code else ''}: {text}")
    if proc.returncode != 0 and not findings:
        findings.append(f"verilator exited with status {proc.returncode}")
    return LintReport(findings=findings, style_warnings=style, seconds=round(seconds, 1))
