"""``busprobe list``: busprobe devices on this computer (USB, PCIe) and the simulated targets.

Works with no device, no libusb permission and no libusb at all: each part that cannot be looked at
says why in its line instead of failing the command.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
from pathlib import Path
from typing import Any

from .. import buses

__all__ = ["register", "run", "find_usb", "find_pcie", "sim_targets", "PCI_ROOT"]

log = logging.getLogger(__name__)

PCI_ROOT = Path("/sys/bus/pci/devices")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("list", help="list busprobe devices and simulated targets",
                            description="List busprobe USB and PCIe devices on this computer "
                                        "and the simulated targets.")
    parser.set_defaults(func=run)


def _usb_ids() -> list[tuple[int, int, str]]:
    """(VID, PID, design) of every busprobe USB design (the registry's USB buses)."""
    return [(vid, pid, bus.sim_target or bus.kind) for bus in buses.BUSES
            if bus.scheme == buses.USB2_HS.scheme for vid, pid in bus.device_ids]


def find_usb() -> tuple[list[dict[str, Any]], str | None]:
    """busprobe USB devices via libusb: (devices, a note when the bus could not be read)."""
    from ..backends.usb import SPEED_NAMES, load_usb1, map_usb_error, udev_install_command

    try:
        usb1 = load_usb1()
        context = usb1.USBContext()
        context.open()
    except Exception as exc:  # no libusb, or libusb_init fails without a USB subsystem
        return [], f"USB not scanned: {exc}"
    ids = {(vid, pid): design for vid, pid, design in _usb_ids()}
    found = []
    try:
        for device in context.getDeviceIterator(skip_on_error=True):
            design = ids.get((device.getVendorID(), device.getProductID()))
            if design is None:
                continue
            entry: dict[str, Any] = {
                "selector": f"usb:{device.getVendorID():04x}:{device.getProductID():04x}",
                "design": design, "bus": device.getBusNumber(),
                "port_path": ".".join(map(str, device.getPortNumberList())),
                "speed": SPEED_NAMES.get(device.getDeviceSpeed(), "unknown"), "serial": None}
            try:
                handle = device.open()
                entry["serial"] = handle.getSerialNumber()
                handle.close()
                entry["selector"] += f"#{entry['serial']}"
            except usb1.USBError as exc:
                error = map_usb_error(exc, entry["selector"])
                entry["note"] = ("no permission to open it: " + udev_install_command()
                                 if isinstance(exc, usb1.USBErrorAccess) else str(error))
            found.append(entry)
    finally:
        context.close()
    return found, None


def _pcie_ids() -> list[tuple[int, int]]:
    """(vendor, device) ids of the busprobe PCIe design (LitePCIe's defaults: the busprobe
    identity is a CSR, so a listed function may be another LitePCIe design)."""
    return [ids for bus in buses.BUSES if bus.scheme == buses.PCIE.scheme
            for ids in bus.device_ids]


def find_pcie(root: Path = PCI_ROOT) -> list[dict[str, Any]]:
    """PCIe functions whose vendor/device ids are busprobe's, from sysfs."""
    ids = set(_pcie_ids())
    if not ids or not root.is_dir():
        return []
    found = []
    for function in sorted(root.iterdir()):
        try:
            vendor = int((function / "vendor").read_text(), 16)
            device = int((function / "device").read_text(), 16)
        except (OSError, ValueError):
            continue
        if (vendor, device) in ids:
            driver = function / "driver"
            found.append({"selector": f"pcie:{function.name}", "vendor": f"{vendor:04x}",
                          "device": f"{device:04x}",
                          "driver": driver.resolve().name if driver.exists() else None})
    return found


def sim_targets() -> list[dict[str, Any]]:
    """Every simulated target, and whether its backend is installed."""
    targets = []
    for bus in sorted((b for b in buses.BUSES if b.sim_target is not None),
                      key=lambda b: b.sim_target or ""):
        module = bus.sim_backend.partition(":")[0]
        try:
            available = importlib.util.find_spec(module) is not None
        except ImportError:  # a parent package is missing
            available = False
        targets.append({"selector": f"{buses.SIM_SCHEME}:{bus.sim_target}",
                        "available": available})
    return targets


def run(args: argparse.Namespace) -> int:
    usb, note = find_usb()
    print("USB:")
    for entry in usb:
        line = f"  {entry['selector']:<28} {entry['design']} {entry['speed']}-speed, " \
               f"bus {entry['bus']} port {entry['port_path'] or '-'}"
        print(line + (f"  ({entry['note']})" if entry.get("note") else ""))
    if note:
        print(f"  ({note})")
    elif not usb:
        print("  (no busprobe USB device found)")
    pcie = find_pcie()
    print("PCIe:")
    for entry in pcie:
        print(f"  {entry['selector']:<28} {entry['vendor']}:{entry['device']} "
              f"driver {entry['driver'] or '-'}")
    if not pcie:
        print("  (no busprobe PCIe device found)")
    print("Simulated:")
    for entry in sim_targets():
        state = "" if entry["available"] else "  (not available: needs the [sim] extra)"
        print(f"  {entry['selector']}{state}")
    return 0
