"""Several busprobe PCIe cores in one Verilator model: the top of ``sim:pcie?endpoints=N``.

The wrapper (:func:`busprobe.sim.pcie.bench_top.write_bench_top`) instantiates the generated
core (:data:`busprobe.gateware.pcie.sim_top.TOPLEVEL`) ``N`` times on one ``sys_clk``/``sys_rst``,
each with its TLP streams on a bridge; core ``i``'s other ports (PHY, console) and its bridge's
appear as ``ep<i>_<port>``, so each gets its own cocotbext-pcie endpoint model (prefix
:func:`port_prefix`) behind one switch (:class:`SwitchedBench`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .testbench import LinkConfig

__all__ = ["MULTI_TOPLEVEL", "write_multi_top", "build_multi_simulator", "MAX_ENDPOINTS",
           "port_prefix", "SwitchedBench"]

MULTI_TOPLEVEL = "busprobe_pcie_multi"
#: Endpoints one simulation hosts at most: each is a whole core; the switch has room for 31.
MAX_ENDPOINTS = 4


def write_multi_top(core: Path, endpoints: int, out_dir: Path) -> Path:
    """Write the wrapper of ``endpoints`` instances of the core in ``core`` (its Verilog), each
    on its TLP bridge (:func:`~.bench_top.write_bench_top`)."""
    from .bench_top import write_bench_top

    return write_bench_top(core, endpoints, out_dir, MULTI_TOPLEVEL,
                           [port_prefix(i) for i in range(endpoints)])


def build_multi_simulator(endpoints: int) -> Path:
    """Generate the core and the wrapper and build (or reuse) their Verilator model."""
    from busprobe.build_cache import build_root
    from busprobe.sim.verilator_build import build_verilator_model

    from .bench_top import BRIDGE_SOURCE
    from .testbench import TIMESCALE, build_pcie_simulator_sources

    sources = build_pcie_simulator_sources()  # the core's top first, then the CPU's
    top = write_multi_top(sources[0], endpoints, build_root() / "sim" / "tops")
    return build_verilator_model(f"pcie-x{endpoints}", [*sources, BRIDGE_SOURCE, top],
                                 MULTI_TOPLEVEL,
                                 timescale=TIMESCALE, public_ports_only=True)


def port_prefix(index: int) -> str:
    """The prefix of core ``index``'s ports on the multi top ."""
    return f"ep{index}_"


class SwitchedBench:
    """Several busprobe cores (the multi top), each behind its own
    simulated link to a downstream port of one cocotbext-pcie :class:`Switch`, whose upstream
    port connects to the one root complex; the root's ``cap`` is then what they share (the
    switch-to-root link itself is untimed, a :class:`~.handover.HandOverPort` pair: flow
    control without a data link layer).

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
        from .handover import connect_switch_to_root
        from .route_speed import DirectSwitch
        from .testbench import PcieTestbench, _root_complex
        from .upstream_speed import install

        install()  # before the root and switch are built (as PcieTestbench does)
        self.dut = dut
        self.rc = _root_complex(config)
        self.switch = DirectSwitch()  # upstream's Switch, routing without a task hop
        # The switch-to-root link is untimed: a hand-over, not a modelled SimPort pair (issue 30).
        connect_switch_to_root(self.switch, self.rc)
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
