"""What a device selector selects: :class:`TargetDescription`, built once per selector."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..buses import Bus
from ..selectors import UsbTarget
from ..topology.hop import Hop
from ..transport import BusDescription, InvalidRequest, TransportError

__all__ = ["TargetDescription"]


@dataclass(frozen=True)
class TargetDescription:
    """A device selector, parsed and checked, with the bus and hops it stands for.

    ``busprobe model``, ``busprobe topology`` and the sweep all start from this, so they agree on
    what a selector means; a transport factory (:attr:`busprobe.buses.Bus.sim_backend`) is given
    it and builds its device from it. ``text``, ``scheme``, ``target`` and ``options`` are the
    fields of :class:`~busprobe.selectors.Selector`, with the options checked and typed.

    Attributes
    ----------
    text : str
        The selector as typed.
    scheme : str
        ``usb``, ``pcie`` or ``sim``.
    target : str
        What follows the scheme, without options (``1209:0001#SER``, ``0000:01:00.0``, ``pcie``).
    options : dict
        Every option the target takes, typed, with its default where the selector gave none
        (``sim:pcie``: ``gen``, ``width``, ... ``latency_ns``; a USB device: none).
    spec : Bus
        The bus's row in :mod:`busprobe.buses`.
    bus : BusDescription or None
        The configuration the model needs; ``None`` for a real device described without sysfs.
    hops : tuple of Hop
        Root of the bus first, the device last; empty for a real device described without sysfs.
    address : UsbTarget or str or None
        A real device's parsed address (:class:`~busprobe.selectors.UsbTarget`, or the PCI
        address in lower case); ``None`` for a simulated target.
    simulated : bool
        Whether the target is a simulation.
    bus_error : TransportError or None
        Why ``bus`` is ``None`` although the hops were read (a USB device at full speed, a PCIe
        function with its link down): the topology is still worth showing, a model is not.
    """

    text: str
    scheme: str
    target: str
    options: Mapping[str, Any]
    spec: Bus
    bus: BusDescription | None = None
    hops: tuple[Hop, ...] = ()
    address: UsbTarget | str | None = None
    simulated: bool = field(default=False)
    bus_error: TransportError | None = None

    def require_bus(self) -> BusDescription:
        """:attr:`bus`, or the one-line error saying why there is none."""
        if self.bus is not None:
            return self.bus
        raise self.bus_error or InvalidRequest(f"{self.text}: described without sysfs, so its "
                                               "bus is unknown until it is opened")

    def hops_json(self) -> list[dict[str, Any]]:
        """The hops as ``busprobe topology --json`` and result files record them."""
        return [hop.to_json() for hop in self.hops]
