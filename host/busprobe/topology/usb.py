"""USB path from the host controller to a device, read from sysfs.

``/sys/bus/usb/devices/1-1.4`` links into ``/sys/devices/<controller>/usb1/1-1/1-1.4``: the
directories on the way are the root hub and every hub between, and the directory above the root
hub is the host controller (a PCI function, whose driver says ``xhci_hcd`` or ``ehci-pci``).
"""

from __future__ import annotations

from pathlib import Path

from ..model.usb2_hosts import load_profile
from ..protocol.pci_config import BDF_RE
from ..transport import DeviceNotFound
from .hop import Hop
from .pci import pci_function_hop

__all__ = ["usb_hops", "find_usb_device", "usb_speed_name", "host_profile_for_driver",
           "root_ports_share_schedule"]

#: sysfs ``speed`` (Mb/s) -> USB speed name.
_SPEEDS = {"1.5": "low", "12": "full", "480": "high", "5000": "super", "10000": "super-plus",
           "20000": "super-plus-x2"}
#: Host controller driver -> busprobe USB 2.0 host profile (model/hosts/*.toml).
_PROFILES = {"xhci_hcd": "xhci", "xhci-hcd": "xhci", "xhci-pci": "xhci", "ehci-pci": "ehci",
             "ehci_hcd": "ehci", "ehci-platform": "ehci"}


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def usb_speed_name(mbps: str | None) -> str | None:
    return _SPEEDS.get(mbps or "", None)


def host_profile_for_driver(driver: str | None) -> str | None:
    """The host profile that describes a controller bound to ``driver``, if busprobe has one."""
    return _PROFILES.get(driver or "")


def root_ports_share_schedule(driver: str | None) -> bool:
    """Whether a controller bound to ``driver`` runs one schedule for all its root ports (EHCI:
    they are one high-speed bus), as its host profile says."""
    profile = host_profile_for_driver(driver)
    return bool(profile) and load_profile(profile).root_ports_share_schedule


def _is_device(path: Path) -> bool:
    return ":" not in path.name and (path / "idVendor").exists()


def find_usb_device(vid: int, pid: int, serial: str | None = None, *,
                    port: str | None = None, sysfs_root: str | Path = "/sys") -> Path:
    """sysfs directory of the (first) device with these IDs (and serial, and port path: its
    sysfs name, when given); :class:`DeviceNotFound` if none."""
    devices = Path(sysfs_root) / "bus" / "usb" / "devices"
    if devices.is_dir():
        for entry in sorted(devices.iterdir()):
            if not _is_device(entry) or (port is not None and entry.name != port):
                continue
            try:
                ids = (int(_read(entry / "idVendor") or "-1", 16),
                       int(_read(entry / "idProduct") or "-1", 16))
            except ValueError:
                continue
            if ids == (vid, pid) and (serial is None or _read(entry / "serial") == serial):
                return entry.resolve()
    want = (f"{vid:04x}:{pid:04x}" + (f" serial {serial}" if serial else "")
            + (f" at port {port}" if port else ""))
    raise DeviceNotFound(f"no USB device {want} in {devices}")


def _usb_hop(path: Path, kind: str) -> Hop:
    driver_link = path / "driver"
    product = _read(path / "product")
    manufacturer = _read(path / "manufacturer")
    ids = f"{_read(path / 'idVendor') or '?'}:{_read(path / 'idProduct') or '?'}"
    description = " ".join(x for x in (manufacturer, product) if x) or None
    hop = Hop(kind, path.name, driver=driver_link.resolve().name if driver_link.is_symlink()
              else None, description=f"{ids} {description}" if description else ids,
              speed=usb_speed_name(_read(path / "speed")))
    version = _read(path / "version")
    try:
        bcd = float(version) if version else None
    except ValueError:
        bcd = None
    if bcd is not None:
        hop.speed_cap = "super" if bcd >= 3.0 else "high" if bcd >= 2.0 else "full"
        if hop.speed_cap == "super" and hop.speed in ("high", "full"):
            hop.notes.append(f"runs at {hop.speed} speed although it supports SuperSpeed "
                             "(a USB 2.0 port, hub or cable on the way)")
    return hop


def usb_hops(device: Path, *, sysfs_root: str | Path = "/sys") -> list[Hop]:
    """Hops from the host controller down to the device whose sysfs directory is ``device``."""
    device = Path(device).resolve()
    if not _is_device(device):
        raise DeviceNotFound(f"{device} is not a USB device directory")
    chain = []
    path = device
    while _is_device(path):
        chain.append(path)
        path = path.parent
    controller = path
    hops: list[Hop] = []
    if BDF_RE.match(controller.name):
        hop = pci_function_hop(controller)
    else:
        driver_link = controller / "driver"
        hop = Hop("usb-host-controller", controller.name,
                  driver=driver_link.resolve().name if driver_link.is_symlink() else None)
    hop.kind = "usb-host-controller"
    profile = host_profile_for_driver(hop.driver)
    if profile:
        hop.description = f"{hop.description or ''} (busprobe host profile {profile})".lstrip()
    if profile:
        hop.one_schedule = root_ports_share_schedule(hop.driver)
    if hop.one_schedule:
        hop.notes.append(f"{profile.upper()}: one schedule for all its root ports, a "
                         "transaction at a time: its ports are one 480 Mb/s bus")
    hops.append(hop)
    for path in reversed(chain):
        if path.name.startswith("usb"):
            kind = "usb-root-hub"
        elif _read(path / "bDeviceClass") == "09":
            kind = "usb-hub"
        else:
            kind = "usb-device"
        hops.append(_usb_hop(path, kind))
    if len(hops) > 1 and hops[-1].kind != "usb-device":
        hops[-1].kind = "usb-device"  # the device asked for is itself a hub
    return hops
