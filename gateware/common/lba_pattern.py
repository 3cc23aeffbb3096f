"""The null disk's LBA pattern as a byte stream: :mod:`busprobe.protocol.storage`'s twin."""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.storage import WORDS_PER_BLOCK

__all__ = ["LbaPatternBytes"]

_WORD_SHIFT = (WORDS_PER_BLOCK - 1).bit_length()
#: Bits of the word address kept: LBAs below 2**33 (the alias term then has 8 bits).
_ADDRESS_BITS = 40


class LbaPatternBytes(wiring.Component):
    """The bytes the blocks from an LBA on hold, one per ``advance``, little-endian words.

    Word ``k`` of block ``L`` is ``((L << 7) | k) ^ (L >> 25)``: a word address counter ``W``
    gives it as ``W[0:32] ^ W[32:]``. The word is kept in a register, computed when the counter
    steps, so a byte is a 4:1 multiplexer away from flip-flops (it feeds the IN endpoint and
    the write checker's compare at one byte a cycle).

    Attributes
    ----------
    start: Signal(), input
        Strobe: the next byte is byte 0 of block ``lba``.
    lba: Signal(33), input
        Sampled with ``start``.
    advance: Signal(), input
        The byte on ``byte`` was taken.
    byte: Signal(8), output
        The current byte.
    word_end: Signal(), output
        ``byte`` is the last of its word.

    Parameters
    ----------
    domain: str
    """

    start: In(1)
    lba: In(33)
    advance: In(1)
    byte: Out(8)
    word_end: Out(1)

    def __init__(self, *, domain="usb"):
        self._domain = domain
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        sync = m.d[self._domain]
        address = Signal(_ADDRESS_BITS)
        word = Signal(32)
        lane = Signal(2)
        following = Signal(_ADDRESS_BITS)

        def value(w):
            return w[:32] ^ w[32:]

        m.d.comb += [
            self.byte.eq(word.word_select(lane, 8)),
            self.word_end.eq(lane == 3),
            following.eq(address + 1),
        ]
        with m.If(self.start):
            first = Cat(Signal(_WORD_SHIFT), self.lba)[:_ADDRESS_BITS]
            sync += [address.eq(first), word.eq(value(first)), lane.eq(0)]
        with m.Elif(self.advance):
            sync += lane.eq(lane + 1)
            with m.If(lane == 3):
                sync += [address.eq(following), word.eq(value(following))]
        return m
