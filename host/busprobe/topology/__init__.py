"""Where a real device sits: every hop from the root of its bus to it, with link caps and status.

All readers take a ``sysfs_root`` (``/sys`` by default) so tests run them on fixture trees.
:func:`topology_for` serves the real backends; :func:`bus_from_sysfs` gives the bus configuration
of a real device without opening it. A simulated target's hops are part of its description
(:func:`busprobe.targets.describe`, which also serves ``busprobe topology``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..buses import PCIE, USB2_HS
from ..selectors import Selector, parse_pci_address, parse_selector, parse_usb_target
from ..transport import BusDescription, DeviceNotFound, InvalidRequest
from .hop import Hop, format_hops
from .pci import pcie_hops
from .usb import find_usb_device, host_profile_for_driver, usb_hops

__all__ = ["Hop", "topology_for", "hops_for", "bus_from_hops", "bus_from_sysfs", "format_hops",
           "pcie_hops", "usb_hops", "find_usb_device"]


def hops_for(sel: Selector, *, sysfs_root: str | Path = "/sys") -> list[Hop]:
    """The hops of a real device, root first; :class:`InvalidRequest` for a simulated one."""
    if sel.scheme == PCIE.scheme:
        return pcie_hops(parse_pci_address(sel.target), sysfs_root=sysfs_root)
    if sel.scheme == USB2_HS.scheme:
        usb = parse_usb_target(sel.target)
        return usb_hops(find_usb_device(usb.vid, usb.pid, usb.serial, port=usb.port,
                                        sysfs_root=sysfs_root), sysfs_root=sysfs_root)
    raise InvalidRequest(f"{sel.text} is simulated: its hops are in its description "
                         "(busprobe.targets.describe)")


def topology_for(selector: str | Selector, *,
                 sysfs_root: str | Path = "/sys") -> list[dict[str, Any]]:
    """One JSON object per hop, root first, for a real device's selector."""
    sel = parse_selector(selector) if isinstance(selector, str) else selector
    return [hop.to_json() for hop in hops_for(sel, sysfs_root=sysfs_root)]


def bus_from_hops(sel: Selector, hops: list[Hop]) -> BusDescription:
    """The :class:`BusDescription` of the real device at the end of ``hops``."""
    device = hops[-1]
    if sel.scheme == PCIE.scheme:
        if device.speed is None:
            raise DeviceNotFound(f"{sel.target}: link down or no PCI Express capability "
                                 "(nothing to model)")
        extra = {"speed_cap": device.speed_cap, "width_cap": device.width_cap}
        return BusDescription(PCIE.kind, device.speed, device.width or 1, mps=device.mps,
                              mrrs=device.mrrs, extra=extra)
    profile = host_profile_for_driver(hops[0].driver)
    if device.speed != "high":
        raise InvalidRequest(f"{sel.target} runs at {device.speed or 'unknown'} speed; busprobe "
                             "models USB 2.0 high speed (SuperSpeed is not built yet)")
    return BusDescription(USB2_HS.kind, "high", 1, host_profile=profile or "ideal",
                          max_packet_size=512,
                          extra={} if profile else {"note": "unknown host controller driver "
                                                            f"{hops[0].driver}; ideal profile"})


def bus_from_sysfs(sel: Selector, *, sysfs_root: str | Path = "/sys") -> BusDescription:
    """The :class:`BusDescription` of a real device as sysfs shows it (no device is opened)."""
    return bus_from_hops(sel, hops_for(sel, sysfs_root=sysfs_root))
