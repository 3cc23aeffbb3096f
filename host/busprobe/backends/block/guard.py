"""The refusal: a block device is swept only when it is a busprobe null disk.

A block-device sweep writes, so it must never run on a real disk. :func:`check_null_disk` runs
before anything is written and refuses, in one line (:class:`NotANullDisk`), anything that is
not a whole, writable SCSI disk whose INQUIRY names busprobe's null disk
(:data:`~busprobe.protocol.storage.INQUIRY_VENDOR` / ``INQUIRY_PRODUCT``) and whose first and
last blocks hold the LBA pattern (:mod:`busprobe.protocol.storage`). Each step only reads; the
order is cheapest first, and the signature read (the only I/O) comes last, so a regular file, a
character device, a partition or a read-only disk is refused without opening it for I/O.

The INQUIRY identity is the kernel's copy in sysfs (``device/vendor``, ``device/model``, read at
attach), not an SG_IO of our own: it needs no privilege beyond the sysfs read and is what the
kernel itself matched the disk by; the signature read then proves the disk answers as a null
disk now.
"""

from __future__ import annotations

import mmap
import os
import stat
from pathlib import Path

from ...protocol.storage import BLOCK_SIZE, INQUIRY_PRODUCT, INQUIRY_VENDOR, check_lba_bytes
from ...transport import InvalidRequest
from .sysfs import BlockFacts, read_block_facts

__all__ = ["NotANullDisk", "check_null_disk", "check_node", "check_facts", "check_signature"]


class NotANullDisk(InvalidRequest):
    """The device is not a busprobe null disk: nothing was written (one line, exit ≠ 0).

    A request that cannot be carried out on this target, like any :class:`InvalidRequest`: the
    sweep refuses it before measuring and writes no result (there is nothing to keep)."""


def check_node(path: str) -> tuple[int, int]:
    """``(major, minor)`` of ``path`` if it is a block device; :class:`NotANullDisk` if it is
    missing, a regular file, a character device (``/dev/null``), a FIFO or anything else."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise NotANullDisk(f"{path}: {exc.strerror or exc}; name a busprobe null disk, "
                           "e.g. block:/dev/sdb") from None
    if not stat.S_ISBLK(info.st_mode):
        kind = ("a regular file" if stat.S_ISREG(info.st_mode) else
                "a character device" if stat.S_ISCHR(info.st_mode) else
                "a FIFO" if stat.S_ISFIFO(info.st_mode) else
                "a folder" if stat.S_ISDIR(info.st_mode) else
                "a socket" if stat.S_ISSOCK(info.st_mode) else "not a device")
        raise NotANullDisk(f"{path} is {kind}, not a block device: block: sweeps only a "
                           "busprobe null disk (lsblk lists disks)")
    return os.major(info.st_rdev), os.minor(info.st_rdev)


def check_facts(path: str, facts: BlockFacts) -> None:
    """:class:`NotANullDisk` unless sysfs shows a whole, writable disk whose INQUIRY is the
    null disk's."""
    if facts.partition:
        raise NotANullDisk(f"{path} is a partition ({facts.name}), not a whole disk: "
                           "a busprobe null disk has no partitions")
    if facts.read_only:
        raise NotANullDisk(f"{path} ({facts.name}) is read-only (sysfs ro = 1): a write sweep "
                           "cannot run, and a busprobe null disk is never write-protected")
    vendor = (facts.vendor or "").encode("latin-1", "replace")
    model = (facts.model or "").encode("latin-1", "replace")
    if facts.vendor is None:
        raise NotANullDisk(f"{path} ({facts.name}) is not a SCSI disk (no INQUIRY identity in "
                           "sysfs): not a busprobe null disk; nothing was written")
    # The kernel may trim or pad the fields; compare the words, padding aside.
    if vendor.strip() != INQUIRY_VENDOR.strip() or model.strip() != INQUIRY_PRODUCT.strip():
        raise NotANullDisk(
            f"{path} ({facts.name}) is {vendor.decode().strip()!r} {model.decode().strip()!r}, "
            f"not a busprobe null disk ({INQUIRY_VENDOR.decode()} "
            f"{INQUIRY_PRODUCT.decode().strip()}): nothing was written")
    if facts.sectors * 512 < 2 * BLOCK_SIZE:
        raise NotANullDisk(f"{path} ({facts.name}) holds {facts.sectors} sectors: too small "
                           "for a busprobe null disk")


def _read_block(fd: int, lba: int) -> bytes:
    """Block ``lba`` read past the page cache (O_DIRECT: an aligned buffer), so what the disk
    answers now is checked, not a cached copy."""
    buffer = mmap.mmap(-1, mmap.PAGESIZE)
    try:
        got = os.preadv(fd, [memoryview(buffer)[:BLOCK_SIZE]], lba * BLOCK_SIZE)
        return bytes(buffer[:got])
    finally:
        buffer.close()


def check_signature(path: str, blocks: int) -> None:
    """:class:`NotANullDisk` unless LBA 0 and LBA ``blocks - 1`` hold the LBA pattern (read
    only, the device opened read-only)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    except OSError as exc:
        raise NotANullDisk(f"{path}: cannot open it to read its signature: "
                           f"{exc.strerror or exc}") from None
    try:
        for lba in (0, blocks - 1):
            try:
                data = _read_block(fd, lba)
            except OSError as exc:
                raise NotANullDisk(f"{path}: reading LBA {lba} failed ({exc.strerror or exc}): "
                                   "not a working busprobe null disk; nothing was written"
                                   ) from None
            bad, _ = check_lba_bytes(lba, data) if len(data) == BLOCK_SIZE else (1, 0)
            if bad:
                raise NotANullDisk(f"{path}: LBA {lba} does not hold the null disk's LBA pattern "
                                   "(it has data of its own): not a busprobe null disk; "
                                   "nothing was written")
    finally:
        os.close(fd)


def check_null_disk(path: str, sysfs_root: str | Path = "/sys") -> BlockFacts:
    """Every check, cheapest first; the disk's facts when it is a busprobe null disk.

    Raises
    ------
    NotANullDisk
        One line saying what ``path`` is instead; nothing has been written.
    """
    major, minor = check_node(path)
    try:
        facts = read_block_facts(major, minor, sysfs_root)
    except OSError:
        raise NotANullDisk(f"{path}: sysfs shows no block device {major}:{minor} "
                           f"(under {sysfs_root}): cannot tell what it is; nothing was written"
                           ) from None
    check_facts(path, facts)
    if facts.logical_block_size not in (None, BLOCK_SIZE):
        raise NotANullDisk(f"{path} has {facts.logical_block_size}-byte blocks, a busprobe "
                           f"null disk {BLOCK_SIZE}")
    check_signature(path, facts.sectors * 512 // BLOCK_SIZE)
    return facts
