"""The null disk's LBA pattern: one definition, checked against its formula and its purpose."""

import pytest
from busprobe.protocol.storage import (
    BLOCK_SIZE,
    WORDS_PER_BLOCK,
    check_lba_bytes,
    lba_bytes,
    lba_word,
    lba_words,
)


def test_lba_words_match_the_word_formula_across_the_16_gib_alias():
    for first in (0, 1, (1 << 25) - 1, 1 << 25, (1 << 37) + 5):
        words = lba_words(first, 2)
        for block in range(2):
            for index in (0, 1, WORDS_PER_BLOCK - 1):
                assert words[block * WORDS_PER_BLOCK + index] == lba_word(first + block, index)


def test_a_block_16_gib_away_differs_from_the_one_it_would_alias():
    assert lba_bytes(3, 1) != lba_bytes(3 + (1 << 25), 1)


def test_block_zero_starts_as_a_byte_address_counter():
    assert lba_bytes(0, 1)[:8] == bytes([0, 0, 0, 0, 1, 0, 0, 0])
    assert lba_word(1, 0) == WORDS_PER_BLOCK


def test_check_counts_bad_words_and_names_the_first_bad_byte():
    data = bytearray(lba_bytes(10, 2))
    assert check_lba_bytes(10, data) == (0, None)
    data[BLOCK_SIZE + 6] ^= 1
    data[BLOCK_SIZE + 7] ^= 1
    data[BLOCK_SIZE + 100] ^= 0x80
    assert check_lba_bytes(10, data) == (2, BLOCK_SIZE + 6)
    assert check_lba_bytes(11, lba_bytes(10, 1))[0] == WORDS_PER_BLOCK


def test_partial_blocks_and_negative_addresses_are_refused():
    with pytest.raises(ValueError):
        check_lba_bytes(0, b"\0" * 100)
    with pytest.raises(ValueError):
        lba_words(-1, 1)
    with pytest.raises(ValueError):
        lba_word(0, WORDS_PER_BLOCK)
