"""Several targets swept alone, then together: the engine behind ``sweep --device A --device B``.

Each target first runs the whole ladder alone (the others idle), one after the other. Then the
same ladder runs on all of them together: one thread per target, each an ordinary
:class:`~busprobe.sweep.Sweep` over a :class:`~busprobe.together.TogetherView`, so every repeat of
every point starts on all targets at once and ends when the last has finished, and every byte of
every target is checked as in a single sweep. Per repeat the *sum* is the bytes all targets moved
over the window from the first start to the last end, on the clock they share (simulated time of
one simulation, the host's monotonic clock for real devices); per point its median is
``sum_throughput``, and ``sum_alone`` is the sum of the targets' medians alone.

A target lost mid-sweep (unplugged, simulator gone) keeps the points it finished and leaves the
rest to the others; its error is recorded on it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .stats import summarise
from .sweep import PointResult, PointSpec, Sweep, SweepPlan
from .together import Rendezvous, SharedClock, StreamRecord, TogetherView, WallClock
from .transport import Transport, TransportError

__all__ = ["TargetRun", "MultiSweep", "sum_of_repeat"]

log = logging.getLogger(__name__)


@dataclass
class TargetRun:
    """One target of a multi-target sweep and what it measured.

    Attributes
    ----------
    name : str
        Its selector (``sim:pcie?endpoints=2`` targets get ``#0``, ``#1``...).
    transport : Transport
        Open connection to it.
    alone, together : list of PointResult
        Its points measured alone and together.
    records : list of StreamRecord or None
        Its streams together, in order (None: a repeat that failed).
    error : str or None
        Why it stopped taking part (the others' points are kept).
    """

    name: str
    transport: Transport
    alone: list[PointResult] = field(default_factory=list)
    together: list[PointResult] = field(default_factory=list)
    records: list[StreamRecord | None] = field(default_factory=list)
    error: str | None = None


def sum_of_repeat(records: Sequence[StreamRecord], *, shared_clock: bool) -> float | None:
    """Bytes/s all ``records`` of one repeat moved together: over their common window when the
    targets share a clock, else the sum of each one's own rate (separate simulations)."""
    if not records:
        return None
    if shared_clock:
        window = max(r.end for r in records) - min(r.start for r in records)
        return sum(r.bytes for r in records) / window if window > 0 else None
    return sum(r.bytes / (r.end - r.start) for r in records if r.end > r.start)


class MultiSweep:
    """Runs one :class:`SweepPlan` on several open transports, alone and then together.

    Parameters
    ----------
    targets : list of TargetRun
        The targets, transports open.
    plan : SweepPlan
        The ladder every target runs.
    clock : SharedClock
        How their streams start together (:class:`~busprobe.together.WallClock` for real
        devices; a simulation hosting them all gives its own).
    shared_clock : bool
        Whether the transports' :meth:`~Transport.now` is one clock (windows comparable).
    """

    def __init__(self, targets: list[TargetRun], plan: SweepPlan, *,
                 clock: SharedClock | None = None, shared_clock: bool = True) -> None:
        self.targets = targets
        self.plan = plan
        self.clock = clock or WallClock()
        self.shared_clock = shared_clock

    def run_alone(self) -> None:
        """Every target's ladder, one target at a time."""
        for target in self.targets:
            if target.error:
                continue
            sweep = Sweep(target.transport, self.plan)
            try:
                sweep.run()
            except TransportError as exc:
                target.error = f"{type(exc).__name__}: {exc}"
                log.warning("%s lost while alone: %s", target.name, exc)
            target.alone = sweep.points

    def run_together(self) -> None:
        """Every target's ladder at once, each repeat started together on all of them."""
        live = [i for i, t in enumerate(self.targets) if not t.error]
        if len(live) < 2:
            return
        starting = Rendezvous(live, action=self.clock.join)
        ending = Rendezvous(live)
        views = {i: TogetherView(i, self.targets[i].transport, self.clock, starting, ending)
                 for i in live}
        sweeps = {i: Sweep(views[i], self.plan) for i in live}  # type: ignore[arg-type]

        def work(i: int) -> None:
            try:
                sweeps[i].run()
            except TransportError as exc:
                self.targets[i].error = f"{type(exc).__name__}: {exc}"
                log.warning("%s lost while together: %s", self.targets[i].name, exc)
            except BaseException as exc:
                self.targets[i].error = f"{type(exc).__name__}: {exc}"
            finally:
                views[i].withdraw()

        threads = [threading.Thread(target=work, args=(i,), name=f"busprobe-target-{i}",
                                    daemon=True) for i in live]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for i in live:
            self.targets[i].together = sweeps[i].points
            self.targets[i].records = views[i].records

    def run(self) -> None:
        self.run_alone()
        self.run_together()

    def sums(self) -> list[dict[str, Any]]:
        """Per point: the sum together (median over repeats, bytes/s) and the sum alone."""
        specs = self.plan.points()
        out = []
        for k, spec in enumerate(specs):
            per_repeat = []
            taking_part = set()
            for r in range(self.plan.repeat):
                index = k * self.plan.repeat + r
                records = []
                for t, target in enumerate(self.targets):
                    if index < len(target.records) and target.records[index] is not None:
                        records.append(target.records[index])
                        taking_part.add(t)
                value = sum_of_repeat(records, shared_clock=self.shared_clock)
                if value is not None:
                    per_repeat.append(value)
            alone = [_point_for(t.alone, spec) for t in self.targets]
            alone_ok = [p for p in alone if p is not None and p.samples]
            row: dict[str, Any] = {
                "direction": spec.direction, "length": spec.length,
                "queue_depth": spec.queue_depth, **spec.setting,
                "targets_together": sorted(taking_part), "sum_samples": per_repeat,
                "sum_throughput": None, "sum_spread": None,
                "sum_alone": sum(summarise(p.samples).median for p in alone_ok)
                if len(alone_ok) == len(self.targets) else None,
                "alone_spread": max((summarise(p.samples).spread for p in alone_ok),
                                    default=None),
            }
            if per_repeat:
                summary = summarise(per_repeat)
                row.update(sum_throughput=summary.median, sum_spread=summary.spread,
                           sum_min=summary.minimum, sum_max=summary.maximum)
            out.append(row)
        return out


def _point_for(points: list[PointResult], spec: PointSpec) -> PointResult | None:
    return next((p for p in points if p.spec == spec), None)
