"""Statistics over the repeats of one sweep point.

A point is repeated (at least three times) so that one disturbed run shows up as spread rather than
as the figure. The median is the reported value: it ignores a single outlier in either direction,
which the mean does not.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Summary", "summarise", "median_or_none", "MIN_REPEATS"]

#: Fewest repeats the sweep accepts: with three, the median survives one outlier.
MIN_REPEATS = 3


@dataclass(frozen=True)
class Summary:
    """Median, extremes and relative spread of some samples.

    Attributes
    ----------
    median, minimum, maximum : float
        Of the samples.
    spread : float
        ``(maximum - minimum) / median``: 0.05 means the repeats differ by 5 % of the figure.
    count : int
        Number of samples.
    """

    median: float
    minimum: float
    maximum: float
    spread: float
    count: int


def summarise(samples: Sequence[float]) -> Summary:
    """Summarise ``samples`` (at least one). Raises :class:`ValueError` when empty."""
    if not samples:
        raise ValueError("no samples to summarise")
    median = float(statistics.median(samples))
    low, high = float(min(samples)), float(max(samples))
    spread = (high - low) / median if median else 0.0
    return Summary(median, low, high, spread, len(samples))


def median_or_none(samples: Sequence[float | None]) -> float | None:
    """Median of the samples that exist, or ``None`` when none does (a device without timers)."""
    present = [s for s in samples if s is not None]
    return float(statistics.median(present)) if present else None

