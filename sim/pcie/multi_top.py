"""Several busprobe PCIe cores in one Verilator model: the top of ``sim:pcie?endpoints=N``.

The wrapper instantiates the single-core top (:data:`~busprobe.sim.pcie.testbench.TOPLEVEL`)
``N`` times on one ``sys_clk``/``sys_rst``; core ``i``'s PHY ports appear as
``ep<i>_pcie_sim_<pad>``, so each gets its own cocotbext-pcie endpoint model (prefix
:func:`~busprobe.sim.pcie.testbench.port_prefix`) behind one switch
(:class:`~busprobe.sim.pcie.testbench.SwitchedBench`).
The port list is read from the generated core, so a pad added there needs no change here.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["MULTI_TOPLEVEL", "write_multi_top", "build_multi_simulator", "MAX_ENDPOINTS"]

MULTI_TOPLEVEL = "busprobe_pcie_multi"
#: Endpoints one simulation hosts at most: each is a whole core; the switch has room for 31.
MAX_ENDPOINTS = 4
_PORT = re.compile(r"^\s*(input|output)\s+wire\s*(\[[^\]]+\])?\s*(pcie_sim_\w+)\s*,?\s*$",
                   re.MULTILINE)


def write_multi_top(core: Path, endpoints: int, out_dir: Path) -> Path:
    """Write the wrapper of ``endpoints`` instances of the core in ``core`` (its Verilog)."""
    ports = _PORT.findall(core.read_text())
    if not ports:
        raise RuntimeError(f"no pcie_sim_* ports found in {core}")
    decls = ["    input  wire sys_clk", "    input  wire sys_rst"]
    body = []
    for i in range(endpoints):
        conns = [".sys_clk(sys_clk)", ".sys_rst(sys_rst)"]
        for direction, width, name in ports:
            outer = f"ep{i}_{name}"
            decls.append(f"    {direction} wire {width} {outer}".rstrip())
            conns.append(f".{name}({outer})")
        body.append(f"    busprobe_pcie_sim core{i} (\n        " + ",\n        ".join(conns)
                    + "\n    );")
    text = (f"// {endpoints} busprobe PCIe cores on one clock (busprobe.sim.pcie.multi_top)\n"
            f"module {MULTI_TOPLEVEL} (\n" + ",\n".join(decls) + "\n);\n"
            + "\n".join(body) + "\nendmodule\n")
    path = Path(out_dir) / f"{MULTI_TOPLEVEL}_{endpoints}.v"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def build_multi_simulator(endpoints: int) -> Path:
    """Generate the core and the wrapper and build (or reuse) their Verilator model."""
    from busprobe.build_cache import build_root
    from busprobe.sim.verilator_build import build_verilator_model

    from .testbench import TIMESCALE, build_pcie_simulator_sources

    core = build_pcie_simulator_sources()
    out = build_root() / "pcie-verilog"
    top = write_multi_top(core, endpoints, out)
    return build_verilator_model(f"pcie-x{endpoints}", [core, top], MULTI_TOPLEVEL,
                                 timescale=TIMESCALE)
