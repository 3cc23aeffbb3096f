"""What a fit reads from a USB 2.0 result: its points and the device's telemetry, or a refusal.

A sweep is fitted only when its figures can be trusted and are enough to pin a profile down: a
result with data errors, one that stopped early, one of another bus, or one without a length ladder
at queue depth 1 and at a deeper queue is refused with one line (:class:`ValueError`, which the
command line prints as ``busprobe: error: ...``).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..buses import USB2_HS
from ..protocol.names import USB_DIRECTIONS, Framing
from ..protocol.usb2 import CLOCK_HZ, MAX_PACKET_SIZE
from ..result_schema import protocol_of
from ..results import load_results

__all__ = ["Observation", "SweepData", "read_sweep", "DIRECTIONS", "MIN_SHALLOW_LENGTHS",
           "DEEP_QUEUE"]

#: USB 2.0 bulk directions, named from the host.
DIRECTIONS = USB_DIRECTIONS
#: A direction is fitted from at least this many lengths at queue depth 1 (the turnaround and the
#: gap show in how the curve rises with length: an intercept, a slope and the microframe steps) ...
MIN_SHALLOW_LENGTHS = 3
#: ... and at least one point at this queue depth or deeper, where the turnaround is hidden and
#: the plateau shows the packets per microframe.
DEEP_QUEUE = 4
#: Telemetry words are 32-bit counters that wrap (protocol/usb2.py).
TELEMETRY_WRAP = 1 << 32


@dataclass(frozen=True)
class Observation:
    """One measured point, as the fit compares it with the model.

    Attributes
    ----------
    direction : str
        ``in`` or ``out``.
    length : int
        Transfer length in bytes.
    queue_depth : int
        Transfers outstanding in force (at most the transfers of a repeat).
    transfers : int or None
        Transfers per repeat; ``None`` when the result does not say (then the point is compared
        with the model's steady state).
    throughput : float
        Host-timed median, bytes per second.
    spread : float
        ``(max - min) / median`` of the repeats: how far the point itself scatters.
    seconds : float or None
        Host-timed duration of a repeat (the median's), if the result records it.
    tail : float or None
        Median over the repeats of the host's duration less the device's data span (first data
        packet to last handshake, telemetry): the start-up plus the last completion latency,
        seconds; ``None`` without the device's timestamps.
    tail_spread : float
        Range of that over the repeats, seconds.
    repeats : int
        Repeats the median is of.
    """

    direction: str
    length: int
    queue_depth: int
    transfers: int | None
    throughput: float
    spread: float
    seconds: float | None = None
    tail: float | None = None
    tail_spread: float = 0.0
    repeats: int = 1

    @property
    def label(self) -> str:
        return f"{self.direction} {self.length} B qd {self.queue_depth}"


@dataclass(frozen=True)
class SweepData:
    """A result the fit accepted.

    Attributes
    ----------
    path : str
        The result file, as given.
    points : tuple of Observation
        Every point, in the result's order.
    max_packet_size : int
        Bulk max packet size of the bus swept.
    tokens_max_uframe : dict
        Per direction, the most tokens the device saw in one microframe (telemetry), if it said.
    device_packets_per_uframe : dict
        Per direction, the highest device-timed figure of a deep-queue point in packets per
        microframe (telemetry's whole-microframe window), if the device timed any.
    plan : dict
        The result's ``plan`` (how points were sized), empty when it has none.
    device : str
        The selector swept.
    naks : dict
        Per direction, ``(tokens the device NAKed, tokens)`` over the points' last repeats: a
        device that NAKs shapes the curve too, and the profile then describes both.
    """

    path: str
    points: tuple[Observation, ...]
    max_packet_size: int
    tokens_max_uframe: dict[str, int]
    device_packets_per_uframe: dict[str, float]
    plan: dict[str, Any]
    device: str = ""
    naks: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def directions(self) -> tuple[str, ...]:
        return tuple(d for d in DIRECTIONS if any(p.direction == d for p in self.points))

    def fitted_directions(self) -> tuple[str, ...]:
        """Directions with a ladder at queue depth 1 and a deep-queue point."""
        return tuple(d for d in self.directions if _ladder_ok(self.points, d))


def read_sweep(path: str | Path) -> SweepData:
    """Load ``path`` and keep what the fit uses; :class:`ValueError` (one line) if it cannot be
    fitted: not a USB 2.0 result, incomplete, with data errors, or too few points."""
    shown = str(path)
    doc = load_results(path)
    kind = (doc.get("bus") or {}).get("kind")
    if kind != USB2_HS.kind:
        raise ValueError(f"{shown} is a {kind or 'bus-less'} sweep: fit builds USB 2.0 host "
                         f"profiles and needs a {USB2_HS.kind} result")
    if protocol_of(doc) != Framing.STREAM:
        raise ValueError(f"{shown} is a --protocol {protocol_of(doc)} sweep: fit needs streamed "
                         "transfers (its model has no framing), run the sweep without --protocol")
    if doc.get("complete") is False:
        raise ValueError(f"{shown} is incomplete ({doc.get('error') or 'stopped early'}): fit "
                         "needs a finished sweep, run it again")
    bad = [p for p in doc["points"] if p.get("errors")]
    errors = max(int(doc.get("errors") or 0), sum(int(p["errors"]) for p in bad))
    if errors:
        raise ValueError(f"{shown} has {errors} data error(s) in {len(bad)} point(s): its "
                         "figures cannot be trusted, fit refuses it")
    points = tuple(_observation(p) for p in doc["points"] if p["direction"] in DIRECTIONS)
    if not any(_ladder_ok(points, d) for d in DIRECTIONS):
        found = "; ".join(_ladder_summary(points, d) for d in DIRECTIONS)
        raise ValueError(f"{shown} has too few points to fit ({found}): fit needs, in a "
                         f"direction, {MIN_SHALLOW_LENGTHS} lengths at queue depth 1 and one at "
                         f"queue depth {DEEP_QUEUE} or more (e.g. sweep --lengths 512..256K "
                         f"--queue-depth 1,{DEEP_QUEUE})")
    mps = int(doc["bus"].get("max_packet_size") or MAX_PACKET_SIZE)
    telemetry = [(p["direction"], p.get("telemetry"), _depth(p)) for p in doc["points"]
                 if p["direction"] in DIRECTIONS]
    return SweepData(shown, points, mps, _tokens_max(telemetry),
                     _device_packets(telemetry, mps), dict(doc.get("plan") or {}),
                     str(doc.get("device") or ""), _naks(telemetry))


def _depth(point: dict[str, Any]) -> int:
    in_force = point.get("queue_depth_in_force")
    return int(in_force) if isinstance(in_force, int) and in_force >= 1 else point["queue_depth"]


def _observation(point: dict[str, Any]) -> Observation:
    transfers = point.get("transfers")
    count = transfers if isinstance(transfers, int) and transfers >= 1 else None
    median = float(point["throughput"])
    spread = (point["throughput_max"] - point["throughput_min"]) / median if median else 0.0
    tails = _tails(point)
    seconds = count * point["length"] / median if count and median else None
    return Observation(point["direction"], point["length"], _depth(point), count, median,
                       float(spread), seconds, statistics.median(tails) if tails else None,
                       max(tails) - min(tails) if tails else 0.0, _repeats(point))


def _repeats(point: dict[str, Any]) -> int:
    repeats = point.get("repeats")
    samples = point.get("samples")
    if isinstance(repeats, int) and not isinstance(repeats, bool) and repeats >= 1:
        return repeats
    return len(samples) if isinstance(samples, list) and samples else 1


def _tails(point: dict[str, Any]) -> list[float]:
    """Per repeat with both figures: host seconds less the device's first-to-last data span."""
    seconds = point.get("seconds")
    repeats = point.get("telemetry_repeats")
    if not isinstance(seconds, list):
        return []
    if not isinstance(repeats, list) or len(repeats) != len(seconds):
        repeats, seconds = [point.get("telemetry")], seconds[-1:]  # the last repeat's counters
    direction = point["direction"]
    tails = []
    for host, counters in zip(seconds, repeats, strict=True):
        first = _count(counters, f"{direction}_first_cycle")
        last = _count(counters, f"{direction}_last_cycle")
        if not isinstance(host, int | float) or first is None or last is None or not last:
            continue
        span = ((last - first) % TELEMETRY_WRAP) / CLOCK_HZ  # 32-bit counters wrap
        if 0 < span <= host:
            tails.append(host - span)
    return tails


def _ladder_ok(points: tuple[Observation, ...], direction: str) -> bool:
    shallow = {p.length for p in points if p.direction == direction and p.queue_depth == 1
               and p.throughput > 0}
    deep = [p for p in points if p.direction == direction and p.queue_depth >= DEEP_QUEUE
            and p.throughput > 0]
    return len(shallow) >= MIN_SHALLOW_LENGTHS and bool(deep)


def _ladder_summary(points: tuple[Observation, ...], direction: str) -> str:
    shallow = {p.length for p in points if p.direction == direction and p.queue_depth == 1}
    deep = {p.length for p in points if p.direction == direction and p.queue_depth >= DEEP_QUEUE}
    return (f"{direction}: {len(shallow)} length(s) at queue depth 1, {len(deep)} at "
            f"{DEEP_QUEUE} or more")


def _count(telemetry: Any, key: str) -> int | None:
    value = telemetry.get(key) if isinstance(telemetry, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None


def _tokens_max(telemetry: list[tuple[str, Any, int]]) -> dict[str, int]:
    """The most tokens per microframe the device saw per direction (NAKed ones count too; the
    always-ready device NAKs none, so this is the host's packets per microframe)."""
    most: dict[str, int] = {}
    for direction, counters, _ in telemetry:
        value = _count(counters, f"{direction}_tokens_max_uframe")
        if value:
            most[direction] = max(most.get(direction, 0), value)
    return most


def _naks(telemetry: list[tuple[str, Any, int]]) -> dict[str, tuple[int, int]]:
    """Per direction, NAKed tokens and all tokens the device counted (last repeats)."""
    counts: dict[str, tuple[int, int]] = {}
    for direction, counters, _ in telemetry:
        naks = _count(counters, f"{direction}_naks")
        tokens = _count(counters, f"{direction}_tokens")
        if naks is not None and tokens:
            before = counts.get(direction, (0, 0))
            counts[direction] = (before[0] + naks, before[1] + tokens)
    return counts


def _device_packets(telemetry: list[tuple[str, Any, int]], mps: int) -> dict[str, float]:
    """The device-timed plateau of the deep-queue points, in packets per microframe: bytes within
    the whole-microframe window over its microframes (docs/DESIGN.md §2.4, Timing)."""
    best: dict[str, float] = {}
    for direction, counters, depth in telemetry:
        if depth < DEEP_QUEUE:
            continue
        start_b = _count(counters, f"{direction}_window_start_bytes")
        end_b = _count(counters, f"{direction}_window_end_bytes")
        start_u = _count(counters, f"{direction}_window_start_uframe")
        end_u = _count(counters, f"{direction}_window_end_uframe")
        if None in (start_b, end_b, start_u, end_u) or end_u <= start_u:  # type: ignore[operator]
            continue
        rate = (end_b - start_b) / (end_u - start_u) / mps  # type: ignore[operator]
        if math.isfinite(rate) and rate > best.get(direction, 0.0):
            best[direction] = rate
    return best

