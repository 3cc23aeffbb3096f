"""Pattern generators: the gateware side of :mod:`busprobe.protocol.patterns`.

:class:`PatternGenerator` produces one 32-bit word of the selected pattern per clock;
:class:`PatternByteSource` turns it into the little-endian byte stream that the host's
:class:`~busprobe.protocol.patterns.PatternStream` expects. :class:`Mod63Counter` counts usbtest's
mod-63 packet pattern (:func:`~busprobe.protocol.patterns.mod63_bytes`).
"""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.patterns import MOD63_MODULUS, PRBS31_SEED, Pattern, prbs31_step

__all__ = ["PatternGenerator", "PatternByteSource", "PATTERN_SHAPE", "prbs31_next",
           "PatternPosition", "PATTERN_START", "pattern_byte", "next_position", "Mod63Counter"]

#: Shape of a pattern selector signal (wide enough for every :class:`Pattern`).
PATTERN_SHAPE = range(max(Pattern) + 1)


def prbs31_next(history):
    """Gateware twin of :func:`~busprobe.protocol.patterns.prbs31_step`: ``(word, new_history)``.

    ``history`` is a 31-bit value holding the last 31 bits, oldest in bit 0. The recurrence
    ``b[n] = b[n-31] ^ b[n-28]`` is unrolled 32 times as two blocks (28 bits, then 4 bits), the same
    split as the reference, so each output bit is at most a two-input XOR of state bits.
    """
    low = history[0:28] ^ history[3:31]        # b[n]..b[n+27]
    mid = Cat(history[28:31], low)             # history after 28 bits
    high = mid[0:4] ^ mid[3:7]                 # b[n+28]..b[n+31]
    return Cat(low, high), Cat(mid[4:31], high)


_FIRST_PRBS_WORD, _SECOND_PRBS_HISTORY = prbs31_step(PRBS31_SEED)


class PatternGenerator(wiring.Component):
    """One 32-bit word of a :class:`~busprobe.protocol.patterns.Pattern` per clock.

    ``word`` always holds word ``k`` of the stream; ``advance`` moves to word ``k + 1`` on the
    next clock. Both patterns run all the time (the counter is one adder, PRBS-31 is 32 XORs), so
    switching ``pattern`` needs no extra cycle; ``restart`` goes back to word 0.

    Attributes
    ----------
    pattern: Signal(PATTERN_SHAPE), input
        Which pattern ``word`` shows.
    restart: Signal(), input
        Strobe: the next word is word 0 of the stream. Takes priority over ``advance``.
    advance: Signal(), input
        Strobe: the next word is the following word of the stream.
    word: Signal(32), output
        The current word.
    count: Signal(32), output
        ``k``, the index of the current word (the COUNTER pattern's word, whatever the pattern):
        a user counting bytes takes it from here instead of a counter of its own.

    Parameters
    ----------
    domain: str
        Clock domain the generator runs in.
    """

    pattern: In(PATTERN_SHAPE)
    restart: In(1)
    advance: In(1)
    word: Out(32)
    count: Out(32)

    def __init__(self, *, domain="usb"):
        self._domain = domain
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        sync = m.d[self._domain]

        counter = self.count
        prbs_word = Signal(32, init=_FIRST_PRBS_WORD)
        # History after the current word: the next word is computed from it.
        prbs_history = Signal(31, init=_SECOND_PRBS_HISTORY)
        next_word, next_history = prbs31_next(prbs_history)

        with m.If(self.restart):
            sync += [
                counter.eq(0),
                prbs_word.eq(_FIRST_PRBS_WORD),
                prbs_history.eq(_SECOND_PRBS_HISTORY),
            ]
        with m.Elif(self.advance):
            sync += [
                counter.eq(counter + 1),
                prbs_word.eq(next_word),
                prbs_history.eq(next_history),
            ]

        m.d.comb += self.word.eq(Mux(self.pattern == Pattern.PRBS31, prbs_word, counter))
        return m


class PatternByteSource(wiring.Component):
    """An always-valid byte stream of a pattern, least significant byte of each word first.

    Attributes
    ----------
    pattern: Signal(PATTERN_SHAPE), input
        Which pattern to stream.
    restart: Signal(), input
        Strobe: start over at byte 0 of the pattern (a byte accepted in the same cycle is dropped).
    stream: stream.Signature(8, always_valid=True), output
        The bytes; one is consumed each cycle ``ready`` is high.
    offset: Signal(32), output
        Number of bytes consumed since the last restart (wraps): the generator's word count
        and the byte in the word, no counter of its own.

    Parameters
    ----------
    domain: str
        Clock domain.
    """

    pattern: In(PATTERN_SHAPE)
    restart: In(1)
    stream: Out(stream.Signature(8, always_valid=True))
    offset: Out(32)

    def __init__(self, *, domain="usb"):
        self._domain = domain
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        sync = m.d[self._domain]
        m.submodules.generator = generator = PatternGenerator(domain=self._domain)

        byte_index = Signal(2)
        accepted = self.stream.ready & ~self.restart

        m.d.comb += [
            generator.pattern.eq(self.pattern),
            generator.restart.eq(self.restart),
            generator.advance.eq(accepted & (byte_index == 3)),
            self.stream.payload.eq(generator.word.word_select(byte_index, 8)),
            self.offset.eq(Cat(byte_index, generator.count)),
        ]
        with m.If(self.restart):
            sync += byte_index.eq(0)
        with m.Elif(accepted):
            sync += byte_index.eq(byte_index + 1)
        return m


#: Complete position of a pattern byte stream: both patterns' current word and the byte in it.
#: Holding one of these instead of the bytes is what lets a sender replay or re-frame data.
PatternPosition = data.StructLayout({
    "counter": 32,
    "prbs_word": 32,
    "prbs_history": 31,
    "byte_index": 2,
})

#: :data:`PatternPosition` of byte 0 of every pattern.
PATTERN_START = {"counter": 0, "prbs_word": _FIRST_PRBS_WORD,
                 "prbs_history": _SECOND_PRBS_HISTORY, "byte_index": 0}


def pattern_byte(position, pattern):
    """The byte of ``pattern`` at ``position`` (a :data:`PatternPosition` view)."""
    word = Mux(pattern == Pattern.PRBS31, position.prbs_word, position.counter)
    return word.word_select(position.byte_index, 8)


def next_position(target, position):
    """Statements setting ``target`` to the :data:`PatternPosition` one byte after ``position``."""
    word_done = position.byte_index == 3
    prbs_word, prbs_history = prbs31_next(position.prbs_history)
    return [
        target.counter.eq(Mux(word_done, position.counter + 1, position.counter)),
        target.prbs_word.eq(Mux(word_done, prbs_word, position.prbs_word)),
        target.prbs_history.eq(Mux(word_done, prbs_history, position.prbs_history)),
        target.byte_index.eq(position.byte_index + 1),
    ]


class Mod63Counter(wiring.Component):
    """The byte of usbtest's mod-63 pattern at a position in a packet: 0, 1, .. 62, 0, ..
    from each packet's first byte (:func:`~busprobe.protocol.patterns.mod63_bytes`).

    A six-bit counter that wraps at 63 and starts over at every packet; where the packets
    start is the user's to say (``packet_start``): the USB 2.0 data path starts it every
    512 bytes of the stream it feeds the IN endpoint, which cuts its packets there.

    Attributes
    ----------
    advance: Signal(), input
        Strobe: a byte was taken; the next is the following one.
    packet_start: Signal(), input
        Strobe, with ``advance`` or alone: the next byte starts a packet (byte 0).
    byte: Signal(8), output
        The byte at the current position.

    Parameters
    ----------
    domain: str
        Clock domain.
    """

    advance: In(1)
    packet_start: In(1)
    byte: Out(8)

    def __init__(self, *, domain="usb"):
        self._domain = domain
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        value = Signal(range(MOD63_MODULUS))
        m.d.comb += self.byte.eq(value)
        with m.If(self.packet_start | (self.advance & (value == MOD63_MODULUS - 1))):
            m.d[self._domain] += value.eq(0)
        with m.Elif(self.advance):
            m.d[self._domain] += value.eq(value + 1)
        return m
