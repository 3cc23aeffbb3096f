"""The one entry point to the closed-form ceilings: :func:`ceiling_for` and :func:`link_ceiling`.

Both dispatch on :attr:`BusDescription.kind` through the bus registry (:mod:`busprobe.buses`):
each row names its model (``ceiling``) and what the link alone is (``link_only``). Every model
returns a :class:`~.ceiling_type.Ceiling` whose ``formula`` shows the derivation with the numbers
put in, so a person can check it by hand.
"""

from __future__ import annotations

from .. import buses
from ..transport import BusDescription
from .ceiling_type import Ceiling

__all__ = ["Ceiling", "ceiling_for", "link_ceiling", "DIRECTIONS"]

#: The directions each bus kind has (USB named from the host, PCIe from the device's DMA).
DIRECTIONS: dict[str, tuple[str, ...]] = {bus.kind: bus.directions for bus in buses.BUSES}


def _row(bus: BusDescription) -> buses.Bus:
    try:
        return buses.by_kind(bus.kind)
    except ValueError:
        raise ValueError(f"no ceiling model for bus kind {bus.kind!r} "
                         f"(known: {', '.join(DIRECTIONS)})") from None


def ceiling_for(bus: BusDescription, direction: str, *, length: int | None = None,
                queue_depth: int | None = None, transfers: int | None = None) -> Ceiling:
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
    transfers : int, optional
        Transfers in one measured run (with ``length``): the ceiling of that run as the host
        times it, from the first submission to the last completion, instead of the steady
        state; ``parts["device_ceiling"]`` then bounds the device-timed figure (None where the
        device does not time, or no window).

    Raises
    ------
    ValueError
        Unknown bus kind, direction or a configuration the model cannot describe (one line).
    """
    row = _row(bus)
    if direction not in row.directions:
        raise ValueError(f"direction '{direction}' does not exist on {bus.kind} "
                         f"(use {' or '.join(row.directions)})")
    if length is not None and length <= 0:
        raise ValueError(f"transfer length must be positive, not {length}")
    if queue_depth is not None and queue_depth < 1:
        raise ValueError(f"queue depth must be at least 1, not {queue_depth}")
    if transfers is not None and transfers < 1:
        raise ValueError(f"transfers must be at least 1, not {transfers}")
    model = buses.load(row.ceiling)
    if transfers is None:
        return model(bus, direction, length=length, queue_depth=queue_depth)
    return model(bus, direction, length=length, queue_depth=queue_depth, transfers=transfers)


def link_ceiling(bus: BusDescription, direction: str) -> Ceiling:
    """What the *bus* allows, whatever the host: the plateau ceiling of the link alone.

    The verdict compares measurements with this; :func:`ceiling_for` with the real host says
    what that host can reach (an EHCI host at 100 % of its profile is still host-limited). The
    host side is what the bus's ``link_only`` leaves out: USB 2.0's host-controller profile
    (the ideal one is used), PCIe's root-complex read latency (a read plateau held down by it is
    upstream-limited, not link-limited).
    """
    link_only = buses.load(_row(bus).link_only)
    return ceiling_for(link_only(bus), direction)
