"""Real devices: ``usb:VID:PID[#SERIAL]`` and ``pcie:DDDD:BB:DD.F[?allow_config_write=1]``.

The address is parsed here (:mod:`busprobe.selectors`); the bus and the hops are what sysfs shows
(:mod:`busprobe.topology`), read only when a ``sysfs_root`` is given: a sweep learns the bus from
the opened device, and must not fail for want of sysfs where libusb or VFIO still work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..buses import Bus
from ..selectors import Selector, parse_pci_address, parse_usb_target
from ..topology import bus_from_hops, hops_for
from ..transport import TransportError
from .description import TargetDescription
from .options import Option, choice, one_of, parse_options

__all__ = ["describe_usb", "describe_pcie", "PCIE_OPTIONS"]

_SWITCHES = ("0", "1", "no", "yes")
_SWITCH = choice(_SWITCHES)


def _switch(text: str) -> bool:
    return _SWITCH(text) in ("1", "yes")


#: ``allow_config_write=1`` lets the VFIO backend rewrite MPS/MRRS (as root; the CLI's
#: ``--allow-config-write`` does the same).
PCIE_OPTIONS: tuple[Option, ...] = (
    Option("allow_config_write", False, _switch, one_of(_SWITCHES)),
)


def _sysfs(selector: Selector, sysfs_root: str | Path | None) -> dict[str, Any]:
    if sysfs_root is None:
        return {}
    hops = hops_for(selector, sysfs_root=sysfs_root)
    try:
        return {"hops": tuple(hops), "bus": bus_from_hops(selector, hops)}
    except TransportError as exc:  # nothing to model, still a path to show
        return {"hops": tuple(hops), "bus_error": exc}


def describe_usb(selector: Selector, spec: Bus,
                 sysfs_root: str | Path | None = "/sys") -> TargetDescription:
    """A USB device (no options); bus and hops from ``sysfs_root`` unless it is ``None``."""
    address = parse_usb_target(selector.target)
    options = parse_options(f"usb:{selector.target}", selector.options, ())
    return TargetDescription(selector.text, selector.scheme, selector.target, options, spec,
                             address=address, **_sysfs(selector, sysfs_root))


def describe_pcie(selector: Selector, spec: Bus,
                  sysfs_root: str | Path | None = "/sys") -> TargetDescription:
    """A PCIe function; bus and hops from ``sysfs_root`` unless it is ``None``."""
    address = parse_pci_address(selector.target)
    options = parse_options(f"pcie:{selector.target}", selector.options, PCIE_OPTIONS)
    return TargetDescription(selector.text, selector.scheme, address, options, spec,
                             address=address, **_sysfs(selector, sysfs_root))
