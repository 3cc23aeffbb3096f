"""The PCIe core's pattern generator and checker produce/expect exactly protocol.patterns."""

from __future__ import annotations

import pytest
from busprobe.gateware.pcie.pattern import PatternChecker, PatternGenerator, prbs31_unrolled_taps
from busprobe.protocol.patterns import PRBS31_SEED, Pattern, PatternStream, prbs31_bitserial
from migen.sim import run_simulation

BEATS = 40


def test_unrolled_prbs31_taps_match_the_bit_serial_reference():
    outputs, _ = prbs31_unrolled_taps(96)
    history = [(PRBS31_SEED >> i) & 1 for i in range(31)]
    bits = [sum(history[i] for i in taps) & 1 for taps in outputs]
    assert bits == prbs31_bitserial(96)


def _beats_to_bytes(beats: list[int]) -> bytes:
    return b"".join(beat.to_bytes(8, "little") for beat in beats)


@pytest.mark.parametrize("pattern", list(Pattern))
def test_generator_streams_the_protocol_pattern_and_restarts(pattern):
    dut = PatternGenerator(64)
    beats: list[int] = []

    def bench():
        yield dut.pattern.eq(int(pattern))
        yield dut.source.ready.eq(1)
        yield dut.enable.eq(1)
        for cycle in range(BEATS):
            # Backpressure every third cycle: the stream must not skip or repeat words.
            yield dut.source.ready.eq(cycle % 3 != 2)
            yield
            if (yield dut.source.valid) and (yield dut.source.ready):
                beats.append((yield dut.source.data))
        yield dut.restart.eq(1)
        yield
        yield dut.restart.eq(0)
        yield dut.source.ready.eq(1)
        yield
        beats.append((yield dut.source.data))

    run_simulation(dut, bench())
    *stream, after_restart = beats
    assert _beats_to_bytes(stream) == PatternStream(pattern).take(8 * len(stream))
    assert _beats_to_bytes([after_restart]) == PatternStream(pattern).take(8)


@pytest.mark.parametrize("pattern", list(Pattern))
def test_checker_counts_each_bad_word_once_and_the_first_bad_byte(pattern):
    dut = PatternChecker(64)
    data = bytearray(PatternStream(pattern).take(8 * BEATS))
    data[8 * 5 + 6] ^= 0xFF  # word 11
    data[8 * 9 + 0] ^= 0x01  # word 18 ...
    data[8 * 9 + 4] ^= 0x01  # ... and word 19 of the same beat
    result = {}

    def bench():
        yield dut.pattern.eq(int(pattern))
        yield dut.restart.eq(1)
        yield
        yield dut.restart.eq(0)
        for i in range(BEATS):
            yield dut.sink.valid.eq(i % 4 != 3)  # idle beats must not advance the pattern
            yield dut.sink.data.eq(int.from_bytes(data[8 * i:8 * i + 8], "little"))
            if i % 4 == 3:
                yield
                yield dut.sink.valid.eq(1)
            yield
        yield dut.sink.valid.eq(0)
        yield
        result["errors"] = yield dut.errors
        result["first"] = yield dut.first_error_offset
        result["bytes"] = yield dut.bytes

    run_simulation(dut, bench())
    assert result == {"errors": 3, "first": 8 * 5 + 6, "bytes": 8 * BEATS}
