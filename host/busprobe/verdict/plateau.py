"""Plateau detection: the throughput a sweep settles at once transfers are long enough.

A throughput-versus-length curve rises while per-transfer costs dominate and then flattens. The
plateau is found from the long end: take the median of the longest few lengths as a reference,
then walk towards shorter lengths while each point stays within ``tolerance`` of that reference.
One stray point inside the plateau (a noisy repeat) is skipped if the next one is back in the band;
two in a row end the plateau, which is how the rising part is kept out.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

__all__ = ["Plateau", "detect_plateau", "DEFAULT_TOLERANCE"]

#: Relative half-width of the band around the plateau (5 %: wider than simulator jitter and a
#: quiet host's noise, narrower than the step between two lengths on the rising part).
DEFAULT_TOLERANCE = 0.05


@dataclass(frozen=True)
class Plateau:
    """A detected plateau.

    Attributes
    ----------
    value : float
        Median throughput of the plateau points (bytes/s).
    spread : float
        (max - min) / value over the plateau points.
    lengths : tuple of int
        The transfer lengths that formed the plateau, ascending.
    rising : bool
        Whether shorter lengths below the plateau were excluded (the curve had a rising part).
    reached : bool
        False when the longest lengths were still climbing: the sweep stopped short of the
        plateau and ``value`` is only a lower bound.
    """

    value: float
    spread: float
    lengths: tuple[int, ...]
    rising: bool
    reached: bool = True

    @property
    def start(self) -> int:
        """Shortest transfer length that reaches the plateau."""
        return self.lengths[0]


def detect_plateau(curve: Iterable[tuple[int, float]], *,
                   tolerance: float = DEFAULT_TOLERANCE) -> Plateau | None:
    """Plateau of ``curve`` (``(length, throughput)`` pairs in any order), or None when empty.

    With several points at one length (repeats, or queue depths merged by the caller) the median
    of that length is used.
    """
    by_length: dict[int, list[float]] = {}
    for length, throughput in curve:
        if throughput is not None and throughput > 0:
            by_length.setdefault(int(length), []).append(float(throughput))
    if not by_length:
        return None
    points = sorted((length, statistics.median(values)) for length, values in by_length.items())
    # The reference is the median of the three longest lengths: robust to one noisy top point.
    # If those three still climb step by step beyond the band, the sweep stopped before the
    # plateau: then the longest point is the best estimate and the plateau is marked unreached.
    top = [value for _, value in points[-3:]]
    climbing = len(top) >= 2 and all(b > a * (1 + tolerance) for a, b in pairwise(top))
    reference = top[-1] if climbing else statistics.median(top)
    accepted: list[tuple[int, float]] = []
    skipped = 0
    for length, value in reversed(points):
        if abs(value - reference) <= tolerance * reference:
            accepted.append((length, value))
            skipped = 0
        else:
            skipped += 1
            if skipped == 2:
                break
    if not accepted:
        accepted = points[-1:]
    values = [value for _, value in accepted]
    value = statistics.median(values)
    spread = (max(values) - min(values)) / value if value else 0.0
    lengths = tuple(sorted(length for length, _ in accepted))
    return Plateau(value, spread, lengths, rising=lengths[0] > points[0][0], reached=not climbing)
