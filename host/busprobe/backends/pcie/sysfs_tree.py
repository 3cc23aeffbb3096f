"""Build sysfs-shaped directory trees with real PCIe config-space files, for tests and examples.

The PCIe backend reads ``/sys/bus/pci/devices/X/{config,driver,iommu_group}`` and
``/sys/kernel/iommu_groups``; every function that does takes a ``sysfs_root``. This builder writes
the same layout under any directory so the bound/unbound/link-down paths run on machines without
the device: ``bus/pci/devices/X`` is a symlink into ``devices/pci0000:00/.../X`` exactly like the
kernel's, so upstream-port discovery works unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...protocol.pci_config import (
    DEVCTL_MPS_SHIFT,
    DEVCTL_MRRS_SHIFT,
    EXP_DEVCAP,
    EXP_DEVCTL,
    EXP_LNKCAP,
    EXP_LNKSTA,
    PCI_CAP_ID_EXP,
    PCI_CAPABILITY_LIST,
    PCI_STATUS,
    PCI_STATUS_CAP_LIST,
    encode_size,
)

__all__ = ["ConfigSpec", "make_config_space", "SysfsTree"]

_SPEED_CODES = {"gen1": 1, "gen2": 2, "gen3": 3, "gen4": 4}
_PM_CAP, _MSI_CAP, _EXP_CAP = 0x40, 0x50, 0x70  # a chain to walk, as on real parts


@dataclass(frozen=True)
class ConfigSpec:
    """The registers a test cares about; everything else is zero.

    Parameters
    ----------
    vendor, device : int
        IDs at offsets 0 and 2.
    mps_supported, mps, mrrs : int
        DevCap Max_Payload_Size Supported and DevCtl MPS/MRRS, in bytes.
    link_speed, link_width : str, int
        LnkCap and (unless ``link_up`` is False) LnkSta.
    size : int
        File length: 4096 (extended, as root sees it), 256, or 64 (a non-root reader's view).
    """

    vendor: int = 0x10EE
    device: int = 0x7021
    mps_supported: int = 512
    mps: int = 128
    mrrs: int = 512
    link_speed: str = "gen2"
    link_width: int = 1
    link_up: bool = True
    size: int = 4096


def make_config_space(spec: ConfigSpec) -> bytes:
    """Config space bytes with PM -> MSI -> PCI Express capabilities."""
    cfg = bytearray(4096)
    cfg[0:4] = (spec.vendor | spec.device << 16).to_bytes(4, "little")
    cfg[PCI_STATUS] = PCI_STATUS_CAP_LIST
    cfg[PCI_CAPABILITY_LIST] = _PM_CAP
    cfg[_PM_CAP:_PM_CAP + 2] = bytes([0x01, _MSI_CAP])
    cfg[_MSI_CAP:_MSI_CAP + 2] = bytes([0x05, _EXP_CAP])
    cfg[_EXP_CAP:_EXP_CAP + 4] = bytes([PCI_CAP_ID_EXP, 0x00, 0x02, 0x00])  # v2, endpoint

    def put(at: int, value: int, size: int) -> None:
        cfg[_EXP_CAP + at:_EXP_CAP + at + size] = value.to_bytes(size, "little")

    put(EXP_DEVCAP, encode_size(spec.mps_supported), 4)
    put(EXP_DEVCTL, encode_size(spec.mps) << DEVCTL_MPS_SHIFT
        | encode_size(spec.mrrs) << DEVCTL_MRRS_SHIFT | 0x0010, 2)  # + relaxed ordering
    speed = _SPEED_CODES[spec.link_speed]
    put(EXP_LNKCAP, speed | spec.link_width << 4, 4)
    put(EXP_LNKSTA, (speed | spec.link_width << 4 | 1 << 13) if spec.link_up else 0, 2)
    return bytes(cfg[:spec.size])


class SysfsTree:
    """A fake ``/sys`` (and ``/dev``) under ``root``.

    Parameters
    ----------
    root : Path
        Empty directory; ``root/sys`` and ``root/dev`` are created.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.sys = self.root / "sys"
        self.dev = self.root / "dev"
        (self.sys / "bus" / "pci" / "devices").mkdir(parents=True, exist_ok=True)
        (self.sys / "kernel" / "iommu_groups").mkdir(parents=True, exist_ok=True)
        self.dev.mkdir(exist_ok=True)

    def add_function(self, bdf: str, spec: ConfigSpec, *, parent: str | None = None,
                     driver: str | None = None, iommu_group: int | None = None) -> Path:
        """Add a function below ``parent`` (a BDF added before, or the host bridge)."""
        if parent is None:
            base = self.sys / "devices" / f"pci{bdf[:4]}:{bdf[5:7]}"
        else:
            base = (self.sys / "bus" / "pci" / "devices" / parent).resolve()
        path = base / bdf
        path.mkdir(parents=True)
        (path / "config").write_bytes(make_config_space(spec))
        (path / "vendor").write_text(f"{spec.vendor:#06x}\n")
        (path / "device").write_text(f"{spec.device:#06x}\n")
        os.symlink(path, self.sys / "bus" / "pci" / "devices" / bdf)
        if driver is not None:
            drv = self.sys / "bus" / "pci" / "drivers" / driver
            drv.mkdir(parents=True, exist_ok=True)
            os.symlink(drv, path / "driver")
        if iommu_group is not None:
            group = self.sys / "kernel" / "iommu_groups" / str(iommu_group)
            (group / "devices").mkdir(parents=True, exist_ok=True)
            os.symlink(path, group / "devices" / bdf)
            os.symlink(group, path / "iommu_group")
        return path

    def config_bytes(self, bdf: str) -> bytes:
        return (self.sys / "bus" / "pci" / "devices" / bdf / "config").read_bytes()
