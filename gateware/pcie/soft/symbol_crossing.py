"""Between the soft link's streams (one symbol a clock) and the DCU's 16-bit interface (two symbols
a 125 MHz clock): gearbox, clock-domain crossing and the scrambler.

The DCU at 2.5 GT/s with its 1:2 gearing moves two symbols per 125 MHz clock (its ``pclk``). The
soft link (:class:`~.soft_link.SoftLink`) takes and gives one symbol a clock, so at line rate its
clock is 250 MHz; the two clocks come from one reference but the phase between the DCU's and a
fabric PLL's outputs is unknown, so the symbols cross in asynchronous FIFOs of two-symbol words,
and the one-to-two gearboxes are at the link's end of each FIFO. Everything that works on the
symbols' values (the scrambler, the decode-error flags) is on the DCU's side, at 125 MHz, two
symbols a clock: what a two-symbol link would connect to directly, without the gearboxes.

No symbol is moved between the halves of a word: a COM may arrive in either half, and stays
there (the descrambler resets at whichever it is in, and the gearbox hands half 0 out before
half 1), because on a x1 link an ordered set or a packet may start at any symbol time, so
forcing a COM into half 0 would have to drop or repeat a symbol each time the phase changes.
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import AsyncFIFO
from amaranth.lib.wiring import In, Out

from .scrambler import Scrambler
from .symbol_stream import rx_symbol_stream, tx_symbol_stream

__all__ = ["SymbolCrossing", "DECODE_ERROR"]

#: What the DCU's 8b/10b decoder hands up for a code or disparity error: EEh with the K flag
#: (K14.7 is not a symbol of the code, so it cannot be a real one).
DECODE_ERROR = 0x1EE


class SymbolCrossing(wiring.Component):
    """One symbol a clock in the link's domain, two a clock in the SerDes' domain.

    Transmit: the link's symbols are paired (the first held in a register) and written with an
    electrical-idle bit (either symbol's) into a FIFO of words; the SerDes side starts reading
    once the FIFO holds ``prime`` words and then reads one every clock, scrambles it and
    registers it for the DCU. Its ``tx_idle`` is set for a word sent in electrical idle and
    whenever there is no word (before the FIFO is primed, or after it ran empty, which is
    counted: with both clocks from one reference it does not happen once primed). The link is
    held (``tx.ready`` low) only if the FIFO is full.

    Receive: every word the DCU marks valid has its decode errors flagged (:data:`DECODE_ERROR`
    in either half), is descrambled and written into the other FIFO (a full FIFO drops the word
    and counts it); the link side takes a word every other clock and hands out half 0, then
    half 1. With nothing to read, ``rx.valid`` is low for a clock, which the link takes as it
    takes a SKP set removed.

    Attributes
    ----------
    tx: tx_symbol_stream(), input; tx_electrical_idle: Signal(), input
        From :class:`~.soft_link.SoftLink` (link domain).
    rx: rx_symbol_stream(), output
        To :class:`~.soft_link.SoftLink` (link domain).
    serdes_tx_data: Signal(16), serdes_tx_datak: Signal(2), serdes_tx_idle: Signal(), output
        To the DCU (SerDes domain), symbol 0 in bits 7:0, from registers.
    serdes_rx_data: Signal(16), serdes_rx_datak: Signal(2), serdes_rx_valid: Signal(), input
        From the DCU (SerDes domain); ``serdes_rx_valid`` low while its receiver has no lock.
    tx_underflows, rx_overflows: Signal(8), output
        Words the transmit FIFO did not have in time, received words it had no room for (SerDes
        domain, wrapping).

    Parameters
    ----------
    domain: str
        The link's domain (one symbol a clock).
    serdes_domain: str
        The DCU's fabric clock (two symbols a clock).
    depth, prime: int
        Words per FIFO, and the transmit fill at which the SerDes side starts reading.
    """

    tx: In(tx_symbol_stream())
    tx_electrical_idle: In(1)
    rx: Out(rx_symbol_stream())
    serdes_tx_data: Out(16)
    serdes_tx_datak: Out(2)
    serdes_tx_idle: Out(1)
    serdes_rx_data: In(16)
    serdes_rx_datak: In(2)
    serdes_rx_valid: In(1)
    tx_underflows: Out(8)
    rx_overflows: Out(8)

    def __init__(self, *, domain: str = "sync", serdes_domain: str = "pclk", depth: int = 8,
                 prime: int = 4):
        if not 0 < prime < depth:
            raise ValueError(f"prime must be inside 1..{depth - 1}, not {prime}")
        self._domain, self._serdes_domain = domain, serdes_domain
        self._depth, self._prime = depth, prime
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        self._transmit(m)
        self._receive(m)
        return m

    def _transmit(self, m):
        link, serdes = m.d[self._domain], m.d[self._serdes_domain]
        m.submodules.tx_fifo = fifo = AsyncFIFO(width=2 * 9 + 1, depth=self._depth,
                                                w_domain=self._domain,
                                                r_domain=self._serdes_domain)
        # Link side: symbol 0 waits in a register for symbol 1.
        first, first_idle, second = Signal(9), Signal(), Signal()
        m.d.comb += self.tx.ready.eq(~second | fifo.w_rdy)
        with m.If(self.tx.valid & self.tx.ready):
            with m.If(~second):
                link += [first.eq(self.tx.p.symbol), first_idle.eq(self.tx_electrical_idle),
                         second.eq(1)]
            with m.Else():
                m.d.comb += [fifo.w_en.eq(1),
                             fifo.w_data.eq(Cat(first, self.tx.p.symbol,
                                                first_idle | self.tx_electrical_idle))]
                link += second.eq(0)

        # SerDes side: a word every clock once primed, scrambled on its way out.
        m.submodules.scrambler = scrambler = Scrambler(width=2, extra=1,
                                                       domain=self._serdes_domain)
        running = Signal()
        with m.If(~running):
            serdes += running.eq(fifo.r_level >= self._prime)
        with m.Else():
            m.d.comb += fifo.r_en.eq(1)
            with m.If(~fifo.r_rdy):
                serdes += [running.eq(0), self.tx_underflows.eq(self.tx_underflows + 1)]
        m.d.comb += [
            scrambler.sink.valid.eq(running & fifo.r_rdy),
            scrambler.sink.p.symbols[0].eq(fifo.r_data[:9]),
            scrambler.sink.p.symbols[1].eq(fifo.r_data[9:18]),
            scrambler.sink.p.extra.eq(fifo.r_data[18]),
        ]
        out = scrambler.source
        m.d.comb += [
            self.serdes_tx_data.eq(Cat(out.p.symbols[0][:8], out.p.symbols[1][:8])),
            self.serdes_tx_datak.eq(Cat(out.p.symbols[0][8], out.p.symbols[1][8])),
            self.serdes_tx_idle.eq(~out.valid | out.p.extra),
        ]

    def _receive(self, m):
        link, serdes = m.d[self._domain], m.d[self._serdes_domain]
        # SerDes side: decode errors flagged, descrambled, written.
        m.submodules.descrambler = descrambler = Scrambler(width=2, extra=2,
                                                           domain=self._serdes_domain)
        symbols = [Cat(self.serdes_rx_data[8 * i:8 * i + 8], self.serdes_rx_datak[i])
                   for i in range(2)]
        m.d.comb += [
            descrambler.sink.valid.eq(self.serdes_rx_valid),
            descrambler.sink.p.symbols[0].eq(symbols[0]),
            descrambler.sink.p.symbols[1].eq(symbols[1]),
            descrambler.sink.p.extra.eq(Cat(symbol == DECODE_ERROR for symbol in symbols)),
        ]
        m.submodules.rx_fifo = fifo = AsyncFIFO(width=2 * 9 + 2, depth=self._depth,
                                                w_domain=self._serdes_domain,
                                                r_domain=self._domain)
        word = descrambler.source
        m.d.comb += [fifo.w_en.eq(word.valid),
                     fifo.w_data.eq(Cat(word.p.symbols[0], word.p.symbols[1], word.p.extra))]
        with m.If(word.valid & ~fifo.w_rdy):
            serdes += self.rx_overflows.eq(self.rx_overflows + 1)

        # Link side: half 0 from the FIFO, half 1 from a register a clock later.
        held, second = Signal(10), Signal()
        with m.If(second):
            link += [self.rx.valid.eq(1), self.rx.p.symbol.eq(held[:9]),
                     self.rx.p.error.eq(held[9]), second.eq(0)]
        with m.Elif(fifo.r_rdy):
            m.d.comb += fifo.r_en.eq(1)
            link += [self.rx.valid.eq(1), self.rx.p.symbol.eq(fifo.r_data[:9]),
                     self.rx.p.error.eq(fifo.r_data[18]),
                     held.eq(Cat(fifo.r_data[9:18], fifo.r_data[19])), second.eq(1)]
        with m.Else():
            link += self.rx.valid.eq(0)
