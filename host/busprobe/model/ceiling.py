"""The closed-form throughput ceiling of a bus configuration, and the one entry point to it.

:func:`ceiling_for` dispatches on :attr:`BusDescription.kind` to the bus's model
(:mod:`.usb2`, :mod:`.usb3`, :mod:`.pcie`). Every model returns a :class:`Ceiling` whose
``formula`` shows the derivation with the numbers put in, so a person can check it by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..transport import BusDescription

__all__ = ["Ceiling", "ceiling_for", "link_ceiling", "DIRECTIONS"]

#: The directions each bus kind has (USB named from the host, PCIe from the device's DMA).
DIRECTIONS: dict[str, tuple[str, ...]] = {
    "usb2-hs": ("in", "out"),
    "usb3-ss": ("in", "out"),
    "pcie": ("write", "read", "loopback"),
}


@dataclass(frozen=True)
class Ceiling:
    """The most payload a bus configuration can move per second in one direction.

    Attributes
    ----------
    throughput : float
        Payload bytes per second.
    formula : str
        The derivation, one step per line, with every number substituted.
    parts : dict
        Each term of the formula by name (bytes, seconds, ratios), for tests and reports.
    direction : str
        ``in``/``out`` (USB) or ``write``/``read`` (PCIe).
    model : str
        What the ceiling describes, e.g. ``"usb2-hs link"``, ``"usb2-hs host profile ehci"``,
        ``"pcie gen2 x1 MPS 128"``.
    """

    throughput: float
    formula: str
    parts: dict[str, Any] = field(default_factory=dict)
    direction: str = ""
    model: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"throughput": self.throughput, "formula": self.formula, "parts": dict(self.parts),
                "direction": self.direction, "model": self.model}


def ceiling_for(bus: BusDescription, direction: str, *, length: int | None = None,
                queue_depth: int | None = None) -> Ceiling:
    """Closed-form ceiling for ``bus`` in ``direction``.

    Parameters
    ----------
    bus : BusDescription
        The configuration in force. For USB 2.0 the host profile (``bus.host_profile``, default
        ``ideal``) is part of the ceiling; for PCIe, ``mps``/``mrrs`` (default 128/512) and
        ``bus.extra`` keys ``rcb``, ``addr64``, ``ecrc`` and the DLLP assumptions of
        :class:`~busprobe.model.pcie.PcieAssumptions`.
    direction : str
        One of :data:`DIRECTIONS` for the bus kind.
    length : int, optional
        Transfer length in bytes. Omitted: the plateau (long transfers, start-up amortised).
    queue_depth : int, optional
        Transfers outstanding. Omitted: deep enough that turnaround is hidden.

    Raises
    ------
    ValueError
        Unknown bus kind, direction or a configuration the model cannot describe (one line).
    """
    kinds = DIRECTIONS.get(bus.kind)
    if kinds is None:
        raise ValueError(f"no ceiling model for bus kind {bus.kind!r} "
                         f"(known: {', '.join(DIRECTIONS)})")
    if direction not in kinds:
        raise ValueError(f"direction {direction!r} does not exist on {bus.kind} "
                         f"(use {' or '.join(kinds)})")
    if length is not None and length <= 0:
        raise ValueError(f"transfer length must be positive, not {length}")
    if queue_depth is not None and queue_depth < 1:
        raise ValueError(f"queue depth must be at least 1, not {queue_depth}")
    # Imported here so each bus model stays importable alone and this module has no cycle.
    if bus.kind == "usb2-hs":
        from .usb2 import usb2_ceiling
        return usb2_ceiling(bus, direction, length=length, queue_depth=queue_depth)
    if bus.kind == "usb3-ss":
        from .usb3 import usb3_ceiling
        return usb3_ceiling(bus, direction, length=length, queue_depth=queue_depth)
    from .pcie import pcie_ceiling
    return pcie_ceiling(bus, direction, length=length, queue_depth=queue_depth)


def link_ceiling(bus: BusDescription, direction: str) -> Ceiling:
    """What the *bus* allows, whatever the host: the plateau ceiling with the ideal host profile.

    The verdict compares measurements with this; :func:`ceiling_for` with the real profile says
    what that host can reach (an EHCI host at 100 % of its profile is still host-limited). For
    PCIe the root complex's read latency is likewise left out: a read plateau held down by it is
    upstream-limited, not link-limited.
    """
    if bus.kind == "usb2-hs":
        bus = replace(bus, host_profile="ideal")
    elif bus.kind == "pcie" and "read_latency_ns" in bus.extra:
        bus = replace(bus, extra={k: v for k, v in bus.extra.items() if k != "read_latency_ns"})
    return ceiling_for(bus, direction)
