"""Fixture sysfs trees of USB disks, and loop devices to stand in for the disk's node.

:func:`sysfs_disk` writes the folders the kernel shows for a SCSI disk behind a USB storage
driver (``/sys/dev/block/M:m`` -> ``.../usb1/1-1/1-1:1.0/host2/target2:0:0/2:0:0:0/block/sdb``),
for any device number, so a real loop device's node can be described by a fixture: the refusal
and the sweep then run on a real block device with the facts the test chooses.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from busprobe.protocol.storage import INQUIRY_PRODUCT, INQUIRY_VENDOR, lba_bytes


def sysfs_disk(root: Path, major: int, minor: int, *, sectors: int = 1 << 20,
               vendor: bytes = INQUIRY_VENDOR, model: bytes | None = INQUIRY_PRODUCT,
               ro: bool = False, partition: bool = False, driver: str = "usb-storage",
               controller: str = "ehci-pci", stat: Path | None = None) -> Path:
    """A fixture tree under ``root`` for block device ``major:minor``; its folder."""
    pci = root / "devices" / "pci0000:00" / "0000:00:1d.7"
    usb = pci / "usb1" / "1-1"
    interface = usb / "1-1:1.0"
    scsi = interface / "host2" / "target2:0:0" / "2:0:0:0"
    disk = scsi / "block" / "sdb"
    (disk / "queue").mkdir(parents=True)
    (pci / "driver").symlink_to(f"../../../bus/pci/drivers/{controller}")
    for folder in (pci / "usb1", usb):
        (folder / "idVendor").write_text("1d6b\n" if folder.name == "usb1" else "1209\n")
        (folder / "speed").write_text("480\n")
    (interface / "bInterfaceClass").write_text("08\n")
    (interface / "driver").symlink_to(f"../../../../../bus/usb/drivers/{driver}")
    if model is not None:
        (scsi / "vendor").write_text(vendor.decode() + "\n")
        (scsi / "model").write_text(model.decode() + "\n")
    (disk / "device").symlink_to("../../../2:0:0:0")
    (disk / "ro").write_text("1\n" if ro and not partition else "0\n")
    (disk / "size").write_text(f"{sectors}\n")
    for name, value in (("logical_block_size", 512), ("max_sectors_kb", 120),
                        ("max_hw_sectors_kb", 120)):
        (disk / "queue" / name).write_text(f"{value}\n")
    if stat is not None:
        (disk / "stat").symlink_to(stat)
    folder = disk
    if partition:
        folder = disk / "sdb1"
        folder.mkdir()
        (folder / "partition").write_text("1\n")
        (folder / "ro").write_text("1\n" if ro else "0\n")
        (folder / "size").write_text(f"{sectors // 2}\n")
    link = root / "dev" / "block" / f"{major}:{minor}"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(folder, link.parent))
    return folder


def null_disk_image(path: Path, blocks: int) -> None:
    """A file holding the LBA pattern in every block: what a null disk reads as."""
    with path.open("wb") as f:
        step = 2048
        for first in range(0, blocks, step):
            f.write(lba_bytes(first, min(step, blocks - first)))


@contextlib.contextmanager
def loop_device(image: Path, *, read_only: bool = False) -> Iterator[str]:
    """A loop device over ``image`` (root and a kernel with loop devices; else the test skips)."""
    if os.geteuid() != 0:
        pytest.skip("a loop device needs root")
    args = ["losetup", "--find", "--show", *(["--read-only"] if read_only else []), str(image)]
    try:
        node = subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"no loop device here: {exc}")
    try:
        yield node
    finally:
        subprocess.run(["losetup", "--detach", node], check=False)


@pytest.fixture
def fake_sysfs(tmp_path: Path) -> Path:
    return tmp_path / "sys"
