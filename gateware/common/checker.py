"""Pattern checker: the gateware twin of :meth:`busprobe.protocol.patterns.PatternStream.check`."""

from amaranth import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.patterns import NO_ERROR_OFFSET

from .pattern import PATTERN_SHAPE, PatternGenerator

__all__ = ["PatternChecker"]


class PatternChecker(wiring.Component):
    """Compares a received byte stream with the selected pattern, one byte per clock.

    A 32-bit word of the stream counts as one error however many of its bytes are wrong (it is
    counted at its first wrong byte, so a word cut short by the end of the data still counts), and
    the stream offset of the first wrong byte is kept — the semantics of ``PatternStream.check``.
    The incoming byte is registered once before the comparison, so the checker adds nothing to the
    timing path of whatever feeds it.

    Attributes
    ----------
    pattern: Signal(PATTERN_SHAPE), input
        The pattern expected.
    restart: Signal(), input
        Strobe: expect byte 0 of the pattern next; clears the error count and first offset.
    clear: Signal(), input
        Strobe: clear the error count and first offset only (the stream position is kept).
    stream: stream.Signature(8, always_ready=True), input
        The received bytes.
    errors: Signal(32), output
        Mismatched 32-bit words since the last restart or clear.
    first_error_offset: Signal(32), output
        Stream offset of the first mismatched byte, ``NO_ERROR_OFFSET`` if none.
    offset: Signal(32), output
        Bytes checked since the last restart.

    Parameters
    ----------
    domain: str
        Clock domain.
    """

    pattern: In(PATTERN_SHAPE)
    restart: In(1)
    clear: In(1)
    stream: In(stream.Signature(8, always_ready=True))
    errors: Out(32)
    first_error_offset: Out(32, init=NO_ERROR_OFFSET)
    offset: Out(32)

    def __init__(self, *, domain="usb"):
        self._domain = domain
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        sync = m.d[self._domain]
        m.submodules.expected = expected = PatternGenerator(domain=self._domain)

        # One register stage between the stream and the comparison.
        byte_valid = Signal()
        byte = Signal(8)
        sync += [byte_valid.eq(self.stream.valid & ~self.restart), byte.eq(self.stream.payload)]

        byte_index = Signal(2)
        word_already_counted = Signal()
        mismatch = byte_valid & (byte != expected.word.word_select(byte_index, 8))
        last_byte_of_word = byte_index == 3

        m.d.comb += [
            expected.pattern.eq(self.pattern),
            expected.restart.eq(self.restart),
            expected.advance.eq(byte_valid & last_byte_of_word),
        ]

        # The offset is the expected stream's word count and the byte in the word (both start
        # over on restart and move with every byte checked): no 32-bit counter of its own.
        m.d.comb += self.offset.eq(Cat(byte_index, expected.count))
        with m.If(self.restart):
            sync += [byte_index.eq(0), word_already_counted.eq(0)]
        with m.Elif(byte_valid):
            sync += [
                byte_index.eq(byte_index + 1),
                word_already_counted.eq(~last_byte_of_word & (word_already_counted | mismatch)),
            ]

        # A flag, not a 32-bit compare with NO_ERROR_OFFSET, says the first offset is taken.
        seen = Signal()
        with m.If(self.restart | self.clear):
            sync += [self.errors.eq(0), self.first_error_offset.eq(NO_ERROR_OFFSET), seen.eq(0)]
        with m.Elif(mismatch):
            with m.If(~word_already_counted):
                sync += self.errors.eq(self.errors + 1)
            with m.If(~seen):
                sync += [self.first_error_offset.eq(self.offset), seen.eq(1)]
        return m
