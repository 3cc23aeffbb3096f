"""The null disk's contract: what every logical block holds, and how the disk names itself.

The storage personality of the USB device (issue 28) is a SCSI block device that stores
nothing: a read returns what the block's address says it holds, a write is checked against the
same and its mismatches are counted. The host's block-device sweep checks reads against it and
writes it, and before it writes anything it makes sure the disk *is* a busprobe null disk
(:data:`INQUIRY_VENDOR`, :data:`INQUIRY_PRODUCT`, and blocks that hold this pattern): it must
never write to a real disk.

The LBA pattern
    A block is :data:`BLOCK_SIZE` bytes, read as 32-bit little-endian words. Word ``k`` of the
    block at logical block address ``L`` is ``((L << 7) | k) ^ (L >> 25)`` taken modulo 2**32
    (:func:`lba_word`): the first term is the byte address divided by four, a counter every
    gateware can make from the LBA of a command and a word count; the second makes a block 2**25
    blocks (16 GiB) further on differ from this one, so a read landing at the wrong address is
    seen on a disk larger than the first term can count.

A disk that returns this at LBA 0 and at its last LBA, and whose INQUIRY says it is busprobe's,
is a null disk; no other disk is written to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BLOCK_SIZE", "WORDS_PER_BLOCK", "INQUIRY_VENDOR", "INQUIRY_PRODUCT",
           "DEFAULT_CAPACITY_BLOCKS", "lba_word", "lba_words", "lba_bytes", "check_lba_bytes"]

#: Bytes per logical block (READ CAPACITY's block length).
BLOCK_SIZE = 512
WORDS_PER_BLOCK = BLOCK_SIZE // 4
_WORD_SHIFT = 7  # log2(WORDS_PER_BLOCK)
#: Blocks after which the first term of the pattern repeats (2**32 words).
_ALIAS_SHIFT = 32 - _WORD_SHIFT
_MASK32 = 0xFFFF_FFFF

#: INQUIRY's T10 vendor identification (8 bytes, space padded) and product identification
#: (16 bytes): the first half of what makes a block device a busprobe null disk.
INQUIRY_VENDOR = b"BUSPROBE"
INQUIRY_PRODUCT = b"NULL DISK       "
#: The default capacity: 64 GiB, larger than any test writes, since nothing is stored.
DEFAULT_CAPACITY_BLOCKS = (64 << 30) // BLOCK_SIZE


def lba_word(lba: int, index: int) -> int:
    """Word ``index`` (0..127) of the block at ``lba``."""
    if not 0 <= index < WORDS_PER_BLOCK or lba < 0:
        raise ValueError(f"no word {index} of block {lba}")
    return (((lba << _WORD_SHIFT) | index) ^ (lba >> _ALIAS_SHIFT)) & _MASK32


def lba_words(first_lba: int, blocks: int) -> np.ndarray:
    """The words of ``blocks`` blocks from ``first_lba`` on (uint32, native order)."""
    if first_lba < 0 or blocks < 0:
        raise ValueError(f"no {blocks} blocks at LBA {first_lba}")
    import numpy as np  # here, not at import: busprobe.protocol.patterns says why

    lbas = np.arange(first_lba, first_lba + blocks, dtype=np.uint64)
    index = np.arange(WORDS_PER_BLOCK, dtype=np.uint64)
    address = (lbas[:, None] << np.uint64(_WORD_SHIFT)) | index[None, :]
    alias = (lbas >> np.uint64(_ALIAS_SHIFT))[:, None]
    return ((address ^ alias) & np.uint64(_MASK32)).astype(np.uint32).reshape(-1)


def lba_bytes(first_lba: int, blocks: int) -> bytes:
    """The bytes a null disk holds in ``blocks`` blocks from ``first_lba`` on."""
    return lba_words(first_lba, blocks).astype("<u4").tobytes()


def check_lba_bytes(first_lba: int, data: bytes | bytearray | memoryview) -> tuple[int, int | None]:
    """Compare ``data`` read from ``first_lba`` on with what the disk holds.

    Returns ``(bad_words, first_bad_byte)``: the mismatching 32-bit words and the byte offset
    (from the start of ``data``) of the first mismatching byte, or ``(0, None)``. ``data`` must be
    whole blocks.
    """
    if len(data) % BLOCK_SIZE:
        raise ValueError(f"{len(data)} bytes are not whole {BLOCK_SIZE}-byte blocks")
    import numpy as np

    expected = np.frombuffer(lba_bytes(first_lba, len(data) // BLOCK_SIZE), dtype=np.uint8)
    got = np.frombuffer(bytes(data), dtype=np.uint8)
    bad = np.nonzero(got != expected)[0]
    if not bad.size:
        return 0, None
    return int(np.unique(bad // 4).size), int(bad[0])
