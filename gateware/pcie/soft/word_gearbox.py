"""Between the link's four-symbol words and the DCU's 16-bit interface (two symbols a clock) at
Gen1, in the DCU's own 125 MHz clock: the scrambler and a two-to-one gearbox each way.

The four-symbol link (DESIGN §3.10, "Four symbols a clock, and Gen2") runs in the DCU's fabric
clock: at 2.5 GT/s the DCU moves two symbols a 125 MHz clock, so the link moves a word every
other clock and no second clock or clock-domain crossing is needed (the one-symbol link needs
a 250 MHz clock and :class:`~.symbol_crossing.SymbolCrossing`'s FIFOs). The scrambler works on
whole words on the link's side; the gearbox only moves symbols.
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .scrambler import Scrambler, scrambler_word
from .symbol_crossing import DECODE_ERROR
from .symbol_stream import LANES, rx_word_stream

__all__ = ["WordGearbox", "TX_WORD_WITH_IDLE"]

#: A word to send and whether the transmitter is in electrical idle for it (``extra``).
TX_WORD_WITH_IDLE = scrambler_word(LANES, 1)


class WordGearbox(wiring.Component):
    """Four-symbol words to and from the DCU's two-symbol interface, scrambled on the way.

    Transmit: a word is taken every other clock (``tx.ready`` on even clocks), held a clock,
    scrambled (a clock), and its two halves go to the DCU on the next two clocks, from
    registers. If the
    link has no word when one is due, the DCU is given electrical idle for it and the miss is
    counted (``tx_underflows``: the link's transmitter always has a word, so it does not
    happen).

    Receive: two symbols a clock from the DCU, decode errors flagged
    (:data:`~.symbol_crossing.DECODE_ERROR` in a half), are paired into a word (the first
    half held a clock) and descrambled; a clock without ``serdes_rx_valid`` (the DCU's
    receiver not locked) drops a held half, so the pairing starts again with the next valid
    one. Which received half starts a word is arbitrary:
    :class:`~.receive_aligner.ReceiveAligner` puts each structure in lane 0.

    Attributes
    ----------
    tx: stream of TX_WORD_WITH_IDLE, input
        Words to send, symbol 0 first on the wire.
    rx: rx_word_stream(), output
        Received words, descrambled, valid at most every other clock.
    serdes_tx_data: Signal(16), serdes_tx_datak: Signal(2), serdes_tx_idle: Signal(), output
    serdes_rx_data: Signal(16), serdes_rx_datak: Signal(2), serdes_rx_valid: Signal(), input
        The DCU's interface, symbol 0 in bits 7:0 (as :class:`~.symbol_crossing.SymbolCrossing`).
    tx_underflows: Signal(8), output
        Words the link did not have when the DCU needed one (wraps).
    """

    tx: In(stream.Signature(TX_WORD_WITH_IDLE))
    rx: Out(rx_word_stream())
    serdes_tx_data: Out(16)
    serdes_tx_datak: Out(2)
    serdes_tx_idle: Out(1)
    serdes_rx_data: In(16)
    serdes_rx_datak: In(2)
    serdes_rx_valid: In(1)
    tx_underflows: Out(8)

    def elaborate(self, platform):
        m = Module()
        self._transmit(m)
        self._receive(m)
        return m

    def _transmit(self, m):
        m.submodules.scrambler = scrambler = Scrambler(width=LANES, extra=1)
        taking = Signal()  # this clock takes a word
        m.d.sync += taking.eq(~taking)
        # The word taken waits a clock in a register before the scrambler: the link's
        # transmit side (framer, transmitter, SKP inserter) is then not on one path with the
        # scrambler's XOR network.
        staged, staged_valid = Signal.like(self.tx.p), Signal()
        with m.If(taking):
            m.d.sync += [staged.eq(self.tx.p), staged_valid.eq(self.tx.valid)]
        m.d.comb += [self.tx.ready.eq(taking),
                     scrambler.sink.valid.eq(~taking & staged_valid),
                     scrambler.sink.p.eq(staged)]
        with m.If(taking & ~self.tx.valid):
            m.d.sync += self.tx_underflows.eq(self.tx_underflows + 1)
        word = scrambler.source
        second = Signal(Cat(word.p.symbols[2], word.p.symbols[3]).shape())
        second_idle = Signal()

        def send(symbols, idle):
            m.d.sync += [self.serdes_tx_data.eq(Cat(symbols[0][:8], symbols[1][:8])),
                         self.serdes_tx_datak.eq(Cat(symbols[0][8], symbols[1][8])),
                         self.serdes_tx_idle.eq(idle)]

        # The scrambler's word is there two clocks after ``taking`` (staged, then scrambled),
        # on the next ``taking`` clock: half 0 then, half 1 the clock after.
        with m.If(taking):
            send([word.p.symbols[0], word.p.symbols[1]], ~word.valid | word.p.extra)
            m.d.sync += [second.eq(Cat(word.p.symbols[2], word.p.symbols[3])),
                         second_idle.eq(~word.valid | word.p.extra)]
        with m.Else():
            send([second[:9], second[9:]], second_idle)

    def _receive(self, m):
        symbols = [Cat(self.serdes_rx_data[8 * i:8 * i + 8], self.serdes_rx_datak[i])
                   for i in range(2)]
        errors = Cat(symbol == DECODE_ERROR for symbol in symbols)
        held, held_errors, holding = Signal(18), Signal(2), Signal()
        m.submodules.descrambler = descrambler = Scrambler(width=LANES, extra=LANES)
        m.d.comb += [descrambler.sink.p.symbols[0].eq(held[:9]),
                     descrambler.sink.p.symbols[1].eq(held[9:]),
                     descrambler.sink.p.symbols[2].eq(symbols[0]),
                     descrambler.sink.p.symbols[3].eq(symbols[1]),
                     descrambler.sink.p.extra.eq(Cat(held_errors, errors))]
        with m.If(~self.serdes_rx_valid):
            m.d.sync += holding.eq(0)
        with m.Elif(~holding):
            m.d.sync += [held.eq(Cat(*symbols)), held_errors.eq(errors), holding.eq(1)]
        with m.Else():
            m.d.comb += descrambler.sink.valid.eq(1)
            m.d.sync += holding.eq(0)
        out = descrambler.source
        m.d.comb += self.rx.valid.eq(out.valid)
        for lane in range(LANES):
            m.d.comb += [self.rx.p[lane].symbol.eq(out.p.symbols[lane]),
                         self.rx.p[lane].error.eq(out.p.extra[lane])]
