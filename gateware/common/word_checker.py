"""Pattern checker for a 32-bit packet stream: the byte checker's semantics, four bytes a clock."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.patterns import NO_ERROR_OFFSET

from .packet_stream import PacketStreamSignature
from .pattern import PATTERN_SHAPE, PatternGenerator

__all__ = ["PatternWordChecker"]


class PatternWordChecker(wiring.Component):
    """Compares a 32-bit packet stream with the selected pattern, up to four bytes per clock.

    The stream's bytes (``keep`` says how many a beat holds; packet boundaries do not matter)
    continue the pattern byte stream at any alignment: a short packet leaves the next one
    starting mid-word. As :class:`~busprobe.gateware.common.checker.PatternChecker`, a 32-bit word
    of the pattern stream counts as one error however many of its bytes are wrong, and the offset
    of the first wrong byte is kept.

    Attributes
    ----------
    pattern: Signal(PATTERN_SHAPE), input
    restart: Signal(), input
        Strobe: expect byte 0 of the pattern next; clears the error count and first offset.
    clear: Signal(), input
        Strobe: clear the error count and first offset only.
    stream: PacketStreamSignature(4), input stream
        The received data; ready except for two cycles after a restart.
    errors: Signal(32), output
        Mismatched pattern words since the last restart or clear.
    first_error_offset: Signal(32), output
        Stream offset of the first mismatched byte, ``NO_ERROR_OFFSET`` if none.
    offset: Signal(32), output
        Bytes checked since the last restart.
    """

    pattern: In(PATTERN_SHAPE)
    restart: In(1)
    clear: In(1)
    stream: In(PacketStreamSignature(4))
    errors: Out(32)
    first_error_offset: Out(32, init=NO_ERROR_OFFSET)
    offset: Out(32)

    def elaborate(self, platform):
        m = Module()
        m.submodules.generator = generator = PatternGenerator(domain="ss")
        m.d.comb += generator.pattern.eq(self.pattern)

        # ``low`` is pattern word k (the one ``offset`` is in), the generator shows word k + 1.
        low, primed, counted = Signal(32), Signal(), Signal()
        with m.If(~primed):
            m.d.ss += [low.eq(generator.word), primed.eq(1)]
            m.d.comb += generator.advance.eq(1)
        m.d.comb += self.stream.ready.eq(primed)

        # Each beat is registered before it is compared, as the byte checker does: whatever
        # feeds the checker (a block RAM's output) keeps its own timing path.
        beat_valid, data, keep = Signal(), Signal(32), Signal(4)
        m.d.ss += [beat_valid.eq(self.stream.valid & primed), data.eq(self.stream.payload.data),
                   keep.eq(self.stream.payload.keep)]

        shift = self.offset[:2]
        expected = (Cat(low, generator.word) >> (shift * 8))[:32]
        wrong = Signal(4)
        for i in range(4):
            m.d.comb += wrong[i].eq(keep[i] & (data.word_select(i, 8)
                                               != expected.word_select(i, 8)))
        # Byte i of the beat is in word k if shift + i < 4, else in word k + 1.
        in_low = Signal(4)
        m.d.comb += in_low.eq(Mux(shift == 0, 0b1111, Mux(shift == 1, 0b0111,
                                                          Mux(shift == 2, 0b0011, 0b0001))))
        low_wrong = (wrong & in_low).any()
        high_wrong = (wrong & ~in_low).any()
        count = sum(keep[i] for i in range(4))
        crosses = (shift + count) >= 4

        first_wrong = Signal(2)
        for i in reversed(range(4)):
            with m.If(wrong[i]):
                m.d.comb += first_wrong.eq(i)

        # A beat's verdict is registered before it is counted: comparing at any alignment is six
        # levels of logic and the count a 32-bit carry chain, and the two in one cycle were the
        # ss domain's critical path on the ECPIX-5 (123-127 MHz for 125). Counts land a cycle
        # later; a clear or restart also drops the verdict in flight.
        verdict_errors, verdict_wrong = Signal(2), Signal()
        verdict_first, verdict_offset = Signal(2), Signal(32)
        m.d.ss += [verdict_errors.eq(0), verdict_wrong.eq(0)]
        with m.If(beat_valid):
            m.d.ss += [
                self.offset.eq(self.offset + count),
                verdict_errors.eq((low_wrong & ~counted) + high_wrong),
                verdict_wrong.eq(wrong.any()),
                verdict_first.eq(first_wrong),
                verdict_offset.eq(self.offset),
            ]
            with m.If(crosses):
                m.d.comb += generator.advance.eq(1)
                m.d.ss += [low.eq(generator.word), counted.eq(high_wrong)]
            with m.Else():
                m.d.ss += counted.eq(counted | low_wrong)
        m.d.ss += self.errors.eq(self.errors + verdict_errors)
        with m.If(verdict_wrong & (self.first_error_offset == NO_ERROR_OFFSET)):
            m.d.ss += self.first_error_offset.eq(verdict_offset + verdict_first)

        with m.If(self.clear | self.restart):
            m.d.ss += [self.errors.eq(0), self.first_error_offset.eq(NO_ERROR_OFFSET),
                       verdict_errors.eq(0), verdict_wrong.eq(0)]
        with m.If(self.restart):
            m.d.ss += [self.offset.eq(0), primed.eq(0), counted.eq(0), beat_valid.eq(0)]
            m.d.comb += generator.restart.eq(1)
        return m
