"""The pattern byte streams are exactly what the docstring of busprobe.protocol.patterns defines."""

import pytest
from busprobe.protocol.patterns import (
    Pattern,
    PatternStream,
    prbs31_bitserial,
    prbs31_words,
)


def test_counter_is_little_endian_word_index():
    data = PatternStream(Pattern.COUNTER).take(12)
    assert data == bytes([0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0])


def test_counter_wraps_at_32_bits():
    stream = PatternStream(Pattern.COUNTER, _word=0xFFFF_FFFF)
    assert stream.take(8) == b"\xff\xff\xff\xff\x00\x00\x00\x00"


def test_prbs31_words_match_the_bit_serial_recurrence():
    words, _ = prbs31_words(64)
    bits = prbs31_bitserial(64 * 32)
    expected = [sum(b << i for i, b in enumerate(bits[32 * k:32 * k + 32])) for k in range(64)]
    assert [int(w) for w in words] == expected


def test_prbs31_is_not_trivially_periodic():
    words, _ = prbs31_words(4096)
    assert len(set(int(w) for w in words)) > 4000


@pytest.mark.parametrize("pattern", list(Pattern))
@pytest.mark.parametrize("chunks", [[1, 2, 3, 4, 5, 6, 7], [512] * 3, [511, 1, 1000, 3]])
def test_stream_continues_across_arbitrary_chunk_sizes(pattern, chunks):
    whole = PatternStream(pattern).take(sum(chunks))
    stream = PatternStream(pattern)
    assert b"".join(stream.take(n) for n in chunks) == whole
    assert stream.offset == sum(chunks)


@pytest.mark.parametrize("pattern", list(Pattern))
def test_check_accepts_the_stream_and_counts_one_corrupted_word_once(pattern):
    data = bytearray(PatternStream(pattern).take(4096))
    checker = PatternStream(pattern)
    assert checker.check(data[:1000]).errors == 0
    data[2000] ^= 0xFF
    data[2001] ^= 0x01  # same word: still one error
    result = checker.check(data[1000:])
    assert (result.errors, result.first_error_offset) == (1, 2000)


def test_check_detects_lost_data_as_errors():
    data = PatternStream().take(64)
    result = PatternStream().check(data[4:])  # first word lost: everything after is shifted
    assert result.errors == 15 and result.first_error_offset == 0


def test_restart_returns_to_the_first_word():
    stream = PatternStream(Pattern.PRBS31)
    first = stream.take(16)
    stream.take(100)
    stream.restart()
    assert stream.take(16) == first


def test_pattern_parse_names_the_choices_on_error():
    assert Pattern.parse("prbs-31") is Pattern.PRBS31
    with pytest.raises(ValueError, match="counter, prbs31"):
        Pattern.parse("walking-ones")
