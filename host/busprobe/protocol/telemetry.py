"""The GET_TELEMETRY block of the busprobe USB devices: one codec for every layout.

A USB device (USB 2.0 and SuperSpeed alike) answers GET_TELEMETRY with its counters as 32-bit
little-endian words in the order its layout names them, the first two being the protocol's
magic and version. :class:`TelemetryLayout` is that block for one layout (``protocol.usb2``,
``protocol.usb3``): its size, word index, pack/unpack, and the device-timed window both layouts
carry (bytes and bus intervals — USB 2.0 microframes, SuperSpeed ITP intervals — at the end of
the first and of the second-to-last interval with data in a direction).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["TelemetryLayout", "whole_interval_window"]


def whole_interval_window(raw: Mapping[str, int], direction: str, interval: str,
                          per_second: float) -> tuple[int, float] | None:
    """Bytes and seconds of ``direction``'s window, from the words
    ``{direction}_window_{start,end}_{bytes,<interval>}`` (32-bit, wrapping).

    None when the data touched fewer than three intervals (no whole interval to time).
    """
    intervals = (raw[f"{direction}_window_end_{interval}"]
                 - raw[f"{direction}_window_start_{interval}"]) & 0xFFFF_FFFF
    if not intervals:
        return None
    moved = (raw[f"{direction}_window_end_bytes"]
             - raw[f"{direction}_window_start_bytes"]) & 0xFFFF_FFFF
    return moved, intervals / per_second


@dataclass(frozen=True)
class TelemetryLayout:
    """One telemetry block.

    Attributes
    ----------
    words : tuple of (name, description)
        The counters in block order.
    magic : int
        What ``words[0]`` must read: the bitstream speaks this protocol.
    speaks : str
        How an error names the protocol ("this protocol", "the USB3 protocol").
    interval, intervals_per_second : str, float
        The device-timed window's bus interval (the ``{direction}_window_*_<interval>`` words)
        and its rate.
    initial : mapping
        Words that do not start at 0 (what CLEAR_TELEMETRY restores them to), for models.
    """

    words: tuple[tuple[str, str], ...]
    magic: int
    speaks: str
    interval: str
    intervals_per_second: float
    initial: Mapping[str, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.words)

    @property
    def size(self) -> int:
        return 4 * self.count

    @property
    def index(self) -> dict[str, int]:
        return {name: index for index, (name, _) in enumerate(self.words)}

    @property
    def _format(self) -> str:
        return f"<{self.count}I"

    def unpack(self, data: bytes) -> dict[str, int]:
        """Decode a GET_TELEMETRY block; raises ValueError if it is not this layout."""
        if len(data) != self.size:
            raise ValueError(f"telemetry block is {len(data)} bytes, expected {self.size}")
        values = struct.unpack(self._format, data)
        result = dict(zip((name for name, _ in self.words), values, strict=True))
        if result["magic"] != self.magic:
            raise ValueError(f"telemetry magic {result['magic']:#010x} is not {self.magic:#010x}:"
                             f" the bitstream does not speak {self.speaks}")
        return result

    def pack(self, values: Mapping[str, int]) -> bytes:
        """Inverse of :meth:`unpack` (for tests and models); absent words take their initial
        value (:attr:`initial`, else 0)."""
        return struct.pack(self._format, *(values.get(name, self.initial.get(name, 0))
                                           & 0xFFFF_FFFF for name, _ in self.words))

    def window(self, raw: Mapping[str, int], direction: str) -> tuple[int, float] | None:
        """Bytes and seconds of the device's whole-interval window for ``direction``, or None
        when the data touched fewer than three bus intervals."""
        return whole_interval_window(raw, direction, self.interval, self.intervals_per_second)
