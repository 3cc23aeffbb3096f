"""Several busprobe PCIe cores in one Verilator model: the top of ``sim:pcie?endpoints=N``.

The wrapper instantiates the single-core top (:data:`~busprobe.sim.pcie.testbench.TOPLEVEL`)
``N`` times on one ``sys_clk``/``sys_rst``; core ``i``'s other ports (PHY, console) appear as
``ep<i>_<port>``, so each gets its own cocotbext-pcie endpoint model (prefix
:func:`port_prefix`) behind one switch
(:class:`SwitchedBench`).
The port list is read from the generated core, so a pad added there needs no change here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from busprobe.gateware.pcie.sim_top import TOPLEVEL

if TYPE_CHECKING:
    from .testbench import LinkConfig

__all__ = ["MULTI_TOPLEVEL", "write_multi_top", "build_multi_simulator", "MAX_ENDPOINTS",
           "port_prefix", "SwitchedBench"]

MULTI_TOPLEVEL = "busprobe_pcie_multi"
#: Endpoints one simulation hosts at most: each is a whole core; the switch has room for 31.
MAX_ENDPOINTS = 4
_PORT = re.compile(r"^\s*(input|output)\s+wire\s*(\[[^\]]+\])?\s*(\w+)\s*,?\s*$", re.MULTILINE)
_SHARED = ("sys_clk", "sys_rst")


def write_multi_top(core: Path, endpoints: int, out_dir: Path) -> Path:
    """Write the wrapper of ``endpoints`` instances of the core in ``core`` (its Verilog)."""
    text = core.read_text()
    header = text[text.index(f"module {TOPLEVEL}"):text.index(");")]
    ports = [p for p in _PORT.findall(header) if p[2] not in _SHARED]
    if not any(name.startswith("pcie_sim_") for _, _, name in ports):
        raise RuntimeError(f"no pcie_sim_* ports found in {core}")
    decls = ["    input  wire sys_clk", "    input  wire sys_rst"]
    body = []
    for i in range(endpoints):
        conns = [".sys_clk(sys_clk)", ".sys_rst(sys_rst)"]
        for direction, width, name in ports:
            outer = f"ep{i}_{name}"
            decls.append(f"    {direction} wire {width} {outer}".rstrip())
            conns.append(f".{name}({outer})")
        body.append(f"    {TOPLEVEL} core{i} (\n        " + ",\n        ".join(conns)
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

    sources = build_pcie_simulator_sources()  # the core's top first, then the CPU's
    out = build_root() / "pcie-verilog"
    top = write_multi_top(sources[0], endpoints, out)
    return build_verilator_model(f"pcie-x{endpoints}", [*sources, top], MULTI_TOPLEVEL,
                                 timescale=TIMESCALE, public_ports_only=True)


def port_prefix(index: int) -> str:
    """The prefix of core ``index``'s ports on the multi top ."""
    return f"ep{index}_"


class SwitchedBench:
    """Several busprobe cores (the multi top), each behind its own
    simulated link to a downstream port of one cocotbext-pcie :class:`Switch`, whose upstream
    port connects to the one root complex; the root's ``cap`` is then what they share (the
    switch-to-root link itself is untimed).

    Parameters
    ----------
    dut
        The cocotb handle of :data:`MULTI_TOPLEVEL`.
    config : LinkConfig
        Every endpoint's link, and the root's cap and latency.
    endpoints : int
        How many cores the top has.

    Attributes
    ----------
    benches : list of PcieTestbench
        One per endpoint, sharing ``rc``.
    """

    def __init__(self, dut, config: LinkConfig, endpoints: int) -> None:
        from cocotbext.pcie.core import Switch

        from .testbench import PcieTestbench, _root_complex

        self.dut = dut
        self.rc = _root_complex(config)
        self.switch = Switch()
        self.rc.make_port().connect(self.switch)
        self.benches = [PcieTestbench(dut, config, prefix=port_prefix(i), rc=self.rc,
                                      port=self.switch.make_port()) for i in range(endpoints)]

    async def start(self) -> None:
        from .testbench import _reset

        await _reset(self.dut)
        for bench in self.benches:
            await bench.train_link()
        await self.rc.enumerate()
        for bench in self.benches:
            await bench.bring_up()
