"""SKP ordered sets out of the received symbols (what clock compensation left of them)."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_symbols import KCode

from .symbol_stream import RX_SYMBOL, rx_symbol_stream

__all__ = ["SkpRemover"]


class SkpRemover(wiring.Component):
    """Takes out every SKP ordered set: a COM followed by one or more SKP (1 to 5 on a link
    whose elastic buffers added or removed some, §4.2.7).

    A COM is held one clock to see whether a SKP follows, so the output is one symbol late;
    where a SKP ordered set was, ``source.valid`` is low.

    Attributes
    ----------
    sink: rx_symbol_stream(), input
    source: rx_symbol_stream(), output
    removed: Signal(), output
        Strobe: a SKP ordered set was taken out.
    """

    sink: In(rx_symbol_stream())
    source: Out(rx_symbol_stream())
    removed: Out(1)

    def elaborate(self, platform):
        m = Module()
        held = Signal(RX_SYMBOL)
        held_valid = Signal()
        skipping = Signal()
        incoming = self.sink.p
        is_skp = (incoming.symbol == KCode.SKP) & ~incoming.error
        held_com = held_valid & (held.symbol == KCode.COM) & ~held.error
        m.d.comb += self.source.p.eq(held)

        with m.If(self.sink.valid):
            with m.If(held_com & is_skp):
                m.d.sync += [held_valid.eq(0), skipping.eq(1)]
                m.d.comb += self.removed.eq(1)
            with m.Elif(skipping & is_skp):
                pass  # the rest of the SKP ordered set
            with m.Else():
                m.d.comb += self.source.valid.eq(held_valid)
                m.d.sync += [held.eq(incoming), held_valid.eq(1), skipping.eq(0)]
        with m.Elif(held_valid & ~held_com):  # nothing new: what is held cannot start a SKP set
            m.d.comb += self.source.valid.eq(1)
            m.d.sync += held_valid.eq(0)
        return m
