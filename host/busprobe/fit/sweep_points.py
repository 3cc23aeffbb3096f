"""Reading a USB 3.0 or PCIe result for ``busprobe fit``: its points as the fit compares them.

The same refusals as the USB 2.0 fit (:mod:`.observations`), in one line each: a result of
another bus, an incomplete one, one with data errors, one whose points do not record their
transfers per repeat (the run model needs them). Each point keeps its median, the repeats'
spread and, where the device counted cycles, the *tail* of every repeat: the host's seconds
less the device's first-to-last data span (``{direction}_first_cycle`` / ``_last_cycle`` for
SuperSpeed, ``wr_``/``rd_first_cycle`` / ``_last_cycle`` for PCIe), the start-up and the last
completion's latency.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocol.names import Framing
from ..result_schema import protocol_of
from ..results import load_results
from .bounded import Point

__all__ = ["SweepPoints", "read_points"]

WRAP = 1 << 32


@dataclass(frozen=True)
class SweepPoints:
    """A result the fit accepted: its points, the raw documents' points (for telemetry), the
    bus and the selector."""

    path: str
    device: str
    bus: dict[str, Any]
    points: tuple[Point, ...]
    raw: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def telemetry(self, key: str, direction: str | None = None) -> list[int]:
        """Every repeat's value of telemetry word ``key`` (of ``direction``'s points)."""
        values = []
        for point in self.raw:
            if direction is not None and point["direction"] != direction:
                continue
            for counters in point.get("telemetry_repeats") or [point.get("telemetry") or {}]:
                value = (counters or {}).get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    values.append(value)
        return values


def read_points(path: str | Path, kind: str, clock_hz: float,
                span_keys: dict[str, tuple[str, str]]) -> SweepPoints:
    """The points of the ``kind`` result at ``path`` (one-line :class:`ValueError` if the fit
    cannot take it); ``span_keys`` names each direction's first/last data cycle counters."""
    shown = str(path)
    doc = load_results(path)
    found = (doc.get("bus") or {}).get("kind")
    if found != kind:
        raise ValueError(f"{shown} is a {found or 'bus-less'} sweep, not {kind}")
    if protocol_of(doc) != Framing.STREAM:
        raise ValueError(f"{shown} is a --protocol {protocol_of(doc)} sweep: fit needs streamed "
                         "transfers")
    if doc.get("complete") is False:
        raise ValueError(f"{shown} is incomplete ({doc.get('error') or 'stopped early'}): fit "
                         "needs a finished sweep, run it again")
    bad = [p for p in doc["points"] if p.get("errors")]
    if bad or doc.get("errors"):
        raise ValueError(f"{shown} has data errors in {len(bad)} point(s): its figures cannot be "
                         "trusted, fit refuses it")
    usable = [p for p in doc["points"] if p["direction"] in span_keys]
    missing = [p for p in usable if not isinstance(p.get("transfers"), int)]
    if missing or not usable:
        raise ValueError(f"{shown} has {'no ' if not usable else ''}points without their "
                         "transfers per repeat: fit steps each run as the sweep made it, sweep "
                         "again with this busprobe")
    points = tuple(_point(p, clock_hz, span_keys[p["direction"]]) for p in usable)
    return SweepPoints(shown, str(doc.get("device") or ""), dict(doc["bus"]), points,
                       tuple(usable))


def _point(point: dict[str, Any], clock_hz: float, keys: tuple[str, str]) -> Point:
    median = float(point["throughput"])
    spread = (point["throughput_max"] - point["throughput_min"]) / median if median else 0.0
    tails = []
    seconds = point.get("seconds") or []
    repeats = point.get("telemetry_repeats") or []
    for host, counters in zip(seconds, repeats, strict=False):
        first, last = (counters or {}).get(keys[0]), (counters or {}).get(keys[1])
        if isinstance(first, int) and isinstance(last, int) and last:
            span = ((last - first) % WRAP) / clock_hz
            if 0 < span <= host:
                tails.append(host - span)
    depth = point.get("queue_depth_in_force") or point["queue_depth"]
    label = f"{point['direction']} {point['length']} B qd {point['queue_depth']}" + "".join(
        f" {k} {point[k]}" for k in ("mps", "mrrs") if point.get(k))
    return Point(label, point["direction"], int(point["length"]), int(depth),
                 int(point["transfers"]), median, float(spread),
                 statistics.median(tails) if tails else None,
                 (max(tails) - min(tails)) if tails else 0.0, point.get("mps"),
                 point.get("mrrs"))
