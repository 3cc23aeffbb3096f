"""How well a sweep pins each parameter down: profile intervals of the least-squares misfit.

A parameter's interval is every value whose best misfit (the other parameters re-fitted with it
held: the profile, not a slice, so a latency traded against the other still counts) stays within
the noise of the best fit: ``misfit <= best + noise``. The misfit is a χ² (each residual over its
noise, :mod:`.objective`), so ``noise`` is 1, or the best misfit per degree of freedom when that
is larger: the Δχ² = 1 rule with the variance estimated from the fit (Press et al., *Numerical
Recipes*, 3rd ed., §15.6).

The model's misfit is a staircase, so the interval is often a flat step: every value in it fits
equally well. Integers and the completion granularity are compared exactly: every value whose
misfit is within the noise is listed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .bounded import Span
from .estimate import BOUNDS, Estimate
from .objective import Objective
from .parameters import NS_PER_CYCLE, US_PER_CYCLE, Candidate
from .search import compass_search

__all__ = ["Interval", "noise_of", "interval_of", "SCANNED", "consistent_per_uframe",
           "consistent_granularity"]

#: The latencies and the gap, as scanned: (name, resolution).
SCANNED = (("completion_us", US_PER_CYCLE), ("resubmit_us", US_PER_CYCLE),
           ("gap_ns", NS_PER_CYCLE))
#: Halvings of the bracket once the misfit has risen: the edge to an eighth of the last step.
BISECTIONS = 3
#: Evaluations a profile point's re-fit may take (it starts next to the previous one's optimum).
PROFILE_EVALUATIONS = 30


@dataclass(frozen=True)
class Interval(Span):
    """The values of one parameter the sweep cannot tell from the best.

    Attributes
    ----------
    name : str
        ``completion_us``, ``resubmit_us`` or ``gap_ns``.
    best : float
        The least-squares value.
    low, high : float
        The interval (each edge halfway between the last value that fits and the first that
        does not).
    closed : bool
        The misfit rose past ``high`` (and past ``low`` unless it is 0): ``False`` when the scan
        reached the schema's bound with the misfit still within the noise.
    low_end, high_end : Candidate
        The re-fitted parameters at ``low`` and ``high``: two profiles the sweep cannot tell
        apart, for finding points that could (:mod:`.suggest`).
    """

    name: str
    best: float
    low: float
    high: float
    closed: bool
    low_end: Candidate
    high_end: Candidate


def noise_of(estimate: Estimate) -> float:
    """How far above the best misfit another one still fits as well: 1 (the misfit is a χ² in
    units of each residual's noise), or the best misfit per degree of freedom when the model
    explains the points worse than their noise says (see module)."""
    objective = estimate.objective
    fitted = len(estimate.best.continuous) + 1 + len(estimate.fitted_directions)
    return max(1.0, estimate.misfit / max(1, objective.count - fitted))


def _coordinates(candidate: Candidate) -> list[float]:
    return [candidate.completion_us, candidate.resubmit_us, candidate.gap_ns]


def _candidate(template: Candidate, coords: list[float]) -> Candidate:
    completion, resubmit, gap = coords
    return replace(template, completion_us=completion, resubmit_us=resubmit, gap_ns=gap)


def _profiled(objective: Objective, start: Candidate, index: int, value: float,
              move: float) -> tuple[Candidate, float]:
    """Best candidate with coordinate ``index`` (of :func:`_coordinates`) held at ``value``,
    searched from ``start`` with steps the size of the ``move`` just made."""
    base = _coordinates(start)
    if index < 2:
        # A latency moved: start the other one where the turnaround stays what it was, the
        # combination the sweep pins best (the search then only corrects it).
        other = 1 - index
        base[other] = max(0.0, base[other] + base[index] - value)
    base[index] = value
    free = [i for i in range(len(base)) if i != index]
    bounds = [(0.0, BOUNDS[0][1]), (0.0, BOUNDS[0][1]), BOUNDS[2]]
    resolution = [US_PER_CYCLE, US_PER_CYCLE, NS_PER_CYCLE]
    scale = abs(move) / (NS_PER_CYCLE if index == 2 else US_PER_CYCLE)  # the move in cycles
    steps = [max(scale, 4.0) * r for r in resolution]

    def misfit(x: tuple[float, ...]) -> float:
        coords = list(base)
        for i, v in zip(free, x, strict=True):
            coords[i] = v
        return objective(_candidate(start, coords))

    found = compass_search(misfit, [base[i] for i in free], steps=[steps[i] for i in free],
                           tolerances=[resolution[i] for i in free],
                           lower=[bounds[i][0] for i in free], upper=[bounds[i][1] for i in free],
                           max_evaluations=PROFILE_EVALUATIONS)
    coords = list(base)
    for i, v in zip(free, found.x, strict=True):
        coords[i] = v
    return _candidate(start, coords), found.value


def interval_of(estimate: Estimate, name: str, noise: float) -> Interval:
    """The profile interval of ``name`` (one of :data:`SCANNED`)."""
    objective, best = estimate.objective, estimate.best
    index = [n for n, _ in SCANNED].index(name)
    resolution = SCANNED[index][1]
    value = _coordinates(best)[index]
    limit = estimate.misfit + noise
    upper = BOUNDS[2][1] if name == "gap_ns" else BOUNDS[0][1]
    ends: list[tuple[float, Candidate, bool]] = []
    for sign in (-1.0, 1.0):
        inside, inside_at = value, best
        outside: float | None = None
        step = max(abs(value) / 16, 4 * resolution)
        closed = True
        while True:
            trial = min(upper, max(0.0, value + sign * step))
            found, misfit = _profiled(objective, inside_at, index, trial, trial - inside)
            if misfit > limit:
                outside = trial
                break
            inside, inside_at = trial, found
            if trial in (0.0, upper):
                closed = trial == 0.0  # zero is where the parameter ends, not the scan
                break
            step *= 2
        if outside is not None:
            for _ in range(BISECTIONS):
                middle = (inside + outside) / 2
                found, misfit = _profiled(objective, inside_at, index, middle, middle - inside)
                if misfit > limit:
                    outside = middle
                else:
                    inside, inside_at = middle, found
        # The edge lies between the last value inside and the first outside: take the middle.
        edge = inside if outside is None else (inside + outside) / 2
        ends.append((edge, inside_at, closed))
    (low, low_end, low_closed), (high, high_end, high_closed) = ends
    return Interval(name, value, low, high, low_closed and high_closed, low_end, high_end)


def consistent_per_uframe(estimate: Estimate, direction: str, noise: float) -> list[int]:
    """Packets-per-microframe values of ``direction`` that fit within the noise (holding the
    rest: the plateau they set is what the deep-queue points measure, whatever the latencies)."""
    misfits = estimate.by_per_uframe[direction]
    others = estimate.misfit - misfits[min(misfits, key=misfits.__getitem__)]
    return sorted(n for n, m in misfits.items() if m + others <= estimate.misfit + noise)


def consistent_granularity(estimate: Estimate, noise: float) -> list[bool]:
    """Completion granularities (on microframe boundaries or not) that fit within the noise."""
    return sorted(u for u, (_, m) in estimate.by_granularity.items()
                  if m <= estimate.misfit + noise)
