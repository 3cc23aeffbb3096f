"""A builder of sysfs-shaped fixture trees for the topology readers: real directories, symlinks
laid out as the kernel lays them out, attribute files and binary config space."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from busprobe.backends.pcie.sysfs_tree import ConfigSpec, SysfsTree

_EXP_CAP = 0x70  # where make_config_space puts the PCI Express capability
PORT_TYPE = {"endpoint": 0, "root-port": 4, "switch-upstream": 5, "switch-downstream": 6}
GTS = {"gen1": "2.5 GT/s PCIe", "gen2": "5.0 GT/s PCIe", "gen3": "8.0 GT/s PCIe"}


class TopologyTree(SysfsTree):
    """:class:`SysfsTree` plus port types, link attributes, slots and USB devices."""

    def add_pci(self, bdf: str, *, parent: str | None = None, port: str = "endpoint",
                driver: str | None = None, slot: int | None = None,
                sysfs_link_attrs: bool = True, **spec: Any) -> Path:
        cfg_spec = ConfigSpec(**spec)
        path = self.add_function(bdf, cfg_spec, parent=parent, driver=driver)
        config = bytearray((path / "config").read_bytes())
        if len(config) > _EXP_CAP + 2:
            config[_EXP_CAP + 2] = 0x02 | PORT_TYPE[port] << 4
        (path / "config").write_bytes(bytes(config))
        if sysfs_link_attrs:
            up = cfg_spec.link_up
            (path / "current_link_speed").write_text(
                (GTS[cfg_spec.link_speed] if up else "Unknown") + "\n")
            (path / "current_link_width").write_text(f"{cfg_spec.link_width if up else 0}\n")
            (path / "max_link_speed").write_text(GTS[cfg_spec.link_speed] + "\n")
            (path / "max_link_width").write_text(f"{cfg_spec.link_width}\n")
        if slot is not None:
            slot_dir = self.sys / "bus" / "pci" / "slots" / str(slot)
            slot_dir.mkdir(parents=True)
            (slot_dir / "address").write_text(bdf.rsplit(".", 1)[0] + "\n")
        return path

    def set_link(self, bdf: str, *, speed_cap: str, width_cap: int) -> None:
        """Rewrite Link Capabilities (tests of links trained below capability)."""
        path = self.sys / "bus" / "pci" / "devices" / bdf / "config"
        config = bytearray(path.read_bytes())
        code = {"gen1": 1, "gen2": 2, "gen3": 3}[speed_cap]
        config[_EXP_CAP + 0x0C:_EXP_CAP + 0x10] = (code | width_cap << 4).to_bytes(4, "little")
        path.write_bytes(bytes(config))

    def add_usb(self, name: str, *, parent: Path, vid: int, pid: int, speed: str = "480",
                version: str = " 2.00", hub: bool = False, product: str | None = None,
                serial: str | None = None, driver: str = "usb") -> Path:
        """A USB device directory ``name`` (``usb1``, ``1-1``, ``1-1.4``) below ``parent`` (a
        directory path returned by a previous call or :meth:`add_pci`)."""
        path = Path(parent) / name
        path.mkdir(parents=True)
        files = {"idVendor": f"{vid:04x}", "idProduct": f"{pid:04x}", "speed": speed,
                 "version": version, "bDeviceClass": "09" if hub else "00",
                 "product": product, "serial": serial}
        for key, value in files.items():
            if value is not None:
                (path / key).write_text(f"{value}\n")
        iface = path / f"{name}:1.0"
        iface.mkdir()  # an interface directory, listed too, which the readers must skip
        (iface / "bInterfaceClass").write_text("09\n" if hub else "ff\n")
        drv = self.sys / "bus" / "usb" / "drivers" / driver
        drv.mkdir(parents=True, exist_ok=True)
        os.symlink(drv, path / "driver")
        devices = self.sys / "bus" / "usb" / "devices"
        devices.mkdir(parents=True, exist_ok=True)
        os.symlink(path, devices / name)
        os.symlink(iface, devices / iface.name)
        return path

    def usb_controller(self, bdf: str, driver: str, *, speed: str = "480",
                       version: str = " 2.00") -> Path:
        """A host controller at ``bdf`` with its root hub ``usbN``; returns the root hub path."""
        number = len(list((self.sys / "bus" / "usb" / "devices").glob("usb*"))) + 1 \
            if (self.sys / "bus" / "usb" / "devices").exists() else 1
        ctrl = self.add_pci(bdf, driver=driver, sysfs_link_attrs=False, size=256)
        return self.add_usb(f"usb{number}", parent=ctrl, vid=0x1D6B, pid=2, speed=speed,
                            version=version, hub=True, product="root hub")


@pytest.fixture
def tree(tmp_path: Path) -> TopologyTree:
    return TopologyTree(tmp_path)
