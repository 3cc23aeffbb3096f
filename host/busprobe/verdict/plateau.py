"""Plateau detection: the throughput a sweep settles at once transfers are long enough.

A throughput-versus-length curve rises while per-transfer costs dominate and then flattens. The
plateau is the run of the longest lengths whose figures agree: walking from the longest length
towards shorter ones, a length joins while the spread of all the joined figures, (max − min) /
median, stays within the *band*. The band is the repeats' own spread (the median over those
points of each point's (max − min) / median of its repeats: two figures closer than that cannot be
told apart) or the stated tolerance, at most 1 %, whichever is wider. The plateau starts at the
shortest length that joined.

With fewer than two lengths in that run there is no plateau: the longest two already differ by
more than the band (the curve still rises, or falls), or only one length was swept. The result
is then *not reached*: its value is the longest length's figure (a lower bound while the curve
rises) and the verdicts say so.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Plateau", "detect_plateau", "DEFAULT_TOLERANCE", "MAX_TOLERANCE"]

#: Relative spread the plateau's figures may have when the repeats agree more closely than
#: that (a deterministic simulation): 1 %, the most a plateau may spread and still be called flat.
DEFAULT_TOLERANCE = 0.01
MAX_TOLERANCE = 0.01

#: One point of a curve: ``(length, throughput)``, or ``(length, throughput, repeat spread)``.
CurvePoint = tuple[int, float] | tuple[int, float, float | None]


@dataclass(frozen=True)
class Plateau:
    """A curve's plateau, or the figure it ends at when it has none.

    Attributes
    ----------
    value : float
        Median throughput of the plateau's points (bytes/s); when not ``reached``, the longest
        length's figure.
    spread : float
        (max - min) / value over the plateau's points (0 when not reached).
    lengths : tuple of int
        The transfer lengths that form the plateau, ascending (the longest alone when not
        reached).
    rising : bool
        Whether shorter lengths below the plateau were left out (the curve had a rising part).
    reached : bool
        False when no two longest lengths agree within ``band``.
    band : float
        The relative spread the plateau's figures were allowed (see the module).
    why : str
        When not reached: ``"rising"`` (the longest length is the highest: a lower bound),
        ``"falling"``, or ``"one length"``; empty when reached.
    """

    value: float
    spread: float
    lengths: tuple[int, ...]
    rising: bool
    reached: bool = True
    band: float = DEFAULT_TOLERANCE
    why: str = ""

    @property
    def start(self) -> int:
        """Shortest transfer length that reaches the plateau (the longest one when none)."""
        return self.lengths[0]


def _spread(values: list[float]) -> float:
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle else 0.0


def detect_plateau(curve: Iterable[CurvePoint], *,
                   tolerance: float = DEFAULT_TOLERANCE) -> Plateau | None:
    """Plateau of ``curve`` (points in any order), or None when it has no positive figure.

    Each point is ``(length, throughput)`` or ``(length, throughput, spread of its repeats)``.
    With several points at one length (queue depths merged by the caller) the median of that
    length is used. ``tolerance`` may not exceed :data:`MAX_TOLERANCE`.
    """
    if not 0 <= tolerance <= MAX_TOLERANCE:
        raise ValueError(f"plateau tolerance {tolerance} is not within 0..{MAX_TOLERANCE}")
    by_length: dict[int, list[float]] = {}
    noise: dict[int, list[float]] = {}
    for length, throughput, *rest in curve:
        if throughput is not None and throughput > 0:
            by_length.setdefault(int(length), []).append(float(throughput))
            if rest and rest[0] is not None:
                noise.setdefault(int(length), []).append(float(rest[0]))
    if not by_length:
        return None
    points = sorted((length, statistics.median(values)) for length, values in by_length.items())
    accepted: list[tuple[int, float]] = []
    band = tolerance
    for length, value in reversed(points):
        candidate = [*accepted, (length, value)]
        spreads = [s for n, _ in candidate for s in noise.get(n, ())]
        wider = max(tolerance, statistics.median(spreads)) if spreads else tolerance
        if len(candidate) > 1 and _spread([v for _, v in candidate]) > wider:
            break
        accepted, band = candidate, wider
    longest, top = points[-1]
    if len(accepted) < 2:
        if len(points) == 1:
            why = "one length"
        else:
            why = "rising" if top > points[-2][1] else "falling"
        return Plateau(top, 0.0, (longest,), rising=False, reached=False, band=band, why=why)
    values = [value for _, value in accepted]
    lengths = tuple(sorted(length for length, _ in accepted))
    return Plateau(statistics.median(values), _spread(values), lengths,
                   rising=lengths[0] > points[0][0], reached=True, band=band)
