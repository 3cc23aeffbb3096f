"""Runs a block between the link and the DCU in Amaranth's simulator, on both of their clocks."""

from __future__ import annotations

from amaranth.sim import Simulator

from .amaranth_bench import WORD_PERIOD

__all__ = ["simulate_with_serdes", "SERDES_PERIOD", "SERDES_PHASE"]

#: The DCU's fabric clock at 2.5 GT/s with 1:2 gearing: two symbol times, half a word's.
SERDES_PERIOD = WORD_PERIOD / 2
#: Its edges fall between the link clock's (the two come from one reference through different
#: PLLs: same rate, unknown phase), so no test depends on the two sharing an edge.
SERDES_PHASE = 1.3e-9


def simulate_with_serdes(dut, main, *background) -> None:
    """Run ``main(ctx)`` (and ``background`` ones) on ``dut`` with the link's ``sync`` clock at
    :data:`~.amaranth_bench.WORD_PERIOD` and the DCU's ``pclk`` at :data:`SERDES_PERIOD`."""
    sim = Simulator(dut)
    sim.add_clock(WORD_PERIOD)
    sim.add_clock(SERDES_PERIOD, phase=SERDES_PHASE, domain="pclk")
    sim.add_testbench(main)
    for testbench in background:
        sim.add_testbench(testbench, background=True)
    sim.run()
