"""Runs the symbol-level root port against the PHY's SerDes side: two scrambled symbols a clock."""

from __future__ import annotations

from collections.abc import Callable

from amaranth.sim import Simulator
from busprobe.gateware.pcie.soft.symbol_crossing import SymbolCrossing

from .amaranth_bench import SYMBOL_PERIOD
from .partner import RootPortPartner

__all__ = ["WordExchange", "simulate_with_serdes", "SERDES_PERIOD", "SERDES_PHASE",
           "WORD_PERIOD"]

#: The DCU's fabric clock at 2.5 GT/s with 1:2 gearing: two symbol times.
SERDES_PERIOD = 2 * SYMBOL_PERIOD
#: The four-symbol link's clock at Gen1: a word (four symbol times) a clock.
WORD_PERIOD = 4 * SYMBOL_PERIOD
#: Its edges fall between the link clock's (the two come from one reference through different
#: PLLs: same rate, unknown phase), so no test depends on the two sharing an edge.
SERDES_PHASE = 1.3e-9


class WordExchange:
    """Clocks a :class:`RootPortPartner` against a :class:`SymbolCrossing`'s SerDes side.

    Every ``pclk`` cycle the partner takes the two symbols the crossing sends (``None`` for a
    word in electrical idle) and gives two back, which the crossing receives as one DCU word;
    with the partner ``scrambled`` that is what a root port and the DCU exchange. A word with
    either symbol ``None`` is delivered as the DCU delivers a receiver in electrical idle:
    not valid, and the link's ``rx_electrical_idle`` set.

    Parameters
    ----------
    link: the endpoint's link (its ``rx_electrical_idle`` and ``receiver_detected`` are set).
    crossing: the crossing between the link and the wire.
    partner: the root port.
    record: keep every symbol the endpoint sent, as it was on the wire, in :attr:`wire`.
    """

    def __init__(self, link, crossing: SymbolCrossing, partner: RootPortPartner, *,
                 record: bool = False):
        self.link, self.crossing, self.partner = link, crossing, partner
        self.wire: list[int] | None = [] if record else None
        self._back: list[int | None] | None = None

    async def run(self, ctx, *, cycles: int, until: Callable[[], bool] | None = None,
                  each: Callable[[int], None] | None = None,
                  receiver_detected: bool = True) -> int:
        """Clock ``cycles`` SerDes cycles (two symbol times each) or until ``until()``;
        ``each(cycle)`` runs before every edge. Returns the cycles run."""
        link, crossing, partner = self.link, self.crossing, self.partner
        ctx.set(link.receiver_detected, receiver_detected)
        if self._back is None:
            self._back = [partner.step(None), partner.step(None)]
        for cycle in range(cycles):
            idle = None in self._back
            ctx.set(link.rx_electrical_idle, idle)
            ctx.set(crossing.serdes_rx_valid, not idle)
            if not idle:
                first, second = self._back
                ctx.set(crossing.serdes_rx_data, (first & 0xFF) | (second & 0xFF) << 8)
                ctx.set(crossing.serdes_rx_datak, first >> 8 | (second >> 8) << 1)
            if each is not None:
                each(cycle)
            _, _, data, datak, tx_idle = await ctx.tick("pclk").sample(
                crossing.serdes_tx_data, crossing.serdes_tx_datak, crossing.serdes_tx_idle)
            sent = [None, None] if tx_idle else [
                (data & 0xFF) | (datak & 1) << 8, (data >> 8) | (datak >> 1) << 8]
            if self.wire is not None and not tx_idle:
                self.wire.extend(sent)
            self._back = [partner.step(sent[0]), partner.step(sent[1])]
            if until is not None and until():
                return cycle + 1
        return cycles


def simulate_with_serdes(dut, main, *background, link_period: float = SYMBOL_PERIOD) -> None:
    """Run ``main(ctx)`` (and ``background`` ones) on ``dut`` with the link's ``sync`` clock at
    ``link_period`` (:data:`SYMBOL_PERIOD`, or :data:`WORD_PERIOD` for the four-symbol link)
    and the SerDes' ``pclk`` at :data:`SERDES_PERIOD`."""
    sim = Simulator(dut)
    sim.add_clock(link_period)
    sim.add_clock(SERDES_PERIOD, phase=SERDES_PHASE, domain="pclk")
    sim.add_testbench(main)
    for testbench in background:
        sim.add_testbench(testbench, background=True)
    sim.run()
