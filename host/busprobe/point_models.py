"""The models a sweep asks about each point: this point's ceiling, and what the link allows.

Each answers ``None`` where no model covers the bus (or the model package is not installed), so
a sweep always runs; the verdict and the reports then say there is no model.

A point is measured as finite runs (its repeats), so its ceiling is :func:`run_ceiling`: the
most such a run can read on the host's clock and, where the device times, on the device's
(``docs/DESIGN.md`` §6.6). :func:`model_ceiling` is the steady state, what sizes the runs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from .transport import BusDescription

__all__ = ["model_ceiling", "run_ceiling", "link_model", "PointCeiling"]

log = logging.getLogger(__name__)


def model_ceiling(bus: BusDescription, direction: str, length: int,
                  queue_depth: int) -> tuple[float, str] | None:
    """The ceiling model's figure for a point, or ``None`` when the model is not installed or
    does not cover this bus (the sweep must work without it)."""
    try:
        from .model import ceiling_for
    except ImportError:
        return None
    try:
        ceiling = ceiling_for(bus, direction, length=length, queue_depth=queue_depth)
    except (ValueError, NotImplementedError, KeyError) as exc:
        log.info("no ceiling model for %s %s: %s", bus.kind, direction, exc)
        return None
    return float(ceiling.throughput), str(ceiling.formula)


@dataclass(frozen=True)
class PointCeiling:
    """A point's ceilings: host-timed and device-timed (``None``: the model has none)."""

    throughput: float
    formula: str
    device: float | None = None


def run_ceiling(bus: BusDescription, direction: str, length: int, queue_depth: int,
                transfers: int) -> PointCeiling | None:
    """The most one run of ``transfers`` transfers reads (``ceiling_for(..., transfers=)``),
    or ``None`` as :func:`model_ceiling`."""
    try:
        from .model import ceiling_for
    except ImportError:
        return None
    try:
        ceiling = ceiling_for(bus, direction, length=length, queue_depth=queue_depth,
                              transfers=transfers)
    except (ValueError, NotImplementedError, KeyError) as exc:
        log.info("no ceiling model for %s %s: %s", bus.kind, direction, exc)
        return None
    device = ceiling.parts.get("device_ceiling")
    return PointCeiling(float(ceiling.throughput), str(ceiling.formula),
                        None if device is None else float(device))


def link_model(bus: BusDescription, direction: str) -> float | None:
    """What the link allows in ``direction`` whatever the host (the verdict's link model), or
    ``None`` where there is no model for this bus."""
    from .model import link_ceiling

    try:
        return float(link_ceiling(bus, direction).throughput)
    except (ValueError, NotImplementedError, KeyError) as exc:
        log.info("no link model for %s %s: %s", bus.kind, direction, exc)
        return None
