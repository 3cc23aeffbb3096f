"""What a device selector selects: :class:`TargetDescription`, built once per selector."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..buses import Bus
from ..selectors import Selector, UsbTarget
from ..topology.hop import Hop
from ..transport import BusDescription, InvalidRequest, TransportError
from .options import Option, parse_options

__all__ = ["TargetDescription", "Describer", "simulated_target"]


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


#: ``describe(selector, spec, sysfs_root=None)``: what :attr:`busprobe.buses.Bus.describe_sim`
#: names.
Describer = Callable[[Selector, Bus, "str | Path | None"], TargetDescription]


def simulated_target(name: str, options: Sequence[Option],
                     bus: Callable[[Mapping[str, Any]], BusDescription],
                     hops: Callable[[Mapping[str, Any]], Sequence[Hop]]) -> Describer:
    """The describer of a simulated target (``sim:usb2``, ...): its options checked by
    ``options``, then the bus and the hops those options stand for."""

    def describe(selector: Selector, spec: Bus,
                 sysfs_root: str | Path | None = None) -> TargetDescription:
        checked = parse_options(name, selector.options, options)
        return TargetDescription(selector.text, selector.scheme, selector.target, checked, spec,
                                 bus=bus(checked), hops=tuple(hops(checked)), simulated=True)

    describe.__doc__ = f"The description of a ``{name}`` selector (``sysfs_root`` is not needed)."
    return describe
