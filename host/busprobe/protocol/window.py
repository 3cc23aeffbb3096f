"""The device-timed window both USB telemetry layouts carry: bytes and bus intervals (USB 2.0
microframes, SuperSpeed ITP intervals) at the end of the first and of the second-to-last
interval with data in a direction."""

from __future__ import annotations

__all__ = ["whole_interval_window"]


def whole_interval_window(raw: dict[str, int], direction: str, interval: str,
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
