"""Where a device sits: every hop from the root of its bus to it, with link caps and status.

All readers take a ``sysfs_root`` (``/sys`` by default) so tests run them on fixture trees.
:func:`topology_for` serves ``busprobe topology``, the real backends and the sim transports
(simulated targets return the hops they model); :func:`bus_from_sysfs` gives ``busprobe model``
the bus configuration of a real device without opening it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..selectors import Selector, parse_selector
from ..transport import BusDescription, DeviceNotFound, InvalidRequest
from .hop import Hop, format_hops
from .pci import pcie_hops
from .sim import sim_hops
from .usb import find_usb_device, host_profile_for_driver, usb_hops

__all__ = ["Hop", "topology_for", "bus_from_sysfs", "format_hops", "pcie_hops", "usb_hops",
           "sim_hops", "find_usb_device", "parse_usb_target"]


def parse_usb_target(target: str) -> tuple[int, int, str | None]:
    """``"1209:0001#SER"`` -> ``(0x1209, 0x0001, "SER")``; :class:`InvalidRequest` if malformed."""
    ids, _, serial = target.partition("#")
    vid, sep, pid = ids.partition(":")
    try:
        if not sep:
            raise ValueError
        return int(vid, 16), int(pid, 16), serial or None
    except ValueError:
        raise InvalidRequest(f"bad USB target {target!r}: expected VID:PID[#SERIAL] in hex") \
            from None


def _hops(sel: Selector, sysfs_root: str | Path) -> list[Hop]:
    if sel.scheme == "pcie":
        return pcie_hops(sel.target, sysfs_root=sysfs_root)
    if sel.scheme == "usb":
        vid, pid, serial = parse_usb_target(sel.target)
        return usb_hops(find_usb_device(vid, pid, serial, sysfs_root=sysfs_root),
                        sysfs_root=sysfs_root)
    return sim_hops(sel.target, sel.options)


def topology_for(selector: str | Selector, *,
                 sysfs_root: str | Path = "/sys") -> list[dict[str, Any]]:
    """One JSON object per hop, root first, for a device selector (real or simulated)."""
    sel = parse_selector(selector) if isinstance(selector, str) else selector
    return [hop.to_json() for hop in _hops(sel, sysfs_root)]


def bus_from_sysfs(sel: Selector, *, sysfs_root: str | Path = "/sys") -> BusDescription:
    """The :class:`BusDescription` of a real device as sysfs shows it (no device is opened)."""
    hops = _hops(sel, sysfs_root)
    device = hops[-1]
    if sel.scheme == "pcie":
        if device.speed is None:
            raise DeviceNotFound(f"{sel.target}: link down or no PCI Express capability "
                                 "(nothing to model)")
        extra = {"speed_cap": device.speed_cap, "width_cap": device.width_cap}
        return BusDescription("pcie", device.speed, device.width or 1, mps=device.mps,
                              mrrs=device.mrrs, extra=extra)
    profile = host_profile_for_driver(hops[0].driver)
    if device.speed == "super":
        return BusDescription("usb3-ss", "super", 1, max_packet_size=1024)
    if device.speed != "high":
        raise InvalidRequest(f"{sel.target} runs at {device.speed or 'unknown'} speed; busprobe "
                             "models high speed and SuperSpeed (5 Gb/s)")
    return BusDescription("usb2-hs", "high", 1, host_profile=profile or "ideal",
                          max_packet_size=512,
                          extra={} if profile else {"note": "unknown host controller driver "
                                                            f"{hops[0].driver}; ideal profile"})
