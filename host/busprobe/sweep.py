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
from dataclasses import dataclass
from typing import Any

from . import limits
from .point_models import link_model, model_ceiling, run_ceiling
from .points import TOOL_MARGIN, PointResult, PointSpec
from .protocol.names import Direction
from .protocol.patterns import CheckResult, Pattern, PatternStream
from .stats import MIN_REPEATS
from .tool_ceiling import ToolFigure, tool_ceiling
from .transport import (
    DeviceRunFailed,
    DeviceRunResult,
    RepeatFailed,
    StreamResult,
    Telemetry,
    Transport,
)

__all__ = ["SweepPlan", "PointSpec", "PointResult", "Sweep", "INCOMING", "model_ceiling",
           "TOOL_MARGIN"]

log = logging.getLogger(__name__)


#: Directions in which the device sends and the host checks (the transport calls the sink).
#: ``loopback`` returns what the host sent, so it is checked too.
INCOMING = frozenset({"in", "write", "loopback"})


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
    tool : callable, optional
        ``(path, direction, length, queue_depth) -> ToolFigure | None``: the host path's own
        ceiling (default :func:`busprobe.tool_ceiling.tool_ceiling`).
    device_run : bool
        Where the transport's device can run a direction by itself
        (:meth:`Transport.device_run_directions`), run each point that way too, beside the
        host-run repeats (once per direction, length and bus setting: queue depth is the
        host's).
    """

    def __init__(self, transport: Transport, plan: SweepPlan, *,
                 on_repeat: Callable[[PointSpec, int], None] | None = None,
                 tool: Callable[[str, str, int, int], ToolFigure | None] | None = None,
                 device_run: bool = True) -> None:
        self.transport = transport
        self.plan = plan
        self.on_repeat = on_repeat
        self.tool_ceiling = tool or tool_ceiling
        self.device_run = device_run
        self.points: list[PointResult] = []
        self._device_runs: dict[tuple[str, int, tuple[tuple[str, int], ...]],
                                list[DeviceRunResult]] = {}
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
                    and (previous == Direction.LOOPBACK) != (spec.direction == Direction.LOOPBACK)):
                self._restart_pattern()
            previous = spec.direction
            if spec.settings != settings:
                if spec.settings:
                    self.transport.configure(**spec.setting)
                    self._restart_pattern()  # a bus change may reset the device's engines
                settings = spec.settings
            point = self.measure(spec)
            self.points.append(point)  # kept if the device is lost during its device-run
            point.device_runs = self.measure_device_run(spec, point.bytes_per_repeat)
            if point.errors:
                log.warning("%s %s B qd %d: %d errors; restarting the pattern",
                            spec.direction, spec.length, spec.queue_depth, point.errors)
                self._restart_pattern()
        return self.points

    def measure(self, spec: PointSpec) -> PointResult:
        """Run one point's repeats and return its result."""
        transport = self.transport
        steady = model_ceiling(transport.bus, spec.direction, spec.length, spec.queue_depth)
        count, sized_by = self.transfers_for(spec.length, spec.queue_depth,
                                             steady[0] if steady else None)
        # The point's ceiling is that of the runs it makes: so many transfers, host-timed from
        # the first submission to the last completion (point_models.run_ceiling).
        ceiling = run_ceiling(transport.bus, spec.direction, spec.length, spec.queue_depth,
                              count)
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
                                                     counters, transport.checks_own_data)
            lost += host_lost
            device_mismatch += device_off
            mismatched += sink.result.errors + result.mismatched_words
            device_errors += int(counters.errors.get(spec.direction, 0))
            for offset in (sink.result.first_error_offset, result.first_error_offset,
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
            ceiling=ceiling.throughput if ceiling else None,
            device_ceiling=ceiling.device if ceiling else None,
            tool=self._tool(spec),
            link=link_model(transport.bus, spec.direction),
            ceiling_formula=ceiling.formula if ceiling else None)

    def _tool(self, spec: PointSpec) -> ToolFigure | None:
        """The tool's ceiling at ``spec`` for the transport's host path, or None (a simulation;
        or it could not be measured: said in the log, the point stands without it)."""
        path = self.transport.tool_path
        if path is None:
            return None
        try:
            return self.tool_ceiling(path, spec.direction, spec.length, spec.queue_depth)
        except (OSError, RuntimeError, ValueError) as exc:
            log.warning("no tool ceiling for %s %s B qd %d: %s", spec.direction, spec.length,
                        spec.queue_depth, exc)
            return None

    def measure_device_run(self, spec: PointSpec, volume: int) -> list[DeviceRunResult]:
        """The point run by the device (``volume`` bytes a run, as the host's repeats moved, as
        far as the device's buffer holds), or [] where it cannot run it. The device restarts
        its pattern streams for it, so the host's restart with it."""
        transport = self.transport
        if (not self.device_run or spec.direction not in transport.device_run_directions()
                or spec.length > transport.device_run_bytes):
            return []
        key = (spec.direction, spec.length, spec.settings)
        if key not in self._device_runs:
            count = max(1, min(volume, transport.device_run_bytes) // spec.length)
            repeats = transport.device_run_repeats or self.plan.repeat
            try:
                self._device_runs[key] = [
                    transport.device_run(spec.direction, spec.length, count, self.plan.pattern)
                    for _ in range(repeats)]
            except DeviceRunFailed as exc:  # the host-run figure stands without it
                log.warning("%s %s B: no device-run: %s", spec.direction, spec.length, exc)
                self._device_runs[key] = []
            # Not in a finally: a device that is gone must surface as itself, not as the
            # restart's "not running".
            self._restart_pattern()
        return self._device_runs[key]

    @staticmethod
    def _lost_bytes(direction: str, asked: int, result: StreamResult, sink: _Checker,
                    counters: Telemetry, own_data: bool = False) -> tuple[int, int]:
        """``(lost, device_mismatch)``: bytes missing or extra by the host's counts (what the
        transport reports moved and, incoming, what the sink really received), and by the
        device's own count of that direction when it keeps one. A backend or device that
        miscounts, or moves data nobody asked for during a repeat, is caught too. A transport
        that checks its own data (``own_data``) never calls the sink."""
        lost = abs(asked - result.bytes)
        if direction in INCOMING and not own_data:
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

