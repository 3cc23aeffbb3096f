"""The fit's least squares: how far the model's figures for a set of parameters are from a sweep.

Two kinds of residual, each divided by its own noise (weighted least squares):

* per point, ``ln(predicted / measured)`` of the host-timed throughput: a relative error, the same
  weight for a 2 MB/s point as for a 49 MB/s one;
* per point with the device's timestamps, the predicted less the measured *tail* (host time
  outside the device's data span, :mod:`.predict`), in seconds.

Where the model predicts a range (a repeat's start phase unknown, :mod:`.predict`), the residual
is how far the measurement lies outside it: zero anywhere inside.

The noise of each kind starts as what the points' repeats scatter by (at least one line cycle of
their run; a tail at least a token and the line's excess, :data:`TAIL_RESOLUTION_S`) and is then
re-estimated from the fit's own residuals (:meth:`Objective.reweight`):
what the model cannot explain is noise too, and it is usually larger than the scatter of a
deterministic simulation. That is feasible generalised least squares with one variance per kind.

Evaluations are cached by the parameters up to the model's resolution (one line cycle), because a
search and the uncertainty scans come back to the same places often.
"""

from __future__ import annotations

import math

from ..protocol import usb2_wire as wire
from ..protocol.names import Direction
from ..protocol.usb2 import CLOCK_HZ
from .observations import Observation, SweepData
from .parameters import Candidate
from .predict import LINE_EXCESS_CYCLES, predict

__all__ = ["Objective", "Residuals"]

#: One line cycle, in seconds: no time is known finer.
CYCLE_S = 1 / CLOCK_HZ
#: The finest a tail is known: the model times a run from its first token, the device from its
#: first data packet, a token and the line's excess later (:data:`.predict.LINE_EXCESS_CYCLES`).
TAIL_RESOLUTION_S = (wire.bits_to_cycles(wire.packet_bits(wire.Pid.IN)) + LINE_EXCESS_CYCLES) \
    * CYCLE_S
Residuals = tuple[tuple[float, ...], tuple[float, ...]]


class Objective:
    """Weighted sum of squared residuals of a sweep's points (see module).

    Parameters
    ----------
    data : SweepData
        The accepted result.

    Attributes
    ----------
    evaluations : int
        Model runs so far (cache misses).
    throughput_noise, tail_noise : float
        The noise each kind of residual is divided by (relative; seconds).
    """

    def __init__(self, data: SweepData) -> None:
        self.data = data
        self.evaluations = 0
        self._cache: dict[tuple, Residuals] = {}
        points = data.points
        self.throughput_floor = math.sqrt(
            sum(max((p.spread / 2) ** 2, _cycle_share(p) ** 2) for p in points) / len(points))
        timed = [p for p in points if p.tail is not None]
        self.tail_floor = math.sqrt(
            sum(max((p.tail_spread / 2) ** 2, TAIL_RESOLUTION_S ** 2) for p in timed)
            / len(timed)) if timed else TAIL_RESOLUTION_S
        self.throughput_noise = self.throughput_floor
        self.tail_noise = self.tail_floor

    @property
    def count(self) -> int:
        """Residuals in all: the points, and their tails where the device timed them."""
        return sum(1 + (p.tail is not None) for p in self.data.points)

    def residuals(self, candidate: Candidate, direction: str | None = None) -> Residuals:
        """``(throughput, tail)`` residuals of the points of ``direction``, or of all points
        grouped by direction (``in`` first)."""
        if direction is None:
            parts = [self.residuals(candidate, d) for d in self.data.directions]
            return (tuple(r for part in parts for r in part[0]),
                    tuple(r for part in parts for r in part[1]))
        # A direction's points depend only on its own packets per microframe: the other
        # direction's is left out of the key, so the integer search re-uses evaluations.
        limit = candidate.per_uframe[0 if direction == Direction.IN else 1]
        key = (direction, limit, candidate.key()[1:])
        if key not in self._cache:
            self.evaluations += 1
            profile = candidate.profile()
            throughput, tail = [], []
            for point in self.data.points:
                if point.direction != direction:
                    continue
                predicted = predict(profile, point, self.data.max_packet_size)
                low, high = predicted.throughput
                throughput.append(math.log(_outside(point.throughput, low, high)
                                           / point.throughput))
                if point.tail is not None and predicted.tail is not None:
                    tail.append(_outside(point.tail, *predicted.tail) - point.tail)
            self._cache[key] = (tuple(throughput), tuple(tail))
        return self._cache[key]

    def __call__(self, candidate: Candidate, direction: str | None = None) -> float:
        throughput, tail = self.residuals(candidate, direction)
        return (sum(r * r for r in throughput) / self.throughput_noise ** 2
                + sum(r * r for r in tail) / self.tail_noise ** 2)

    def robust(self, candidate: Candidate) -> float:
        """``sum(log(1 + (residual / noise)^2))``: a misfit in which a point the candidate misses
        by far counts little more than one it misses by a little (Cauchy loss), for ranking
        far-apart starting points, where the squares would be all about the worst point."""
        throughput, tail = self.residuals(candidate)
        return (sum(math.log1p((r / self.throughput_noise) ** 2) for r in throughput)
                + sum(math.log1p((r / self.tail_noise) ** 2) for r in tail))

    def reweight(self, candidate: Candidate) -> None:
        """Set each kind's noise to its rms residual at ``candidate`` (never below the points'
        own scatter)."""
        throughput, tail = self.residuals(candidate)
        self.throughput_noise = max(self.throughput_floor, _rms(throughput))
        self.tail_noise = max(self.tail_floor, _rms(tail))


def _outside(measured: float, low: float, high: float) -> float:
    """The end of ``low..high`` nearest ``measured``, or ``measured`` itself when inside."""
    return min(high, max(low, measured))


def _rms(values: tuple[float, ...]) -> float:
    return math.sqrt(sum(v * v for v in values) / len(values)) if values else 0.0


def _cycle_share(point: Observation) -> float:
    """One line cycle as a share of the point's repeat: the finest a run can be timed."""
    return CYCLE_S / point.seconds if point.seconds else 0.0
