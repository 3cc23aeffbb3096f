"""A bounded compass search: the minimiser of the fit's least squares.

The model steps whole line cycles and packs whole packets into microframes, so the misfit is a
staircase in every continuous parameter: flat between steps, with no useful derivative. A compass
search (Kolda, Lewis and Torczon, "Optimization by direct search", SIAM Review 45, 2003) needs
none: it tries a step each way along each coordinate, moves to the first improvement, and halves
the steps when none improves, until every step is below its tolerance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Minimum", "compass_search"]


@dataclass(frozen=True)
class Minimum:
    """Where a search ended.

    Attributes
    ----------
    x : tuple of float
        The best point found.
    value : float
        The function there.
    evaluations : int
        How many times the function was evaluated.
    """

    x: tuple[float, ...]
    value: float
    evaluations: int


def compass_search(function: Callable[[tuple[float, ...]], float], start: Sequence[float], *,
                   steps: Sequence[float], tolerances: Sequence[float],
                   lower: Sequence[float], upper: Sequence[float],
                   max_evaluations: int = 400) -> Minimum:
    """Minimise ``function`` from ``start`` within ``lower``..``upper`` (see module).

    Parameters
    ----------
    function : callable
        Takes a tuple of floats, returns the value to minimise.
    start : sequence of float
        First point (clipped into the bounds).
    steps : sequence of float
        First step along each coordinate.
    tolerances : sequence of float
        A coordinate is settled once its step is below this.
    lower, upper : sequence of float
        Bounds of each coordinate.
    max_evaluations : int
        Stop after this many evaluations even if steps are still above their tolerances.
    """
    x = tuple(min(hi, max(lo, v)) for v, lo, hi in zip(start, lower, upper, strict=True))
    step = list(steps)
    best = function(x)
    evaluations = 1
    while evaluations < max_evaluations and any(
            s >= t for s, t in zip(step, tolerances, strict=True)):
        moved = False
        for i, (lo, hi) in enumerate(zip(lower, upper, strict=True)):
            if step[i] < tolerances[i]:
                continue
            for sign in (1.0, -1.0):
                trial = list(x)
                trial[i] = min(hi, max(lo, x[i] + sign * step[i]))
                if trial[i] == x[i]:
                    continue
                value = function(tuple(trial))
                evaluations += 1
                if value < best:
                    x, best, moved = tuple(trial), value, True
                    # Keep going the same way with a longer stride: valleys are long here.
                    step[i] *= 2.0
                    break
            if evaluations >= max_evaluations:
                break
        if not moved:
            step = [s / 2.0 for s in step]
    return Minimum(x, best, evaluations)
