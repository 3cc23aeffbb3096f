"""Pattern generator and checker for the PCIe DMA streams (Migen, 2 words per beat and up).

Both produce/expect exactly the byte stream of :mod:`busprobe.protocol.patterns`: 32-bit
little-endian words, word ``k`` of a beat in bits ``[32k, 32k+32)`` (the DMA writes bit 0..7 of
a beat to the lowest address). PRBS-31 is computed ``words_per_beat * 32`` bits per clock: the
recurrence ``b[n] = b[n-31] ^ b[n-28]`` is unrolled symbolically at elaboration time, so every
output bit is a fixed XOR of the 31 history bits (the same recurrence as
:func:`busprobe.protocol.patterns.prbs31_bitserial`).
"""

from __future__ import annotations

from functools import reduce
from operator import xor

from busprobe.protocol.patterns import PRBS31_SEED, Pattern
from litepcie.common import dma_layout
from litex.soc.interconnect import stream
from migen import Cat, If, Module, Signal

__all__ = ["PatternGenerator", "PatternChecker", "prbs31_unrolled_taps"]

PRBS_BITS = 31


def prbs31_unrolled_taps(nbits: int) -> tuple[list[frozenset[int]], list[frozenset[int]]]:
    """Express ``nbits`` new PRBS-31 bits, and the history after them, over the current history.

    The history holds the last 31 bits, oldest in bit 0 (as in ``protocol.patterns``). Returns
    ``(outputs, next_history)``: each entry is the set of current-history bit indices whose XOR
    gives that bit.
    """
    seq = [frozenset({i}) for i in range(PRBS_BITS)]  # b[n-31] .. b[n-1]
    outputs = []
    for _ in range(nbits):
        bit = seq[-31] ^ seq[-28]  # symmetric difference = XOR over GF(2)
        seq.append(bit)
        outputs.append(bit)
    return outputs, seq[-PRBS_BITS:]


def _xor_of(history: Signal, taps: frozenset[int]):
    return reduce(xor, [history[i] for i in sorted(taps)])


class _PatternSequencer(Module):
    """The expected/produced beat sequence of the selected pattern.

    Attributes
    ----------
    value : Signal(data_width), output
        The current beat.
    advance : Signal(), input
        Move to the next beat after this clock.
    restart : Signal(), input
        Go back to the first beat of ``pattern`` (wins over ``advance``).
    pattern : Signal(8), input
        A :class:`~busprobe.protocol.patterns.Pattern` value.
    """

    def __init__(self, data_width):
        words = data_width // 32
        self.value = Signal(data_width)
        self.advance = Signal()
        self.restart = Signal()
        self.pattern = Signal(8)

        counter = Signal(32)  # index of the beat's first word
        history = Signal(PRBS_BITS, reset=PRBS31_SEED)
        outputs, next_history = prbs31_unrolled_taps(data_width)
        prbs_value = Cat(*[_xor_of(history, taps) for taps in outputs])
        prbs_next = Cat(*[_xor_of(history, taps) for taps in next_history])
        counter_value = Cat(*[(counter + k)[:32] for k in range(words)])

        self.comb += If(self.pattern == Pattern.PRBS31,
            self.value.eq(prbs_value),
        ).Else(
            self.value.eq(counter_value),
        )
        self.sync += If(self.restart,
            counter.eq(0),
            history.eq(PRBS31_SEED),
        ).Elif(self.advance,
            counter.eq(counter + words),
            history.eq(prbs_next),
        )


class PatternGenerator(Module):
    """Source of the selected pattern at one beat per clock (never the bottleneck).

    Attributes
    ----------
    source : stream.Endpoint(dma_layout), output
        Pattern beats; ``valid`` only while ``enable`` (the LitePCIe writer drops data offered
        while it is disabled, which would lose pattern words).
    enable : Signal(), input
        Offer data (tie to the DMA writer's enable).
    restart : Signal(), input
        Restart at the first word of ``pattern``.
    pattern : Signal(8), input
    bytes : Signal(32), output
        Bytes handed out since the last restart (wraps).
    """

    def __init__(self, data_width=64):
        self.source = stream.Endpoint(dma_layout(data_width))
        self.enable = Signal()
        self.restart = Signal()
        self.pattern = Signal(8)
        self.bytes = Signal(32)

        self.sequencer = seq = _PatternSequencer(data_width)
        self.submodules += seq
        fire = self.source.valid & self.source.ready
        self.comb += [
            seq.pattern.eq(self.pattern),
            seq.restart.eq(self.restart),
            seq.advance.eq(fire),
            self.source.valid.eq(self.enable & ~self.restart),
            self.source.data.eq(seq.value),
        ]
        self.sync += If(self.restart,
            self.bytes.eq(0),
        ).Elif(fire,
            self.bytes.eq(self.bytes + data_width // 8),
        )


class PatternChecker(Module):
    """Sink that compares every beat with the selected pattern; always ready.

    Attributes
    ----------
    sink : stream.Endpoint(dma_layout), input
        Data read by the DMA reader.
    restart : Signal(), input
        Restart the expected stream and zero the counters below.
    pattern : Signal(8), input
    errors : Signal(32), output
        Mismatching 32-bit words (as :class:`~busprobe.protocol.patterns.CheckResult`).
    first_error_offset : Signal(32), output
        Stream byte offset of the first mismatching byte, all ones if none.
    bytes : Signal(32), output
        Bytes checked since the last restart (wraps).
    """

    def __init__(self, data_width=64):
        nbytes = data_width // 8
        words = data_width // 32
        self.sink = stream.Endpoint(dma_layout(data_width))
        self.restart = Signal()
        self.pattern = Signal(8)
        self.errors = Signal(32)
        self.first_error_offset = Signal(32, reset=0xFFFF_FFFF)
        self.bytes = Signal(32)

        self.sequencer = seq = _PatternSequencer(data_width)
        self.submodules += seq
        fire = self.sink.valid & self.sink.ready
        self.comb += [
            self.sink.ready.eq(1),
            seq.pattern.eq(self.pattern),
            seq.restart.eq(self.restart),
            seq.advance.eq(fire),
        ]

        byte_bad = Signal(nbytes)
        word_bad = Signal(words)
        self.comb += [
            byte_bad[i].eq(self.sink.data[8 * i:8 * i + 8] != seq.value[8 * i:8 * i + 8])
            for i in range(nbytes)
        ]
        self.comb += [word_bad[w].eq(byte_bad[4 * w:4 * w + 4] != 0) for w in range(words)]
        bad_count = Signal(max=words + 1)
        self.comb += bad_count.eq(reduce(lambda a, b: a + b, [word_bad[w] for w in range(words)]))
        # Priority encoder: index of the lowest mismatching byte.
        first_bad = Signal(max=nbytes)
        for i in reversed(range(nbytes)):
            self.comb += If(byte_bad[i], first_bad.eq(i))
        have_error = Signal()
        self.sync += If(self.restart,
            self.errors.eq(0),
            self.first_error_offset.eq(0xFFFF_FFFF),
            self.bytes.eq(0),
            have_error.eq(0),
        ).Elif(fire,
            self.bytes.eq(self.bytes + nbytes),
            self.errors.eq(self.errors + bad_count),
            If((byte_bad != 0) & ~have_error,
                have_error.eq(1),
                self.first_error_offset.eq(self.bytes + first_bad),
            ),
        )
