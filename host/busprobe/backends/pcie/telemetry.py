"""Decoding of the busprobe PCIe telemetry counters into :class:`~busprobe.transport.Telemetry`.

The counters and their meaning are :data:`busprobe.protocol.pcie.TELEMETRY`; this module turns
them into per-direction device time, bytes and errors, and adds derived figures (read latency in
ns, backpressure cycles, tag high-water mark, the link faults counted) to ``raw`` for the result
JSON.

A point's device errors are the words the checker found wrong (read) plus every link fault the
device counted during it (:func:`~busprobe.backends.pcie.read_path.link_errors`), whatever the
direction: a point measured while the link misbehaved is flagged, and its figure is left out of
the verdict.
"""

from __future__ import annotations

from ...protocol import pcie as proto
from ...transport import Telemetry
from .read_path import link_errors

__all__ = ["decode_telemetry"]

_MASK32 = 0xFFFF_FFFF


def _span(raw: dict[str, object], first: str, last: str) -> int:
    return (int(raw[last]) - int(raw[first])) & _MASK32


def decode_telemetry(raw: dict[str, object], clock_hz: int, errors_before: int = 0) -> Telemetry:
    """Turn the raw counters into :class:`Telemetry` (per direction seconds/bytes/errors)."""
    t = Telemetry(raw=raw)
    if raw["wr_bytes"]:
        t.device_seconds["write"] = (_span(raw, "wr_first_cycle", "wr_last_cycle") + 1) / clock_hz
        t.device_bytes["write"] = int(raw["wr_bytes"])
    if raw["rd_bytes"]:
        t.device_seconds["read"] = (_span(raw, "rd_first_cycle", "rd_last_cycle") + 1) / clock_hz
        t.device_bytes["read"] = int(raw["rd_bytes"])
    if raw["wr_bytes"] and raw["rd_bytes"]:
        span = _span(raw, "rd_first_cycle", "wr_last_cycle") + 1
        t.device_seconds["loopback"] = span / clock_hz
        t.device_bytes["loopback"] = int(raw["wr_bytes"])
    errors = (int(raw["pattern_errors"]) - errors_before) & _MASK32
    faults = link_errors(raw)
    raw["link_errors"] = faults
    t.errors = {"write": sum(faults.values()), "read": errors + sum(faults.values()),
                "loopback": sum(faults.values())}
    first = int(raw["first_error_offset"])
    t.first_error_offset["read"] = (first if errors and errors_before == 0
                                    and first != proto.NO_ERROR_OFFSET else None)
    count = int(raw["rd_latency_count"])
    if count:
        raw["rd_latency_ns"] = {
            "min": int(raw["rd_latency_min"]) * 1e9 / clock_hz,
            "mean": int(raw["rd_latency_sum"]) / count * 1e9 / clock_hz,
            "max": int(raw["rd_latency_max"]) * 1e9 / clock_hz}
    raw["backpressure_cycles"] = int(raw["tx_stall_cycles"])
    raw["tag_high_water"] = int(raw["rd_outstanding_max"])
    raw["clock_hz"] = clock_hz
    return t
