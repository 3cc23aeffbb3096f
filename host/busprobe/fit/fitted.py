"""A fitted host profile: each parameter's value, how sure the sweep makes it, and what would help.

:func:`fit_sweep` runs the whole fit: read and check the result (:mod:`.observations`), least
squares (:mod:`.estimate`), intervals (:mod:`.uncertainty`), suggestions (:mod:`.suggest`).

The value written for a continuous parameter is the middle of its interval (± half its width):
on the model's staircase the least-squares point is just one of the equally good values, and the
middle is the one furthest from being wrong. A parameter is *determined* when that half
width is within :data:`GOAL_SHARE` of the value (or below :data:`GOAL_FLOOR`, the scale below
which a figure does not matter); an integer or the granularity, when one value alone fits.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from ..protocol.names import Direction
from .estimate import Estimate, estimate
from .observations import SweepData, read_sweep
from .parameters import NS_PER_CYCLE, Candidate
from .suggest import Suggestion, suggest
from .uncertainty import (
    SCANNED,
    Interval,
    consistent_granularity,
    consistent_per_uframe,
    interval_of,
    noise_of,
)

__all__ = ["FittedValue", "FittedProfile", "fit_sweep", "GOAL_SHARE", "GOAL_FLOOR", "PROFILE_KEY"]

#: A continuous parameter is determined when its half width is at most this share of it ...
GOAL_SHARE = 0.10
#: ... or at most this, in its unit: a microsecond is under 1 % of a microframe; a gap is known
#: to the line cycle at best.
GOAL_FLOOR = {"completion_us": 1.0, "resubmit_us": 1.0, "gap_ns": NS_PER_CYCLE}
#: The profile key of each scanned coordinate.
PROFILE_KEY = {"completion_us": "completion_latency_us", "resubmit_us": "resubmit_latency_us",
               "gap_ns": "inter_transaction_gap_ns"}
UNITS = {"completion_latency_us": "µs", "resubmit_latency_us": "µs",
         "inter_transaction_gap_ns": "ns", "max_bulk_in_per_uframe": "packets/µframe",
         "max_bulk_out_per_uframe": "packets/µframe", "completion_on_uframe": ""}


@dataclass(frozen=True)
class FittedValue:
    """One profile parameter as fitted.

    Attributes
    ----------
    key : str
        The profile key (``completion_latency_us``, ...).
    value : int, float or bool
        What the profile gets.
    uncertainty : str
        How sure, in words and numbers (``fits 19.82..20.30 µs (± 0.24 about its middle; least
        squares 20.18)``, ``exactly (no other value fits)``).
    determined : bool
        The sweep pins it down (see module).
    why : str
        When not determined, why; empty otherwise.
    suggestions : list of Suggestion
        Points that would pin it down (may be empty when no length or depth would).
    """

    key: str
    value: int | float | bool
    uncertainty: str
    determined: bool
    why: str = ""
    suggestions: list[Suggestion] = field(default_factory=list)


@dataclass(frozen=True)
class FittedProfile:
    """The outcome of a fit.

    Attributes
    ----------
    data : SweepData
        The result fitted.
    estimate : Estimate
        The least squares and its by-products.
    values : dict
        Profile key -> :class:`FittedValue`, in the schema's order.
    written : Candidate
        The parameters written (see module).
    intervals : dict
        Scanned coordinate name -> :class:`~.uncertainty.Interval`.
    noise : float
        The misfit above the best that still fits as well.
    """

    data: SweepData
    estimate: Estimate
    values: dict[str, FittedValue]
    written: Candidate
    intervals: dict[str, Interval]
    noise: float

    @property
    def undetermined(self) -> list[FittedValue]:
        return [v for v in self.values.values() if not v.determined]


def fit_sweep(path: str | Path) -> FittedProfile:
    """Fit the result at ``path``; :class:`ValueError` (one line) if it cannot be fitted."""
    data = read_sweep(path)
    found = estimate(data)
    noise = noise_of(found)
    intervals = {name: interval_of(found, name, noise) for name, _ in SCANNED}
    written = _written(found, intervals, noise)
    values: dict[str, FittedValue] = {}
    for direction, key in (("in", "max_bulk_in_per_uframe"), ("out", "max_bulk_out_per_uframe")):
        values[key] = _per_uframe(found, written, direction, key, noise)
    for name, _ in SCANNED:
        values[PROFILE_KEY[name]] = _continuous(found, written, intervals[name])
    values["completion_on_uframe"] = _granularity(found, noise)
    order = ("max_bulk_in_per_uframe", "max_bulk_out_per_uframe", "inter_transaction_gap_ns",
             "completion_latency_us", "resubmit_latency_us", "completion_on_uframe")
    return FittedProfile(data, found, {k: values[k] for k in order}, written, intervals, noise)


def _written(found: Estimate, intervals: dict[str, Interval], noise: float) -> Candidate:
    """The middles of the intervals, if together they still fit within the noise (each middle
    was found with the others re-fitted, so together they may not); else the best fit."""
    candidate = replace(found.best, completion_us=intervals["completion_us"].middle,
                        resubmit_us=intervals["resubmit_us"].middle,
                        gap_ns=intervals["gap_ns"].middle)
    return candidate if found.objective(candidate) <= found.misfit + noise else found.best


def _continuous(found: Estimate, written: Candidate, interval: Interval) -> FittedValue:
    key = PROFILE_KEY[interval.name]
    unit = UNITS[key]
    value = {"completion_us": written.completion_us, "resubmit_us": written.resubmit_us,
             "gap_ns": written.gap_ns}[interval.name]
    digits = _digits(unit)
    text = (f"fits {interval.low:.{digits}f}..{interval.high:.{digits}f} {unit} "
            f"(± {interval.half_width:.{digits}f} about its middle; least squares "
            f"{interval.best:.{digits}f})")
    determined = interval.closed and interval.half_width <= max(
        GOAL_SHARE * abs(interval.middle), GOAL_FLOOR[interval.name])
    if determined:
        return FittedValue(key, round(value, _digits(unit)), text, True)
    why = (f"the sweep allows {interval.low:.{digits}f}..{interval.high:.{digits}f} {unit}"
           + ("" if interval.closed else " and more (the misfit never rose)"))
    hints = suggest(found.objective, interval.low_end, interval.high_end,
                    found.fitted_directions)
    return FittedValue(key, round(value, _digits(unit)), text, False, why, hints)


def _digits(unit: str) -> int:
    return 2 if unit == "µs" else 1


def _per_uframe(found: Estimate, written: Candidate, direction: str, key: str,
                noise: float) -> FittedValue:
    value = written.per_uframe[0 if direction == Direction.IN else 1]
    if direction not in found.fitted_directions:
        other = Direction.OUT if direction == Direction.IN else Direction.IN
        return FittedValue(key, value, f"copied from {other.upper()}", False,
                           f"the sweep has no {direction.upper()} ladder (sweep --direction "
                           f"{direction} to measure it)")
    fits = consistent_per_uframe(found, direction, noise)
    if fits == [value]:
        return FittedValue(key, value, "exactly (no other value fits)", True)
    listed = ", ".join(str(n) for n in fits)
    return FittedValue(key, value, f"one of {listed}", False,
                       f"{listed} packets per microframe fit equally: the sweep never filled a "
                       f"microframe beyond {min(fits)} (a larger gap leaves no room for more)")


def _granularity(found: Estimate, noise: float) -> FittedValue:
    value = found.best.completion_on_uframe
    misfits = {u: m for u, (_, m) in found.by_granularity.items()}
    text = f"misfit {misfits[value]:.3g} against {misfits[not value]:.3g} for {not value}"
    if consistent_granularity(found, noise) == [value]:
        return FittedValue("completion_on_uframe", value, text, True)
    hints = suggest(found.objective, found.by_granularity[True][0],
                    found.by_granularity[False][0], found.fitted_directions)
    return FittedValue("completion_on_uframe", value, text, False,
                       "completions on microframe boundaries and anywhere fit equally", hints)
