"""Figures above the link, marked where they stand and said why (issue 47.4).

A host-timed figure runs from the first submission to the last completion. A short run can fit
its bytes into a window a little shorter than the whole bus intervals (USB microframes) it used:
the idle end of its last interval is left out, so its figure may read above what the link
allows, while the same point timed by the device over whole bus intervals does not. Such a
figure is honest against its run ceiling (which counts the same window), but a reader must
never meet a figure above the link without the reason beside it: the tables mark it with
:data:`MARK` and add one line per marked figure (:func:`point_note`, :func:`sum_note`).

The bound is the point's ``link_ceiling`` (the link model of its bus and direction); a sum of
targets together is bounded by one link when they share one bus
(:func:`busprobe.topology.shared.is_one_bus`), by the sum of their links otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .lengths import format_size
from .units import Units

__all__ = ["MARK", "is_above", "mark", "point_note", "sum_bound", "sum_note"]

#: What follows a figure above its link in a table; its note says why.
MARK = "^"


def is_above(figure: float | None, bound: float | None) -> bool:
    """Whether ``figure`` reads above ``bound`` (False when either is unknown)."""
    return figure is not None and bound is not None and bound > 0 and figure > bound


def mark(text: str, figure: float | None, bound: float | None) -> str:
    """``text`` followed by :data:`MARK` when ``figure`` is above ``bound``."""
    return text + MARK if is_above(figure, bound) else text


def _where(point: Mapping[str, Any], who: str) -> str:
    return (f"{who}{point['direction']} {format_size(point['length'])}B qd "
            f"{point['queue_depth']}")


def point_note(point: Mapping[str, Any], units: Units, who: str = "") -> str | None:
    """The reason beside a point's host-timed figure above its link, or None when it is not
    above (``who`` prefixes the point's name, e.g. ``"#0 alone "``)."""
    figure, link = point.get("throughput"), point.get("link_ceiling")
    if not is_above(figure, link):
        return None
    assert figure is not None and link is not None
    text = (f"{MARK.strip()} {_where(point, who)}: {units.format(figure)} is "
            f"{(figure / link - 1) * 100:.1f} % above what the link allows "
            f"({units.format(link)}): the host timed it from the first submission to the last "
            "completion, a window shorter than the whole bus intervals it used")
    device = point.get("device_throughput")
    if device:
        text += (f"; timed by the device over whole bus intervals it is {units.format(device)} "
                 f"({device / link * 100:.1f} % of the link)")
    ceiling = point.get("ceiling")
    if ceiling:
        text += f"; this run's ceiling, for the same window, is {units.format(ceiling)}"
    return text + "."


def sum_bound(points: Sequence[Mapping[str, Any] | None], one_bus: bool) -> float | None:
    """What the link(s) allow the sum of ``points`` (one per target, at one row) together: one
    link when the targets share one bus, the sum of their links otherwise; None when a link
    is unknown."""
    links = [p.get("link_ceiling") if p else None for p in points]
    if not links or any(not link for link in links):
        return None
    return max(links) if one_bus else sum(links)


def sum_note(row: Mapping[str, Any], bound: float, one_bus: bool, units: Units) -> str | None:
    """The reason beside a row's sum together above what the link(s) allow, or None."""
    figure = row.get("sum_throughput")
    if not is_above(figure, bound):
        return None
    assert figure is not None
    what = "their one shared bus allows" if one_bus else "their links together allow"
    return (f"{MARK.strip()} {_where(row, 'sum together ')}: {units.format(figure)} is "
            f"{(figure / bound - 1) * 100:.1f} % above what {what} "
            f"({units.format(bound)}): each target's bytes are counted over the targets' common "
            "window, from the first submission to the last completion, which is shorter than "
            "the whole bus intervals they used.")
