"""Received symbols, several a clock, put into words whose every ordered set and packet starts
at symbol 0: the receive end of the link at four symbols a clock (DESIGN §3.10, "Four symbols a
clock, and Gen2").

Everything a PCIe Gen1/Gen2 transmitter sends is a whole number of four-symbol words: a TLP
(STP, sequence, whole DWs, LCRC, END) is 4k + 8 symbols, a DLLP 8, a TS 16, an EIOS, FTS set
or SKP set as sent 4. A receiver cannot count on where the first starts: on a x1 link a packet
may start at any symbol time (PCIe Base 3.0 §4.2.2), logical idle may run for any number of
symbols, and clock compensation leaves a SKP ordered set 2 to 6 symbols long. Behind this
block, every COM, STP and SDP is in lane 0 of its word, so the blocks above it see each
structure at a fixed place.
"""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_symbols import LOGICAL_IDLE, KCode

from .symbol_stream import RX_SYMBOL, rx_word_stream

__all__ = ["ReceiveAligner", "START_SYMBOLS"]

#: The symbols that start a structure: ordered sets (COM), TLPs (STP), DLLPs (SDP).
START_SYMBOLS = (KCode.COM, KCode.STP, KCode.SDP)


class ReceiveAligner(wiring.Component):
    """Takes SKP ordered sets out and starts every other structure in lane 0.

    A SKP (K28.0) and a COM directly before one are dropped: what is left of a SKP ordered
    set after clock compensation, wherever it falls in the words. Every other symbol is kept
    in order, packed into words of ``width`` symbols, with one rule: a start symbol (COM, STP,
    SDP) begins a new output word, so the symbols collected since the last word edge before it
    are dropped. From a link that sends what the specification allows, those are logical idle
    (D0.0, which carries nothing): once one structure is in lane 0, the next ones are too,
    unless idle symbols that are not a multiple of ``width`` come between, and those are what
    goes. Anything else dropped this way (a structure ended off a word edge: a received error
    corrupted it) is counted in ``realigned``; the packet it belonged to fails its LCRC or
    framing above, as any corrupted packet does.

    Latency: a word is looked at when the next arrives (a COM in the last lane needs the next
    word's first symbol to tell a SKP set), so the output runs one input word behind and then
    a clock; at most one word leaves a clock, so the output never outruns the input.

    Attributes
    ----------
    sink: rx_word_stream(width), input
        Received, descrambled words, lane 0 first (never stalled; ``valid`` per word).
    source: rx_word_stream(width), output
        Whole words, every start symbol in lane 0 (never stalled).
    skp_removed: Signal(), output
        Strobe: a word held one or more SKP symbols that were dropped.
    realigned: Signal(16), output
        Symbols dropped to put a start symbol in lane 0 from runs that were not all logical
        idle (wraps).

    Parameters
    ----------
    width: int
        Symbols a word (2 or 4).
    """

    def __init__(self, width: int = 4):
        if width not in (2, 4):
            raise ValueError(f"a word is 2 or 4 symbols, not {width}")
        self._width = width
        super().__init__({
            "sink": In(rx_word_stream(width)),
            "source": Out(rx_word_stream(width)),
            "skp_removed": Out(1),
            "realigned": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        width = self._width
        slots = 2 * width - 1  # what is left of a word, then a whole word

        # The word waiting for its successor, so the last lane can see what follows it.
        held = Signal.like(self.sink.p)
        held_valid = Signal()
        incoming = self.sink.p

        # What is left of the last output word: ``width - 1`` symbols at most.
        partial = [Signal(RX_SYMBOL, name=f"partial{i}") for i in range(width - 1)]
        count = Signal(range(width))
        # Whether what is collected since the last word edge is all logical idle.
        partial_idle = Signal(init=1)

        def is_(symbol, value):
            return (symbol.symbol == value) & ~symbol.error

        lanes = [held[i] for i in range(width)]
        following = [*lanes[1:], incoming[0]]
        keep = [~is_(s, KCode.SKP) & ~(is_(s, KCode.COM) & is_(n, KCode.SKP))
                for s, n in zip(lanes, following, strict=True)]

        # Place the kept symbols of ``held`` after ``partial``; a start symbol first drops what
        # lies beyond the last word edge. The loop unrolls lane by lane into muxes; each lane's
        # results are signals of their own, so no expression is copied into the next lane's.
        def lane_signal(shape, name, value):
            signal = Signal(shape, name=name)
            m.d.comb += signal.eq(value)
            return signal

        buffer = [*partial, *([Const(0, RX_SYMBOL.size)] * (slots - (width - 1)))]
        filled = lane_signal(range(slots + 1), "filled_in", count)
        idle = partial_idle
        dropped = Const(0, range(2 * width))
        for lane, (symbol, kept) in enumerate(zip(lanes, keep, strict=True)):
            start = Cat(is_(symbol, value) for value in START_SYMBOLS).any()
            restart = lane_signal(1, f"restart{lane}", kept & start)
            beyond = Mux(filled >= width, filled - width, filled)
            at_edge = Mux(filled >= width, width, 0)
            dropped = lane_signal(range(2 * width), f"dropped{lane}",
                                  dropped + Mux(restart & ~idle, beyond, 0))
            filled_here = lane_signal(range(slots + 1), f"filled_at{lane}",
                                      Mux(restart, at_edge, filled))
            idle_here = Mux(restart, 1, idle)
            buffer = [lane_signal(RX_SYMBOL.size, f"slot{j}_after{lane}",
                                  Mux(kept & (filled_here == j), symbol.as_value(), slot))
                      for j, slot in enumerate(buffer)]
            filled = lane_signal(range(slots + 1), f"filled{lane}",
                                 Mux(kept, filled_here + 1, filled_here))
            # The idle flag follows the symbols beyond the last edge: reset when one is crossed.
            crossed = kept & (filled_here + 1 == width)
            symbol_idle = (symbol.symbol == LOGICAL_IDLE) & ~symbol.error
            idle = lane_signal(1, f"idle{lane}",
                               Mux(crossed, 1, Mux(kept, idle_here & symbol_idle, idle_here)))

        word_out = Signal()
        with m.If(self.sink.valid):
            m.d.sync += [held.eq(incoming), held_valid.eq(1)]
            with m.If(held_valid):
                m.d.comb += [self.skp_removed.eq(Cat(~k for k in keep).any()),
                             word_out.eq(filled >= width)]
                m.d.sync += self.realigned.eq(self.realigned + dropped)
                for j, slot in enumerate(partial):
                    m.d.sync += slot.eq(Mux(filled >= width, buffer[width + j], buffer[j]))
                m.d.sync += [count.eq(Mux(filled >= width, filled - width, filled)),
                             partial_idle.eq(idle)]
        m.d.sync += self.source.valid.eq(word_out)
        with m.If(word_out):
            m.d.sync += self.source.p.eq(Cat(*buffer[:width]))
        return m
