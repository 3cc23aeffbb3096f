"""What sysfs says about a block device: :func:`read_block_facts`, one reader for the refusal and
the sweep, with the sysfs root a parameter so fixture trees test it.

``/sys/dev/block/MAJOR:MINOR`` links to the device's folder: ``.../host0/target0:0:0/0:0:0:0/
block/sdb`` for a whole SCSI disk, one level deeper (``.../sdb/sdb1``, with a ``partition``
file) for a partition. The whole disk's folder holds ``ro``, ``size`` (512-byte sectors,
whatever the logical block size), ``stat`` and ``queue/`` (``max_sectors_kb``: the largest
command the kernel will issue, ``max_hw_sectors_kb``: the driver's limit); ``device/`` is the
SCSI device (``vendor``, ``model``: the INQUIRY identity as the kernel read it at attach). Above
the SCSI host are the USB interface (whose ``driver`` link says ``usb-storage`` or ``uas``), the
USB device (``speed``, ``idVendor``) and the host controller.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ...topology.usb import host_profile_for_driver, usb_speed_name

__all__ = ["BlockFacts", "read_block_facts", "read_stat", "STAT_FIELDS"]

#: ``/sys/block/X/stat`` fields (Documentation/block/stat.rst), the first eight.
STAT_FIELDS = ("read_ios", "read_merges", "read_sectors", "read_ticks",
               "write_ios", "write_merges", "write_sectors", "write_ticks")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _driver(path: Path) -> str | None:
    link = path / "driver"
    return os.path.basename(os.readlink(link)) if link.is_symlink() else None


@dataclass(frozen=True)
class BlockFacts:
    """A block device as sysfs shows it.

    Attributes
    ----------
    name : str
        Kernel name (``sdb``, ``sdb1``, ``loop0``).
    folder : Path
        Its sysfs folder (resolved).
    partition : bool
        A partition, not a whole disk.
    read_only : bool
        ``ro`` is 1 (write-protected medium, ``blockdev --setro``, a read-only loop).
    sectors : int
        Capacity in 512-byte sectors (sysfs' unit, whatever the block size).
    logical_block_size : int or None
        The disk's block size (``queue/logical_block_size``).
    max_sectors_kb, max_hw_sectors_kb : int or None
        The largest command the block layer issues, and the driver's own limit.
    vendor, model : str or None
        The SCSI INQUIRY vendor and product identification, space padding kept.
    usb_driver : str or None
        The driver bound to the USB interface above the SCSI host: ``usb-storage`` (BOT) or
        ``uas``; None for a disk not on USB.
    usb_device : Path or None
        The USB device's sysfs folder.
    usb_speed : str or None
        ``high``, ``super``, ... (:func:`busprobe.topology.usb.usb_speed_name`).
    controller_driver : str or None
        The host controller's driver (``ehci-pci``, ``xhci_hcd``).
    host_profile : str or None
        The busprobe USB 2.0 host profile of that controller, when there is one.
    """

    name: str
    folder: Path
    partition: bool
    read_only: bool
    sectors: int
    logical_block_size: int | None = None
    max_sectors_kb: int | None = None
    max_hw_sectors_kb: int | None = None
    vendor: str | None = None
    model: str | None = None
    usb_driver: str | None = None
    usb_device: Path | None = None
    usb_speed: str | None = None
    controller_driver: str | None = None
    host_profile: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def protocol(self) -> str | None:
        """``bot`` or ``uas``, by the driver bound; None off USB or with another driver."""
        return {"usb-storage": "bot", "uas": "uas"}.get(self.usb_driver or "")


def _usb_above(scsi_device: Path) -> tuple[str | None, Path | None, Path | None]:
    """``(interface driver, USB device folder, controller folder)`` above a SCSI device."""
    path = scsi_device
    while path != path.parent:
        if ":" in path.name and (path / "bInterfaceClass").exists():
            device = path.parent
            controller = device
            while (controller / "idVendor").exists():
                controller = controller.parent
            return _driver(path), device, controller
        path = path.parent
    return None, None, None


def read_block_facts(major: int, minor: int, sysfs_root: str | Path = "/sys") -> BlockFacts:
    """The facts of block device ``major:minor``; ``FileNotFoundError`` when sysfs has none."""
    link = Path(sysfs_root) / "dev" / "block" / f"{major}:{minor}"
    folder = link.resolve(strict=True)
    partition = (folder / "partition").exists()
    disk = folder.parent if partition else folder
    scsi = (disk / "device").resolve() if (disk / "device").exists() else None
    usb_driver, usb_device, controller = _usb_above(scsi) if scsi else (None, None, None)
    controller_driver = _driver(controller) if controller else None
    queue = disk / "queue"
    return BlockFacts(
        name=folder.name, folder=folder, partition=partition,
        read_only=_read(folder / "ro") == "1", sectors=_int(folder / "size") or 0,
        logical_block_size=_int(queue / "logical_block_size"),
        max_sectors_kb=_int(queue / "max_sectors_kb"),
        max_hw_sectors_kb=_int(queue / "max_hw_sectors_kb"),
        vendor=_raw(scsi / "vendor") if scsi else None,
        model=_raw(scsi / "model") if scsi else None,
        usb_driver=usb_driver, usb_device=usb_device,
        usb_speed=usb_speed_name(_read(usb_device / "speed")) if usb_device else None,
        controller_driver=controller_driver,
        host_profile=host_profile_for_driver(controller_driver))


def _raw(path: Path) -> str | None:
    """A sysfs text without its trailing newline; INQUIRY fields keep their space padding."""
    try:
        return path.read_text().rstrip("\n")
    except OSError:
        return None


def read_stat(folder: Path) -> dict[str, int]:
    """The disk's I/O counters (:data:`STAT_FIELDS`); {} where there is no ``stat``."""
    text = _read(folder / "stat")
    if not text:
        return {}
    return dict(zip(STAT_FIELDS, (int(v) for v in text.split()), strict=False))
