"""Bytes as the 32-bit words of a memory's initial contents, and where an answer sits in them."""

from dataclasses import dataclass

__all__ = ["little_endian_words", "Reply"]


def little_endian_words(raw: bytes) -> list[int]:
    """``raw`` as little-endian 32-bit words, the last padded with zero bytes (how the host
    reads a block RAM's words back: a word's lowest byte first)."""
    padded = raw + bytes(-len(raw) % 4)
    return [int.from_bytes(padded[i:i + 4], "little") for i in range(0, len(padded), 4)]


@dataclass(frozen=True)
class Reply:
    """Where one constant answer starts in the snapshot RAM, and how long it is.

    Attributes
    ----------
    word: int
        Snapshot RAM word of its first byte.
    length: int
        Bytes (the data stage sends at most this, and at most the request's ``wLength``).
    """

    word: int
    length: int
