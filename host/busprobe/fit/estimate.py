"""The least-squares fit: the profile parameters whose modelled curve is closest to a sweep.

Integer and boolean parameters are searched exactly, continuous ones by a compass search
(:mod:`.search`):

1. Seeds. Packets per microframe from the device's telemetry (the most tokens it saw in one
   microframe, else its whole-microframe plateau); the turnaround from the queue-depth-1 points
   (time per transfer less its bus time at that many packets per microframe); the completion
   latency from the points' tails (at most the shortest, at least the longest less a microframe:
   a completion rounded up to a microframe boundary adds up to one).
2. For each completion granularity (on microframe boundaries or not): a coarse grid over the
   completion latency, the turnaround and the gap, a compass search from the grid points with the
   least robust misfit (:meth:`.Objective.robust`), then
   every packets-per-microframe value 1..13 of each direction tried with the others held, and the
   continuous search repeated whenever one changes.
3. The noise of each kind of residual re-estimated from the best fit (:meth:`.Objective.reweight`)
   and both granularities searched again from where they ended, twice.
4. The granularity with the smaller misfit wins; the best of each is kept, and so is each
   direction's misfit per packets-per-microframe value, for the uncertainty
   (:mod:`.uncertainty`).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from ..model.usb2_hosts import SCHEMA
from ..protocol import usb2_wire as wire
from ..protocol.names import Direction
from .objective import Objective
from .observations import SweepData
from .parameters import MAX_PER_UFRAME, NS_PER_CYCLE, US_PER_CYCLE, Candidate
from .search import compass_search

__all__ = ["Estimate", "estimate", "refine", "BOUNDS"]

UFRAME_US = wire.UFRAME_S * 1e6
#: Search bounds of the coordinates (completion, turnaround, gap): the profile schema's own (a
#: latency of at most a second, a gap up to a microframe).
BOUNDS = ((0.0, SCHEMA["completion_latency_us"][2]), (0.0, SCHEMA["resubmit_latency_us"][2]),
          (0.0, SCHEMA["inter_transaction_gap_ns"][2]))
#: The finest steps worth taking: one line cycle.
TOLERANCES = (US_PER_CYCLE, US_PER_CYCLE, NS_PER_CYCLE)
#: Gaps the coarse grid tries, as shares of a 512-byte transaction's ~9 µs of line time: none, a
#: few per cent, a tenth.
GRID_GAPS_NS = (0.0, 300.0, 900.0)
#: Shares of the least turnaround the queue-depth-1 points show that the grid tries.
GRID_TURNAROUND_SHARES = (0.5, 0.75, 1.0, 1.5)
#: Grid points the compass search starts from.
SEARCH_STARTS = 3
#: Rounds of "try every integer, re-fit the continuous" before giving up on it settling.
INTEGER_ROUNDS = 3
#: Rounds of "estimate the noise from the residuals, fit again" (:meth:`Objective.reweight`).
REWEIGHTINGS = 2


@dataclass(frozen=True)
class Estimate:
    """The best parameters and what the search learnt on the way.

    Attributes
    ----------
    best : Candidate
        The least-squares parameters.
    objective : Objective
        The misfit function (for uncertainty scans and residuals).
    misfit : float
        Its value at ``best``.
    by_granularity : dict
        For completions on microframe boundaries (``True``) and not (``False``): the best
        candidate with that granularity and its misfit.
    by_per_uframe : dict
        Per fitted direction: packets per microframe (1..13) -> that direction's misfit with
        everything else at ``best``.
    fitted_directions : tuple of str
        Directions the sweep has a ladder for; the other one's packets per microframe is copied.
    """

    best: Candidate
    objective: Objective
    misfit: float
    by_granularity: dict[bool, tuple[Candidate, float]]
    by_per_uframe: dict[str, dict[int, float]]
    fitted_directions: tuple[str, ...]


def estimate(data: SweepData) -> Estimate:
    """Fit ``data`` (see module)."""
    objective = Objective(data)
    directions = data.fitted_directions()
    per_uframe = _seed_per_uframe(data, directions)
    turnarounds = _seed_turnarounds(data, per_uframe)
    completions = _seed_completions(data, max(turnarounds))
    found: dict[bool, Candidate] = {}
    for on_uframe in (False, True):
        seed = Candidate(per_uframe, on_uframe, 0.0, 0.0, 0.0)
        best = _grid_then_search(objective, seed, completions, turnarounds)
        found[on_uframe] = _settle_integers(objective, best, directions)
    # The noise of each kind of residual is what the best fit leaves; with it re-weighted, both
    # granularities are searched again from where they ended.
    for _ in range(REWEIGHTINGS):
        objective.reweight(min(found.values(), key=objective))
        found = {u: _settle_integers(objective, refine(objective, candidate)[0], directions)
                 for u, candidate in found.items()}
    by_granularity = {u: (candidate, objective(candidate)) for u, candidate in found.items()}
    best, misfit = min(by_granularity.values(), key=lambda pair: pair[1])
    by_per_uframe = {d: _per_uframe_misfits(objective, best, d) for d in directions}
    return Estimate(best, objective, misfit, by_granularity, by_per_uframe, directions)


def refine(objective: Objective, start: Candidate, *,
           max_evaluations: int = 400) -> tuple[Candidate, float]:
    """Compass search over the continuous coordinates (:data:`~.parameters.CONTINUOUS`) from
    ``start``; the best candidate and its misfit."""
    found = compass_search(lambda x: objective(start.with_continuous(x)), start.continuous,
                           steps=_steps(start), tolerances=TOLERANCES,
                           lower=[low for low, _ in BOUNDS], upper=[high for _, high in BOUNDS],
                           max_evaluations=max_evaluations)
    return start.with_continuous(found.x), found.value


def _steps(candidate: Candidate) -> tuple[float, float, float]:
    """First steps: a quarter of each latency coordinate (at least a tenth of a microframe), the
    grid's smallest gap."""
    return (max(candidate.completion_us / 4, UFRAME_US / 10),
            max(candidate.turnaround_us / 4, UFRAME_US / 10), GRID_GAPS_NS[1])


def _grid_then_search(objective: Objective, seed: Candidate, completions: tuple[float, ...],
                      turnarounds: tuple[float, ...]) -> Candidate:
    grid = [seed.with_continuous((c, max(c, t), g))
            for c in completions for t in turnarounds for g in GRID_GAPS_NS]
    # Ranked by a robust misfit: far from the answer every grid point misses some point by far,
    # and squares would rank them by that point alone.
    ranked = sorted(grid, key=objective.robust)
    # Several starts: the staircase has local minima a single start can settle in.
    found = [refine(objective, start) for start in ranked[:SEARCH_STARTS]]
    return min(found, key=lambda pair: pair[1])[0]


def _settle_integers(objective: Objective, best: Candidate,
                     directions: tuple[str, ...]) -> Candidate:
    for _ in range(INTEGER_ROUNDS):
        changed = False
        for direction in directions:
            misfits = _per_uframe_misfits(objective, best, direction)
            packets = min(misfits, key=misfits.__getitem__)
            if packets != best.per_uframe[0 if direction == Direction.IN else 1]:
                best, changed = best.with_per_uframe(direction, packets), True
        if not changed:
            return best
        best = refine(objective, best)[0]
    return best


def _per_uframe_misfits(objective: Objective, best: Candidate, direction: str) -> dict[int, float]:
    return {n: objective(best.with_per_uframe(direction, n), direction)
            for n in range(1, MAX_PER_UFRAME + 1)}


def _seed_per_uframe(data: SweepData, directions: tuple[str, ...]) -> tuple[int, int]:
    """Packets per microframe each direction starts from (the one without a ladder copies)."""
    seeds: dict[str, int] = {}
    for direction in directions:
        if direction in data.tokens_max_uframe:
            seed = data.tokens_max_uframe[direction]
        elif direction in data.device_packets_per_uframe:
            seed = round(data.device_packets_per_uframe[direction])
        else:
            fastest = max(p.throughput for p in data.points if p.direction == direction)
            seed = math.ceil(fastest * wire.UFRAME_S / data.max_packet_size)
        seeds[direction] = min(MAX_PER_UFRAME, max(1, seed))
    inward = seeds.get("in", seeds.get("out", MAX_PER_UFRAME))
    return inward, seeds.get("out", inward)


def _seed_completions(data: SweepData, turnaround: float) -> tuple[float, ...]:
    """Completion latencies the grid tries (µs): from the tails where the device timed them
    (between the longest less a microframe and the shortest), else shares of the turnaround."""
    tails = [p.tail * 1e6 for p in data.points if p.tail is not None]
    low, high = (max(0.0, max(tails) - UFRAME_US), min(tails)) if tails else (0.0, turnaround)
    high = max(low, high)
    return tuple(sorted({low, (low + high) / 2, high}))


def _seed_turnarounds(data: SweepData, per_uframe: tuple[int, int]) -> tuple[float, ...]:
    """Turnarounds the grid tries (µs), from the queue-depth-1 points' time per transfer less its
    bus time: the least of them (completions rounded up to a microframe boundary add to the
    others), the median, and shares of the least around it."""
    spare = []
    for p in data.points:
        if p.queue_depth != 1:
            continue
        packets = math.ceil(p.length / data.max_packet_size)
        limit = per_uframe[0 if p.direction == Direction.IN else 1]
        spare.append(max(0.0, p.length / p.throughput * 1e6 - packets / limit * UFRAME_US))
    least = min(spare)
    return tuple(sorted({least * share for share in GRID_TURNAROUND_SHARES}
                        | {statistics.median(spare)}))
