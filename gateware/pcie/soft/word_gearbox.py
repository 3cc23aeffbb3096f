"""Between the link's four-symbol words (a word a 62.5 MHz clock at Gen1) and the DCU's 16-bit
interface (two symbols a 125 MHz clock): the scrambler, a clock-domain crossing and a two-to-one
gearbox each way.

The four-symbol link (DESIGN §3.10, "Four symbols a clock, and Gen2") moves a word every clock
of its own 62.5 MHz clock at 2.5 GT/s, which a board makes from the DCU's fabric clock with a
fabric PLL: one rate, an unknown phase, so the words cross in asynchronous FIFOs without
elasticity (clock compensation is the DCU's, in its receive path). Everything that works on the
symbols' values (the scrambler, the descrambler) is on the link's side, at the link's clock;
the DCU's side only splits words into halves and pairs halves into words.
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import AsyncFIFO
from amaranth.lib.wiring import In, Out

from .scrambler import Scrambler, scrambler_word
from .symbol_stream import LANES, rx_word_stream

__all__ = ["WordGearbox", "TX_WORD_WITH_IDLE", "DECODE_ERROR"]

#: What the DCU's 8b/10b decoder hands up for a code or disparity error: EEh with the K flag
#: (K14.7 is not a symbol of the code, so it cannot be a real one; LUNA's decode-error flag
#: tests the same).
DECODE_ERROR = 0x1EE

#: A word to send and whether the transmitter is in electrical idle for it (``extra``).
TX_WORD_WITH_IDLE = scrambler_word(LANES, 1)

_SYMBOL = 9  # a symbol with its K flag


class WordGearbox(wiring.Component):
    """Four-symbol words in the link's domain to and from two symbols a clock in the DCU's.

    Transmit: every link clock with room in the FIFO a word slot is taken (``tx.ready``); the
    word waits a clock in a register (so the link's transmit side is not on one path with the
    scrambler's XOR network), is scrambled (a clock) and written with its electrical-idle bit.
    A slot the link has no word for is written as electrical idle and counted
    (``tx_underflows``: the link's transmitter always has a word, so it does not happen). The
    DCU's side starts reading once the FIFO holds ``prime`` words and then reads one every
    other clock, sending half 0 that clock and half 1 the next, from registers; a word not
    there when due (the FIFO ran empty, which with both clocks from one reference does not
    happen once primed) is sent as electrical idle, counted, and the side primes again.

    Receive: two symbols a DCU clock, decode errors flagged (:data:`DECODE_ERROR` in a half),
    are paired into a word (the first half held a clock) and written into the other FIFO (a
    full FIFO drops the word and counts it); a clock without ``serdes_rx_valid`` (the DCU's
    receiver not locked) drops a held half, so the pairing starts again with the next valid
    one. The link's side reads a word whenever there is one and descrambles it; a clock
    without one is a clock without ``rx.valid``. Which received half starts a word is
    arbitrary: :class:`~.receive_aligner.ReceiveAligner` puts each structure in lane 0.

    Attributes
    ----------
    tx: stream of TX_WORD_WITH_IDLE, input
        Words to send, symbol 0 first on the wire (link domain).
    rx: rx_word_stream(), output
        Received words, descrambled (link domain).
    serdes_tx_data: Signal(16), serdes_tx_datak: Signal(2), serdes_tx_idle: Signal(), output
    serdes_rx_data: Signal(16), serdes_rx_datak: Signal(2), serdes_rx_valid: Signal(), input
        The DCU's interface (SerDes domain), symbol 0 in bits 7:0, its K flag in
        ``datak`` bit 0.
    tx_underflows: Signal(8), output
        Word slots the link had no word for (link domain, wraps).
    serdes_underflows, rx_overflows: Signal(8), output
        Words the DCU's side did not have when due, received words the FIFO had no room for
        (SerDes domain, wrap).

    Parameters
    ----------
    domain: str
        The link's domain (a word a clock).
    serdes_domain: str
        The DCU's fabric clock (two symbols a clock, twice the link's).
    depth, prime: int
        Words per FIFO (a power of 2), and the transmit fill at which the DCU's side starts
        reading.
    """

    tx: In(stream.Signature(TX_WORD_WITH_IDLE))
    rx: Out(rx_word_stream())
    serdes_tx_data: Out(16)
    serdes_tx_datak: Out(2)
    serdes_tx_idle: Out(1, init=1)  # electrical idle from reset until a word is due
    serdes_rx_data: In(16)
    serdes_rx_datak: In(2)
    serdes_rx_valid: In(1)
    tx_underflows: Out(8)
    serdes_underflows: Out(8)
    rx_overflows: Out(8)

    def __init__(self, *, domain: str = "sync", serdes_domain: str = "pclk", depth: int = 16,
                 prime: int = 4):
        if not 0 < prime < depth - 2:
            raise ValueError(f"prime must be inside 1..{depth - 3}, not {prime}")
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
        m.submodules.tx_fifo = fifo = AsyncFIFO(width=LANES * _SYMBOL + 1, depth=self._depth,
                                                w_domain=self._domain,
                                                r_domain=self._serdes_domain)
        m.submodules.scrambler = scrambler = Scrambler(width=LANES, extra=1,
                                                       domain=self._domain)
        # A slot is taken while the FIFO has room for it and the two words on their way to
        # it (the staging register and the scrambler's). The write side sees reads a few
        # clocks late (the read pointer's synchroniser), so the FIFO is deep enough that
        # this never holds the link once primed.
        slot = Signal()
        m.d.comb += [slot.eq(fifo.w_level < self._depth - 2), self.tx.ready.eq(slot)]
        staged, staged_valid, staged_slot, scrambled_slot = \
            Signal.like(self.tx.p), Signal(), Signal(), Signal()
        link += [staged.eq(self.tx.p), staged_valid.eq(slot & self.tx.valid),
                 staged_slot.eq(slot), scrambled_slot.eq(staged_slot)]
        with m.If(slot & ~self.tx.valid):
            link += self.tx_underflows.eq(self.tx_underflows + 1)
        m.d.comb += [scrambler.sink.valid.eq(staged_valid), scrambler.sink.p.eq(staged)]
        word = scrambler.source
        m.d.comb += [fifo.w_en.eq(scrambled_slot),
                     fifo.w_data.eq(Cat(*(word.p.symbols[i] for i in range(LANES)),
                                        ~word.valid | word.p.extra))]

        # The DCU's side: half 0 of a word the clock it is read, half 1 the next.
        running, second = Signal(), Signal()
        held, held_idle = Signal(2 * _SYMBOL), Signal()

        def send(symbols, idle):
            m.d[self._serdes_domain] += [
                self.serdes_tx_data.eq(Cat(symbols[0][:8], symbols[1][:8])),
                self.serdes_tx_datak.eq(Cat(symbols[0][8], symbols[1][8])),
                self.serdes_tx_idle.eq(idle)]

        out = [fifo.r_data[i * _SYMBOL:(i + 1) * _SYMBOL] for i in range(LANES)]
        out_idle = fifo.r_data[LANES * _SYMBOL]
        with m.If(second):
            send([held[:_SYMBOL], held[_SYMBOL:]], held_idle)
            serdes += second.eq(0)
        with m.Elif(running & fifo.r_rdy):
            m.d.comb += fifo.r_en.eq(1)
            send(out[:2], out_idle)
            serdes += [held.eq(Cat(out[2], out[3])), held_idle.eq(out_idle), second.eq(1)]
        with m.Else():
            send([Const(0, _SYMBOL)] * 2, 1)
            with m.If(running):
                serdes += [running.eq(0),
                           self.serdes_underflows.eq(self.serdes_underflows + 1)]
            with m.Else():
                serdes += running.eq(fifo.r_level >= self._prime)

    def _receive(self, m):
        serdes = m.d[self._serdes_domain]
        m.submodules.rx_fifo = fifo = AsyncFIFO(width=LANES * (_SYMBOL + 1), depth=self._depth,
                                                w_domain=self._serdes_domain,
                                                r_domain=self._domain)
        # The DCU's side: halves paired, in registers, then written.
        symbols = [Cat(self.serdes_rx_data[8 * i:8 * i + 8], self.serdes_rx_datak[i])
                   for i in range(2)]
        errors = Cat(symbol == DECODE_ERROR for symbol in symbols)
        held, held_errors, holding = Signal(2 * _SYMBOL), Signal(2), Signal()
        paired, paired_valid = Signal(LANES * (_SYMBOL + 1)), Signal()
        serdes += paired_valid.eq(0)
        with m.If(~self.serdes_rx_valid):
            serdes += holding.eq(0)
        with m.Elif(~holding):
            serdes += [held.eq(Cat(*symbols)), held_errors.eq(errors), holding.eq(1)]
        with m.Else():
            serdes += [paired.eq(Cat(held, *symbols, held_errors, errors)),
                       paired_valid.eq(1), holding.eq(0)]
        m.d.comb += [fifo.w_en.eq(paired_valid), fifo.w_data.eq(paired)]
        with m.If(paired_valid & ~fifo.w_rdy):
            serdes += self.rx_overflows.eq(self.rx_overflows + 1)

        # The link's side: a word whenever there is one, descrambled.
        m.submodules.descrambler = descrambler = Scrambler(width=LANES, extra=LANES,
                                                           domain=self._domain)
        m.d.comb += [fifo.r_en.eq(1), descrambler.sink.valid.eq(fifo.r_rdy),
                     descrambler.sink.p.extra.eq(fifo.r_data[LANES * _SYMBOL:])]
        for lane in range(LANES):
            m.d.comb += descrambler.sink.p.symbols[lane].eq(
                fifo.r_data[lane * _SYMBOL:(lane + 1) * _SYMBOL])
        out = descrambler.source
        m.d.comb += self.rx.valid.eq(out.valid)
        for lane in range(LANES):
            m.d.comb += [self.rx.p[lane].symbol.eq(out.p.symbols[lane]),
                         self.rx.p[lane].error.eq(out.p.extra[lane])]
