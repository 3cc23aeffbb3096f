"""The models a sweep asks about each point: this point's ceiling, and what the link allows.

Both answer ``None`` where no model covers the bus (or the model package is not installed), so
a sweep always runs; the verdict and the reports then say there is no model.
"""

from __future__ import annotations

import logging

from .transport import BusDescription

__all__ = ["model_ceiling", "link_model"]

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


def link_model(bus: BusDescription, direction: str) -> float | None:
    """What the link allows in ``direction`` whatever the host (the verdict's link model), or
    ``None`` where there is no model for this bus."""
    from .model import link_ceiling

    try:
        return float(link_ceiling(bus, direction).throughput)
    except (ValueError, NotImplementedError, KeyError) as exc:
        log.info("no link model for %s %s: %s", bus.kind, direction, exc)
        return None
