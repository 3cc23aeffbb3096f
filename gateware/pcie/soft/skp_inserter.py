"""SKP ordered sets into the transmitted symbols, for the link partner's clock compensation."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_symbols import SKP_INTERVAL_MAX, SKP_INTERVAL_MIN, KCode

from .symbol_stream import tx_symbol_stream

__all__ = ["SkpInserter", "DEFAULT_SKP_INTERVAL"]

#: Symbol times between scheduled SKP ordered sets: inside 1180..1538 with room for a clock
#: a little slow or fast.
DEFAULT_SKP_INTERVAL = 1200


class SkpInserter(wiring.Component):
    """Schedules a SKP ordered set every ``interval`` symbol times and sends it between packets.

    A SKP ordered set (COM SKP SKP SKP) may only follow a symbol marked ``end`` (the last of a
    packet or ordered set, or an idle symbol), §4.2.7.3; one scheduled while a TLP is on the
    wire waits for its END, and if more than one is owed by then all go out back to back.
    ``sink`` is held (not ready) while a SKP ordered set goes out.

    Attributes
    ----------
    sink: tx_symbol_stream(), input
        What the transmitter sends; valid every clock.
    source: tx_symbol_stream(), output
        To the SerDes: ``sink`` with SKP ordered sets.
    enable: Signal(), input
        Schedule SKP ordered sets (low in Detect and electrical idle; the owed count is cleared).
    inserted: Signal(), output
        Strobe: a SKP ordered set started.

    Parameters
    ----------
    interval: int
        Symbol times between scheduled SKP ordered sets (1180..1538).
    """

    sink: In(tx_symbol_stream())
    source: Out(tx_symbol_stream())
    enable: In(1)
    inserted: Out(1)

    def __init__(self, *, interval: int = DEFAULT_SKP_INTERVAL):
        if not SKP_INTERVAL_MIN <= interval <= SKP_INTERVAL_MAX:
            raise ValueError(f"SKP interval {interval} is outside "
                             f"{SKP_INTERVAL_MIN}..{SKP_INTERVAL_MAX} symbol times (§4.2.7.3)")
        self._interval = interval
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self._interval))
        owed = Signal(3)
        at_boundary = Signal(init=1)  # the last symbol sent may be followed by a SKP set
        index = Signal(2)
        sending = Signal()
        schedule = Signal()

        with m.If(~self.enable):
            m.d.sync += [timer.eq(0), owed.eq(0)]
        with m.Elif(timer == self._interval - 1):
            m.d.sync += timer.eq(0)
            m.d.comb += schedule.eq(1)
        with m.Else():
            m.d.sync += timer.eq(timer + 1)

        start = ~sending & at_boundary & (owed != 0)
        with m.If(start | sending):
            m.d.comb += [self.source.valid.eq(1),
                         self.source.p.symbol.eq(KCode.SKP),
                         self.source.p.end.eq(index == 3)]
            with m.If(index == 0):
                m.d.comb += self.source.p.symbol.eq(KCode.COM)
            with m.If(self.source.ready):
                m.d.sync += [index.eq(index + 1), sending.eq(index != 3)]
        with m.Else():
            m.d.comb += [self.source.valid.eq(self.sink.valid),
                         self.source.p.eq(self.sink.p),
                         self.sink.ready.eq(self.source.ready)]
            with m.If(self.sink.valid & self.source.ready):
                m.d.sync += at_boundary.eq(self.sink.p.end)

        m.d.comb += self.inserted.eq(start & self.source.ready)
        with m.If(self.enable):
            m.d.sync += owed.eq(owed + schedule - self.inserted)
            with m.If((owed == 7) & schedule & ~self.inserted):  # saturate, never wrap
                m.d.sync += owed.eq(7)
        return m
