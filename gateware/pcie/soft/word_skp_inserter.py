"""SKP ordered sets into the transmitted words, for the link partner's clock compensation."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_symbols import SKP_INTERVAL_MAX, SKP_INTERVAL_MIN, SKP_ORDERED_SET

from .symbol_stream import LANES, tx_word_stream

__all__ = ["WordSkpInserter", "DEFAULT_SKP_INTERVAL"]

#: Symbol times between scheduled SKP ordered sets: inside 1180..1538 with room for a clock
#: a little slow or fast.
DEFAULT_SKP_INTERVAL = 1200


class WordSkpInserter(wiring.Component):
    """Schedules a SKP ordered set every ``interval`` symbol times and sends it between packets,
    four symbols a word.

    The SKP ordered set as sent (COM SKP SKP SKP) is one word. It may only follow a word marked
    ``end`` (one ending a packet or an ordered set, or logical idle; every structure is whole
    words, so that is every boundary), §4.2.7.3; one scheduled while a TLP is on the wire waits
    for its END, and if more than one is owed by then all go out back to back. ``sink`` is held
    (not ready) while a SKP ordered set goes out. Symbol times are counted four a word sent
    (``source.valid`` and ``ready``), not a clock, so a SerDes that takes a word only on some
    clocks keeps the interval.

    Attributes
    ----------
    sink: tx_word_stream(), input
        What the transmitter sends; valid every clock.
    source: tx_word_stream(), output
        To the SerDes: ``sink`` with SKP ordered sets.
    enable: Signal(), input
        Schedule SKP ordered sets (low in Detect and electrical idle; the owed count is cleared).
    inserted: Signal(), output
        Strobe: a SKP ordered set went out.

    Parameters
    ----------
    interval: int
        Symbol times between scheduled SKP ordered sets (1180..1538), a whole number of words:
        a set starts only at a word's lane 0, so on an idle link the sets are a multiple of four
        symbol times apart and any other interval could not be kept.
    """

    sink: In(tx_word_stream())
    source: Out(tx_word_stream())
    enable: In(1)
    inserted: Out(1)

    def __init__(self, *, interval: int = DEFAULT_SKP_INTERVAL):
        if not SKP_INTERVAL_MIN <= interval <= SKP_INTERVAL_MAX:
            raise ValueError(f"SKP interval {interval} is outside "
                             f"{SKP_INTERVAL_MIN}..{SKP_INTERVAL_MAX} symbol times (§4.2.7.3)")
        if interval % LANES:
            raise ValueError(f"SKP interval {interval} is not a whole number of {LANES}-symbol "
                             f"words")
        self._words = interval // LANES
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self._words))  # words sent since the last set was scheduled
        owed = Signal(3)
        at_boundary = Signal(init=1)  # the last word sent may be followed by a SKP set
        schedule = Signal()
        sent = self.source.valid & self.source.ready

        with m.If(~self.enable):
            m.d.sync += [timer.eq(0), owed.eq(0)]
        with m.Elif(sent):
            with m.If(timer == self._words - 1):
                m.d.sync += timer.eq(0)
                m.d.comb += schedule.eq(1)
            with m.Else():
                m.d.sync += timer.eq(timer + 1)

        with m.If(at_boundary & (owed != 0)):
            # A set ends an ordered set, so another owed one may follow it at once.
            m.d.comb += [self.source.valid.eq(1), self.source.p.end.eq(1),
                         self.inserted.eq(self.source.ready)]
            m.d.comb += [self.source.p.symbols[lane].eq(symbol)
                         for lane, symbol in enumerate(SKP_ORDERED_SET)]
        with m.Else():
            m.d.comb += [self.source.valid.eq(self.sink.valid),
                         self.source.p.eq(self.sink.p),
                         self.sink.ready.eq(self.source.ready)]
            with m.If(self.sink.valid & self.source.ready):
                m.d.sync += at_boundary.eq(self.sink.p.end)

        with m.If(self.enable):
            m.d.sync += owed.eq(owed + schedule - self.inserted)
            with m.If((owed == 7) & schedule & ~self.inserted):  # saturate, never wrap
                m.d.sync += owed.eq(7)
        return m
