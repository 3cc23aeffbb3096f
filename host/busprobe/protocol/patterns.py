"""Data patterns streamed by the device and checked by the host (and vice versa).

A pattern is an endless byte stream made of 32-bit little-endian words. Both ends restart it when
the host selects a pattern (:data:`~busprobe.protocol.usb2.Request.SET_PATTERN`), and it then
continues across packets and transfers, so lost, duplicated or reordered data is detected, not only
corrupted bytes.

``COUNTER``
    Word ``k`` is ``k mod 2**32``.
``PRBS31``
    The bit sequence ``b[n] = b[n-31] ^ b[n-28]`` (polynomial x^31 + x^28 + 1) seeded with
    ``b[-31..-1] = 1``; word ``k`` holds bits ``b[32k] .. b[32k+31]``, ``b[32k]`` in the LSB.
    The gateware computes one word per clock with the same recurrence unrolled 32 times.

One more byte pattern is not a stream but a packet shape, the one Linux's usbtest checks IN data
against (``pattern=1``, as gadget zero sends it): :func:`mod63_bytes`, byte ``i`` of a transfer
being ``(i % max_packet) % 63``, so every packet starts again at 0. A USB device sends it in its
MOD63 data mode (:data:`~busprobe.protocol.usb2.DataMode.MOD63`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# numpy is imported where the words are made or compared, not with this module: every busprobe
# command imports it (through the transport), and numpy was most of a command's start-up (about
# half of `busprobe list`'s import time on the host, seconds of it in an emulated guest).

__all__ = ["Pattern", "PatternStream", "CheckResult", "PRBS31_SEED", "prbs31_words",
           "NO_ERROR_OFFSET", "MOD63_MODULUS", "mod63_bytes"]

PRBS31_SEED = 0x7FFF_FFFF
#: What a device's checker reports as ``first_error_offset`` while it has seen no mismatch (both
#: the USB2 and the PCIe telemetry blocks use it; the host decodes it to None).
NO_ERROR_OFFSET = 0xFFFF_FFFF
#: The modulus of usbtest's and gadget zero's "mod63" pattern (drivers/usb/misc/usbtest.c:
#: ``simple_check_buf``, ``pattern=1``).
MOD63_MODULUS = 63
_MASK31 = (1 << 31) - 1
_MASK28 = (1 << 28) - 1


class Pattern(enum.IntEnum):
    """Pattern identifiers, as sent in ``wValue`` of SET_PATTERN and stored in PCIe CSRs."""

    COUNTER = 0
    PRBS31 = 1

    @classmethod
    def parse(cls, text: str) -> Pattern:
        try:
            return cls[text.upper().replace("-", "")]
        except KeyError:
            names = ", ".join(p.name.lower() for p in cls)
            raise ValueError(f"unknown pattern {text!r} (choose from {names})") from None


def prbs31_step(history: int) -> tuple[int, int]:
    """Advance PRBS-31 by one 32-bit word.

    ``history`` holds the last 31 bits, oldest in bit 0. Returns ``(word, new_history)``.
    Computes 28 bits at once (the recurrence's shortest distance is 28), then 4 more.
    """
    low = (history ^ (history >> 3)) & _MASK28
    history = (history >> 28) | (low << 3)
    high = (history ^ (history >> 3)) & 0xF
    history = ((history >> 4) | (high << 27)) & _MASK31
    return low | (high << 28), history


def prbs31_bitserial(nbits: int, history: int = PRBS31_SEED) -> list[int]:
    """Reference: the PRBS-31 bit sequence one bit at a time (slow; for tests)."""
    bits = []
    for _ in range(nbits):
        bit = (history ^ (history >> 3)) & 1
        history = (history >> 1) | (bit << 30)
        bits.append(bit)
    return bits


def prbs31_words(count: int, history: int = PRBS31_SEED) -> tuple[np.ndarray, int]:
    """``count`` PRBS-31 words and the history that continues after them."""
    import numpy as np

    out = np.empty(count, dtype=np.uint32)
    for i in range(count):
        out[i], history = prbs31_step(history)
    return out, history


def mod63_bytes(length: int, max_packet: int) -> bytes:
    """A transfer of ``length`` bytes in usbtest's mod-63 pattern: byte ``i`` is
    ``(i % max_packet) % 63``; each packet of ``max_packet`` bytes (and a short one that ends a
    transfer) starts again at 0."""
    if length < 0 or max_packet < 1:
        raise ValueError(f"no mod-63 transfer of {length} bytes in {max_packet}-byte packets")
    packet = bytes(i % MOD63_MODULUS for i in range(max_packet))
    return (packet * (length // max_packet + 1))[:length]


@dataclass
class CheckResult:
    """Outcome of checking a chunk of received data against the expected stream.

    Attributes
    ----------
    errors : int
        Number of mismatching 32-bit words (a partial word counts as one word).
    first_error_offset : int or None
        Byte offset, from the start of the stream, of the first mismatching byte.
    """

    errors: int = 0
    first_error_offset: int | None = None

    def merge(self, other: CheckResult) -> None:
        self.errors += other.errors
        if self.first_error_offset is None:
            self.first_error_offset = other.first_error_offset


@dataclass
class PatternStream:
    """The expected byte stream of one pattern, consumed in arbitrary chunk sizes.

    Used by the host both to generate OUT/write data and to check IN/read data; the simulation
    models use it as their reference too.

    Parameters
    ----------
    pattern : Pattern
        Which pattern to produce.
    """

    pattern: Pattern = Pattern.COUNTER
    offset: int = 0  # bytes produced so far
    _word: int = 0  # index of the next word to produce
    _history: int = PRBS31_SEED
    _tail: bytes = field(default=b"", repr=False)  # bytes of a word split across chunks

    def restart(self) -> None:
        self.offset, self._word, self._history, self._tail = 0, 0, PRBS31_SEED, b""

    def _words(self, count: int) -> bytes:
        import numpy as np

        if self.pattern == Pattern.COUNTER:
            words = np.arange(self._word, self._word + count, dtype=np.uint64).astype("<u4")
        else:
            words, self._history = prbs31_words(count, self._history)
            words = words.astype("<u4")
        self._word += count
        return words.tobytes()

    def take(self, length: int) -> bytes:
        """The next ``length`` bytes of the stream."""
        if length < 0:
            raise ValueError("length must not be negative")
        head, self._tail = self._tail[:length], self._tail[length:]
        need = length - len(head)
        data = head
        if need:
            words = self._words((need + 3) // 4)
            data += words[:need]
            self._tail = words[need:]
        self.offset += length
        return data

    def check(self, data: bytes | bytearray | memoryview) -> CheckResult:
        """Compare received ``data`` with the next bytes of the stream (which it consumes)."""
        start = self.offset
        expected = self.take(len(data))
        if expected == data:
            return CheckResult()
        import numpy as np

        got = np.frombuffer(bytes(data), dtype=np.uint8)
        exp = np.frombuffer(expected, dtype=np.uint8)
        bad = np.nonzero(got != exp)[0]
        words = np.unique((start + bad) // 4)
        return CheckResult(errors=int(words.size), first_error_offset=int(start + bad[0]))
