"""Least squares of a run model against a sweep, with intervals: the USB 3.0 and PCIe fits.

The USB 2.0 fit (:mod:`.estimate`) searches a staircase of microframe packings; the SuperSpeed
and PCIe models (:mod:`busprobe.model.usb3_run`, :mod:`busprobe.model.pcie`) are smooth in their
latencies, so one small machine serves both:

* each point is predicted as the sweep ran it (its transfers, queue depth, length: the run
  model), and compared on the host's throughput — ``ln(predicted / measured)`` over its noise,
  half the repeats' spread but at least :data:`THROUGHPUT_FLOOR` (what the model leaves out of a
  simulated run) — and, where the device timed its data, on the *tail*, the host's time outside
  the device's first-to-last data span (start-up and the last completion's latency), over half
  its spread but at least :data:`TAIL_FLOOR`;
* a compass search from a few starts minimises the sum of squares over the parameters, each
  within its bounds (:class:`Param`);
* each parameter's interval is where the misfit, with the others re-fitted, stays within
  ``max(1, misfit / degrees of freedom)`` of the best (Δχ² = 1, the noise scaled up when the
  best fit leaves more than the repeats explain); a parameter is determined when the interval
  is closed above (below, its low bound is a physical one: a latency of 0 is an answer) and its
  half width at most 10 % of its middle, or its :attr:`Param.floor`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Param", "Point", "Span", "Interval", "BoundedFit", "fit_bounded", "THROUGHPUT_FLOOR",
           "TAIL_FLOOR", "GOAL_SHARE"]

THROUGHPUT_FLOOR = 0.003
TAIL_FLOOR = 0.5e-6
GOAL_SHARE = 0.10


@dataclass(frozen=True)
class Param:
    """A continuous parameter: profile ``key``, ``unit``, search bounds, the half width below
    which it counts as determined whatever its size, and the step the search starts with."""

    key: str
    unit: str
    low: float
    high: float
    floor: float
    step: float


@dataclass(frozen=True)
class Point:
    """A measured point as the fit compares it (see module)."""

    label: str
    direction: str
    length: int
    queue_depth: int
    transfers: int
    throughput: float
    spread: float
    tail: float | None = None
    tail_spread: float = 0.0
    mps: int | None = None
    mrrs: int | None = None


#: ``predict(values, point) -> (throughput, tail or None)``.
Predict = Callable[[dict[str, float], Point], tuple[float, float | None]]


class Span:
    """The middle and half width of a fitted ``low..high`` (a mixin for the intervals of
    this module and :mod:`.uncertainty`)."""

    low: float
    high: float

    @property
    def middle(self) -> float:
        return (self.low + self.high) / 2

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


@dataclass(frozen=True)
class Interval(Span):
    """Where a parameter fits: ``low..high`` (closed at an end unless it reached a bound)."""

    key: str
    low: float
    high: float
    best: float
    closed: bool


@dataclass(frozen=True)
class BoundedFit:
    """The outcome: best values, misfit, the threshold that still fits, the intervals, and the
    worst relative residual of the host's throughput over the points."""

    best: dict[str, float]
    misfit: float
    threshold: float
    intervals: dict[str, Interval]
    worst: float

    def determined(self, param: Param) -> bool:
        interval = self.intervals[param.key]
        return interval.closed and interval.half_width <= max(
            GOAL_SHARE * abs(interval.middle), param.floor)


def _objective(points: Sequence[Point], predict: Predict) -> Callable[[dict[str, float]], float]:
    def misfit(values: dict[str, float]) -> float:
        total = 0.0
        for point in points:
            throughput, tail = predict(values, point)
            noise = max(point.spread / 2, THROUGHPUT_FLOOR)
            total += (math.log(max(throughput, 1e-9) / point.throughput) / noise) ** 2
            if tail is not None and point.tail is not None:
                total += ((tail - point.tail) / max(point.tail_spread / 2, TAIL_FLOOR)) ** 2
        return total
    return misfit


def _compass(misfit: Callable[[dict[str, float]], float], params: Sequence[Param],
             start: dict[str, float], fixed: dict[str, float] | None = None,
             rounds: int = 60) -> tuple[dict[str, float], float]:
    values = {**start, **(fixed or {})}
    free = [p for p in params if not fixed or p.key not in fixed]
    best = misfit(values)
    steps = {p.key: p.step for p in free}
    for _ in range(rounds):
        moved = False
        for param in free:
            for sign in (1, -1):
                trial = dict(values)
                trial[param.key] = min(param.high, max(param.low,
                                                       values[param.key] + sign * steps[param.key]))
                if trial[param.key] == values[param.key]:
                    continue
                score = misfit(trial)
                if score < best:
                    values, best, moved = trial, score, True
                    break
        if not moved:
            if all(steps[p.key] <= p.floor / 8 for p in free):
                break
            steps = {key: step / 2 for key, step in steps.items()}
    return values, best


def fit_bounded(points: Sequence[Point], params: Sequence[Param], predict: Predict, *,
                starts: Sequence[dict[str, float]]) -> BoundedFit:
    """Fit ``params`` to ``points`` (see module)."""
    misfit = _objective(points, predict)
    best, score = min((_compass(misfit, params, start) for start in starts),
                      key=lambda found: found[1])
    terms = len(points) + sum(1 for p in points if p.tail is not None)
    dof = max(terms - len(params), 1)
    threshold = score + max(1.0, score / dof)
    intervals = {p.key: _interval(misfit, params, p, best, threshold) for p in params}
    worst = max((abs(predict(best, point)[0] / point.throughput - 1) for point in points),
                default=0.0)
    return BoundedFit(best, score, threshold, intervals, worst)


def _interval(misfit: Callable[[dict[str, float]], float], params: Sequence[Param],
              param: Param, best: dict[str, float], threshold: float) -> Interval:
    def fits(value: float) -> bool:
        return _compass(misfit, params, best, {param.key: value}, rounds=12)[1] <= threshold

    ends = []
    for bound, sign in ((param.low, -1), (param.high, 1)):
        inside, step = best[param.key], max(param.step, param.floor)
        outside = None
        while outside is None:
            trial = best[param.key] + sign * step
            if (trial - bound) * sign >= 0:
                outside = bound if not fits(bound) else None
                if outside is None:
                    inside = bound
                    break
            elif fits(trial):
                inside, step = trial, step * 2
            else:
                outside = trial
        if outside is not None:
            for _ in range(10):  # the edge, to a 1/1024 of the last step
                middle = (inside + outside) / 2
                if fits(middle):
                    inside = middle
                else:
                    outside = middle
        ends.append((inside, outside is not None))
    (low, low_closed), (high, high_closed) = ends
    # The low bound is a physical one (a latency is not negative); the high one is the search's.
    return Interval(param.key, low, high, best[param.key],
                    high_closed and (low_closed or low == param.low))
