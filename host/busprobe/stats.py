"""Statistics over the repeats of one sweep point.

A point is repeated (at least three times) so that one disturbed run shows up as spread rather than
as the figure. The median is the reported value: it ignores a single outlier in either direction,
which the mean does not. Tables and plots show the repeats as ``mean ± spread`` with error bars
from the least to the most (:func:`error_bar`), as measurements with error bars are shown.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Summary", "summarise", "median_or_none", "error_bar", "point_spread",
           "MIN_REPEATS"]

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
    mean: float = 0.0


def summarise(samples: Sequence[float]) -> Summary:
    """Summarise ``samples`` (at least one). Raises :class:`ValueError` when empty."""
    if not samples:
        raise ValueError("no samples to summarise")
    median = float(statistics.median(samples))
    low, high = float(min(samples)), float(max(samples))
    spread = (high - low) / median if median else 0.0
    return Summary(median, low, high, spread, len(samples), float(statistics.fmean(samples)))


def median_or_none(samples: Sequence[float | None]) -> float | None:
    """Median of the samples that exist, or ``None`` when none does (a device without timers)."""
    present = [s for s in samples if s is not None]
    return float(statistics.median(present)) if present else None



def error_bar(point: Mapping[str, Any]) -> tuple[float, float, float]:
    """``(mean, below, above)`` of a result point's host-timed repeats: the mean and how far
    its least and most repeat lie below and above it (a point written before the mean was
    recorded: the mean of its samples, or its median)."""
    samples = point.get("samples") or []
    mean = point.get("throughput_mean")
    if mean is None:
        mean = statistics.fmean(samples) if samples else point["throughput"]
    low = point.get("throughput_min", mean)
    high = point.get("throughput_max", mean)
    return float(mean), max(float(mean) - low, 0.0), max(high - float(mean), 0.0)


def point_spread(point: Mapping[str, Any]) -> float:
    """Half the range of a point's repeats, bytes/s: the ``±`` of ``mean ± spread``."""
    return (float(point.get("throughput_max", point["throughput"]))
            - float(point.get("throughput_min", point["throughput"]))) / 2
