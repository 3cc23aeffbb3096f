"""The sweep engine: measure throughput over lengths × queue depths × directions × bus settings.

Bus-agnostic: it sees the device only through :class:`~busprobe.transport.Transport`. For every
point it keeps ``queue_depth`` transfers outstanding, moves at least
``max(transport.min_transfers transfers, transport.min_bytes)`` bytes, repeats that at least
:data:`~busprobe.stats.MIN_REPEATS` times (telemetry cleared before, read after each repeat), and
checks every byte the device sends against the pattern, which both ends restart once at the start
and continue across transfers and points. A point with errors is kept and flagged; after one, the
pattern is restarted on both ends so one fault does not spill into the following points.

Errors of a point = pattern mismatches the host found (32-bit words) + bytes lost or duplicated
(moved ≠ asked, by the transport's and the sink's count) + bytes the device counted beyond or
short of what was asked + errors the device's checker found.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import limits
from .point_models import link_model, model_ceiling
from .protocol.patterns import CheckResult, Pattern, PatternStream
from .stats import MIN_REPEATS, median_or_none, summarise
from .transport import RepeatFailed, StreamResult, Telemetry, Transport

__all__ = ["SweepPlan", "PointSpec", "PointResult", "Sweep", "INCOMING", "model_ceiling"]

log = logging.getLogger(__name__)

#: Directions in which the device sends and the host checks (the transport calls the sink).
#: ``loopback`` returns what the host sent, so it is checked too.
INCOMING = frozenset({"in", "write", "loopback"})


@dataclass(frozen=True)
class PointSpec:
    """One point of a sweep: what to measure, before it is measured."""

    direction: str
    length: int
    queue_depth: int
    settings: tuple[tuple[str, int], ...] = ()  # bus settings in force, e.g. (("mps", 256),)

    @property
    def setting(self) -> dict[str, int]:
        return dict(self.settings)


@dataclass(frozen=True)
class SweepPlan:
    """Everything a sweep will do, fixed and checked before any data moves.

    Attributes
    ----------
    directions : tuple of str
        Transport directions, in the order swept.
    lengths : tuple of int
        Transfer lengths in bytes.
    queue_depths : tuple of int
        Transfers kept outstanding.
    repeat : int
        Repeats of each point (at least :data:`~busprobe.stats.MIN_REPEATS`).
    settings : tuple of dict
        Bus settings to apply with :meth:`Transport.configure` in turn (``{}`` = leave as is).
    pattern : Pattern
        Data pattern streamed and checked.
    """

    directions: tuple[str, ...]
    lengths: tuple[int, ...]
    queue_depths: tuple[int, ...]
    repeat: int = MIN_REPEATS
    settings: tuple[dict[str, int], ...] = ({},)
    pattern: Pattern = Pattern.COUNTER

    def __post_init__(self) -> None:
        if self.repeat < MIN_REPEATS:
            raise ValueError(f"--repeat must be at least {MIN_REPEATS}, not {self.repeat} "
                             "(the median needs three runs to ignore an outlier)")
        for name in ("directions", "lengths", "queue_depths", "settings"):
            if not getattr(self, name):
                raise ValueError(f"nothing to sweep: no {name.replace('_', ' ')}")
        limits.check_repeat(self.repeat)
        limits.check_lengths(self.lengths)
        limits.check_queue_depths(self.queue_depths)
        limits.check_queued(self.lengths, self.queue_depths)
        limits.check_points(len(self.directions) * len(self.lengths) * len(self.queue_depths)
                            * len(self.settings))

    def points(self) -> list[PointSpec]:
        """Points in run order: settings, then direction, queue depth and length."""
        return [PointSpec(d, n, q, tuple(sorted(s.items())))
                for s, d, q, n in itertools.product(self.settings, self.directions,
                                                    self.queue_depths, self.lengths)]

    def validate(self, transport: Transport, *, simulated: bool = False) -> None:
        """Ask the transport about every point, and hold each to the bytes a point may move
        (:mod:`busprobe.limits`; ``simulated``: a simulation's bound); raises before anything
        runs."""
        sizing = Sweep(transport, self)
        for spec in self.points():
            transport.validate(spec.direction, spec.length, spec.queue_depth)
            # Sized without the model's bus-time cap, which can only lower the count.
            count, _ = sizing.transfers_for(spec.length, spec.queue_depth)
            limits.check_point_bytes(
                self.repeat * count * spec.length, simulated=simulated,
                what=f"{spec.direction} {spec.length} B at queue depth {spec.queue_depth} "
                     f"({self.repeat} repeats of {count} transfers)")


@dataclass
class PointResult:
    """One measured point (see ``results.py`` for its JSON form).

    Throughputs are bytes per second; ``samples`` are host-timed (first submission to last
    completion), ``device_samples`` timed by the device's own counters (``None`` without them).
    """

    spec: PointSpec
    transfers: int  # per repeat
    bytes_per_repeat: int
    sized_by: str  # what set the transfer count (Sweep.transfers_for)
    samples: list[float]
    device_samples: list[float | None]
    seconds: list[float]
    mismatched_words: int
    lost_bytes: int
    device_byte_mismatch: int
    device_errors: int
    first_error_offset: int | None
    short_transfers: int
    telemetry: list[dict[str, Any]]
    ceiling: float | None = None
    ceiling_formula: str | None = None
    link: float | None = None
    #: Why each failed repeat failed (:class:`~busprobe.transport.RepeatFailed`); each one
    #: counts all its bytes as lost, and ``samples`` hold the other repeats only.
    failed_repeats: list[str] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return (self.mismatched_words + self.lost_bytes + self.device_byte_mismatch
                + self.device_errors)

    def to_json(self) -> dict[str, Any]:
        host = summarise(self.samples)
        device = [s for s in self.device_samples if s is not None]
        setting = self.spec.setting
        return {
            "direction": self.spec.direction,
            "length": self.spec.length,
            "queue_depth": self.spec.queue_depth,
            # A repeat of fewer transfers than the queue depth never fills the queue.
            "queue_depth_in_force": min(self.spec.queue_depth, self.transfers),
            "mps": setting.get("mps"),
            "mrrs": setting.get("mrrs"),
            "throughput": host.median,
            "throughput_min": host.minimum,
            "throughput_max": host.maximum,
            "spread": host.spread,
            "repeats": host.count,
            "samples": list(self.samples),
            "device_throughput": median_or_none(self.device_samples),
            "device_throughput_min": min(device) if device else None,
            "device_throughput_max": max(device) if device else None,
            "device_samples": list(self.device_samples),
            "seconds": list(self.seconds),
            "transfers": self.transfers,
            "bytes": self.bytes_per_repeat,
            "sized_by": self.sized_by,
            "errors": self.errors,
            "error_detail": {"mismatched_words": self.mismatched_words,
                             "lost_bytes": self.lost_bytes,
                             "device_byte_mismatch": self.device_byte_mismatch,
                             "device_errors": self.device_errors,
                             "first_error_offset": self.first_error_offset,
                             "failed_repeats": list(self.failed_repeats)},
            "short_transfers": self.short_transfers,
            "ceiling": self.ceiling,
            "ceiling_formula": self.ceiling_formula,
            "efficiency": host.median / self.ceiling if self.ceiling else None,
            # The figure that answers to physics: device-timed (whole bus intervals) where the
            # device times, over what the link allows; the host's window is reported beside it.
            "link_ceiling": self.link,
            "link_efficiency": (median_or_none(self.device_samples) or host.median) / self.link
            if self.link else None,
            "telemetry": self.telemetry[-1] if self.telemetry else {},
            "telemetry_repeats": self.telemetry,
        }


class _Checker:
    """The sink for one repeat: checks every received byte against the host's copy of the
    device's stream and counts what it saw."""

    def __init__(self, stream: PatternStream) -> None:
        self.stream = stream
        self.received = 0
        self.result = CheckResult()

    def __call__(self, data: bytes) -> None:
        self.received += len(data)
        self.result.merge(self.stream.check(data))


class _Generator:
    """The source for one repeat: the next bytes of the host's outgoing stream."""

    def __init__(self, stream: PatternStream) -> None:
        self.stream = stream
        self.given = 0

    def __call__(self, n: int) -> bytes:
        self.given += n
        return self.stream.take(n)


class Sweep:
    """Runs a :class:`SweepPlan` on an open transport.

    ``points`` holds every completed point, also after an error or Ctrl-C interrupted
    :meth:`run`, so the caller can save what was measured.

    Parameters
    ----------
    transport : Transport
        Open connection to the device.
    plan : SweepPlan
        What to measure.
    on_repeat : callable, optional
        Called with ``(spec, repeat_index)`` after every repeat (progress bars).
    """

    def __init__(self, transport: Transport, plan: SweepPlan, *,
                 on_repeat: Callable[[PointSpec, int], None] | None = None) -> None:
        self.transport = transport
        self.plan = plan
        self.on_repeat = on_repeat
        self.points: list[PointResult] = []
        # Host copies of the device's streams: what it sends us, what we send it. One pair per
        # direction, because each direction's data continues only within that direction.
        self._incoming: dict[str, PatternStream] = {}
        self._outgoing: dict[str, PatternStream] = {}

    def transfers_for(self, length: int, queue_depth: int = 1,
                      model_rate: float | None = None) -> tuple[int, str]:
        """Transfers per repeat and what decided it (``bytes``, ``transfers``, ``bus time``,
        ``queue depth``).

        Enough to amortise start-up by volume (``min_bytes``), capped by ``max_transfers`` and,
        where the ceiling model gives the expected rate ``model_rate`` (bytes/s) for this length
        and queue depth, by ``max_bus_seconds``; then at least ``min_transfers``, at least
        ``queue_depth`` (a repeat shorter than the queue never fills it) and at least
        ``min_bus_seconds`` of bus time, within ``max_transfers``.
        """
        transport = self.transport
        count, sized_by = math.ceil(transport.min_bytes / length), "bytes"
        caps = [(transport.max_transfers, "transfers")]
        if model_rate:
            caps.append((int(transport.max_bus_seconds * model_rate / length), "bus time"))
        for cap, name in caps:
            if count > cap:
                count, sized_by = cap, name
        floors = [(transport.min_transfers, "transfers"), (queue_depth, "queue depth")]
        if model_rate:
            floors.append((math.ceil(transport.min_bus_seconds * model_rate / length),
                           "bus time"))
        for floor, name in floors:
            if count < floor:
                count, sized_by = floor, name
        if count > transport.max_transfers:
            count, sized_by = transport.max_transfers, "transfers"
        return count, sized_by

    def _restart_pattern(self) -> None:
        self.transport.set_pattern(self.plan.pattern)
        for stream in itertools.chain(self._incoming.values(), self._outgoing.values()):
            stream.restart()

    def _stream(self, table: dict[str, PatternStream], direction: str) -> PatternStream:
        if direction not in table:
            table[direction] = PatternStream(self.plan.pattern)
        return table[direction]

    def run(self, specs: Sequence[PointSpec] | None = None) -> list[PointResult]:
        """Measure every point of the plan (or ``specs``); returns :attr:`points`."""
        settings: tuple[tuple[str, int], ...] | None = None
        self._restart_pattern()
        previous: str | None = None
        for spec in self.plan.points() if specs is None else specs:
            if (self.transport.loopback_restarts_pattern and previous is not None
                    and (previous == "loopback") != (spec.direction == "loopback")):
                self._restart_pattern()
            previous = spec.direction
            if spec.settings != settings:
                if spec.settings:
                    self.transport.configure(**spec.setting)
                    self._restart_pattern()  # a bus change may reset the device's engines
                settings = spec.settings
            point = self.measure(spec)
            self.points.append(point)
            if point.errors:
                log.warning("%s %s B qd %d: %d errors; restarting the pattern",
                            spec.direction, spec.length, spec.queue_depth, point.errors)
                self._restart_pattern()
        return self.points

    def measure(self, spec: PointSpec) -> PointResult:
        """Run one point's repeats and return its result."""
        transport = self.transport
        ceiling = model_ceiling(transport.bus, spec.direction, spec.length, spec.queue_depth)
        count, sized_by = self.transfers_for(spec.length, spec.queue_depth,
                                             ceiling[0] if ceiling else None)
        asked = count * spec.length
        samples: list[float] = []
        device_samples: list[float | None] = []
        seconds: list[float] = []
        telemetry: list[dict[str, Any]] = []
        mismatched = lost = device_mismatch = device_errors = short = 0
        first_error: int | None = None
        failed: list[str] = []
        for index in range(self.plan.repeat):
            sink = _Checker(self._stream(self._incoming, spec.direction))
            source = _Generator(self._stream(self._outgoing, spec.direction))
            transport.clear_telemetry()
            try:
                result = transport.stream(spec.direction, spec.length, count, spec.queue_depth,
                                          source=source, sink=sink)
            except RepeatFailed as exc:
                # Nothing of this repeat counts but its loss; the streams start over for the next.
                log.warning("%s %s B qd %d repeat %d failed: %s", spec.direction, spec.length,
                            spec.queue_depth, index + 1, exc)
                failed.append(str(exc))
                lost += asked
                self._restart_pattern()
                if len(failed) == self.plan.repeat:
                    raise
                continue
            counters = transport.read_telemetry()
            host_lost, device_off = self._lost_bytes(spec.direction, asked, result, sink,
                                                     counters)
            lost += host_lost
            device_mismatch += device_off
            mismatched += sink.result.errors
            device_errors += int(counters.errors.get(spec.direction, 0))
            for offset in (sink.result.first_error_offset,
                           counters.first_error_offset.get(spec.direction)):
                if first_error is None and offset is not None:
                    first_error = offset
            short += result.short_transfers
            samples.append(result.bytes / result.seconds if result.seconds > 0 else 0.0)
            seconds.append(result.seconds)
            device_samples.append(counters.device_throughput(spec.direction))
            telemetry.append(_telemetry_json(counters))
            if self.on_repeat:
                self.on_repeat(spec, index)
        return PointResult(
            spec=spec, transfers=count, bytes_per_repeat=asked, sized_by=sized_by,
            samples=samples,
            device_samples=device_samples, seconds=seconds, mismatched_words=mismatched,
            lost_bytes=lost, device_byte_mismatch=device_mismatch, device_errors=device_errors,
            first_error_offset=first_error,
            short_transfers=short, telemetry=telemetry, failed_repeats=failed,
            ceiling=ceiling[0] if ceiling else None,
            link=link_model(transport.bus, spec.direction),
            ceiling_formula=ceiling[1] if ceiling else None)

    @staticmethod
    def _lost_bytes(direction: str, asked: int, result: StreamResult, sink: _Checker,
                    counters: Telemetry) -> tuple[int, int]:
        """``(lost, device_mismatch)``: bytes missing or extra by the host's counts (what the
        transport reports moved and, incoming, what the sink really received), and by the
        device's own count of that direction when it keeps one. A backend or device that
        miscounts, or moves data nobody asked for during a repeat, is caught too."""
        lost = abs(asked - result.bytes)
        if direction in INCOMING:
            lost = max(lost, abs(asked - sink.received))
        device = counters.device_bytes.get(direction)
        return lost, 0 if device is None else abs(asked - int(device))


def _telemetry_json(counters: Telemetry) -> dict[str, Any]:
    raw = dict(counters.raw)
    raw.setdefault("device_seconds", dict(counters.device_seconds))
    raw.setdefault("device_bytes", dict(counters.device_bytes))
    if counters.window_bytes:
        raw.setdefault("window_bytes", dict(counters.window_bytes))
    return raw

