"""The null disk's LBA pattern as a stream of bytes or words: :mod:`busprobe.protocol.storage`'s
twin."""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.storage import WORDS_PER_BLOCK

__all__ = ["LbaPattern", "LbaPatternBytes"]

_WORD_SHIFT = (WORDS_PER_BLOCK - 1).bit_length()
#: Bits of the word address kept: LBAs below 2**33 (the alias term then has 8 bits).
_ADDRESS_BITS = 40


class LbaPattern(wiring.Component):
    """What the blocks from an LBA on hold, ``width`` bytes per ``advance`` (1 or 4), in
    little-endian words.

    Word ``k`` of block ``L`` is ``((L << 7) | k) ^ (L >> 25)``: a word address counter ``W``
    gives it as ``W[0:32] ^ W[32:]``. The word is kept in a register, computed when the counter
    steps, so ``data`` is at most a 4:1 multiplexer away from flip-flops: it feeds an IN
    endpoint and a write checker's compare at ``width`` bytes a cycle (USB 2.0: a byte a cycle
    at 60 MHz; SuperSpeed: a word a cycle at 125 MHz, 500 MB/s).

    Attributes
    ----------
    start: Signal(), input
        Strobe: the next beat is byte 0 of block ``lba``.
    lba: Signal(33), input
        Sampled with ``start``.
    advance: Signal(), input
        The beat on ``data`` was taken.
    data: Signal(8 * width), output
        The current beat (with ``width`` 4, a whole word of the pattern).
    word_end: Signal(), output
        ``data`` ends its word (always, with ``width`` 4).

    Parameters
    ----------
    width: int
        Bytes per beat: 1 or 4.
    domain: str
    """

    def __init__(self, *, width=1, domain="usb"):
        if width not in (1, 4):
            raise ValueError(f"the LBA pattern moves 1 or 4 bytes a beat, not {width}")
        self._width, self._domain = width, domain
        super().__init__({"start": In(1), "lba": In(33), "advance": In(1),
                          "data": Out(8 * width), "word_end": Out(1)})

    def elaborate(self, platform):
        m = Module()
        sync = m.d[self._domain]
        address = Signal(_ADDRESS_BITS)
        word = Signal(32)
        following = Signal(_ADDRESS_BITS)

        def value(w):
            return w[:32] ^ w[32:]

        m.d.comb += following.eq(address + 1)
        if self._width == 4:
            m.d.comb += [self.data.eq(word), self.word_end.eq(1)]
            stepping = self.advance
        else:
            lane = Signal(2)
            m.d.comb += [self.data.eq(word.word_select(lane, 8)), self.word_end.eq(lane == 3)]
            stepping = self.advance & (lane == 3)
            with m.If(self.start):
                sync += lane.eq(0)
            with m.Elif(self.advance):
                sync += lane.eq(lane + 1)
        with m.If(self.start):
            first = Cat(Signal(_WORD_SHIFT), self.lba)[:_ADDRESS_BITS]
            sync += [address.eq(first), word.eq(value(first))]
        with m.Elif(stepping):
            sync += [address.eq(following), word.eq(value(following))]
        return m


class LbaPatternBytes(LbaPattern):
    """:class:`LbaPattern` a byte a beat, the byte also as ``byte`` (the USB 2.0 engines').

    Parameters
    ----------
    domain: str
    """

    def __init__(self, *, domain="usb"):
        super().__init__(width=1, domain=domain)

    @property
    def byte(self):
        return self.data
