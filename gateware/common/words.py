"""Bytes as the 32-bit words of a memory's initial contents."""

__all__ = ["little_endian_words"]


def little_endian_words(raw: bytes) -> list[int]:
    """``raw`` as little-endian 32-bit words, the last padded with zero bytes (how the host
    reads a block RAM's words back: a word's lowest byte first)."""
    padded = raw + bytes(-len(raw) % 4)
    return [int.from_bytes(padded[i:i + 4], "little") for i in range(0, len(padded), 4)]
