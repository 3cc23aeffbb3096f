"""Real PCIe access through Linux VFIO: BAR0 mapped into this process, DMA buffers mapped into
the device's IOMMU domain, MSI delivered to an eventfd.

Everything here is the plumbing :class:`~busprobe.backends.pcie.driver.PcieDmaDriver` needs on a
real machine (a :class:`Bar`, :class:`DmaBuffer` s and an interrupt); the driver itself is the same
one the simulated backend runs. Before touching ``/dev/vfio`` the set-up is checked step by step so
each common mistake ends in one line that says what to do (see :func:`preflight`).

ioctl numbers come from ``include/uapi/linux/vfio.h``: ``VFIO_TYPE = ';'``, ``VFIO_BASE = 100``
and every request is ``_IO(VFIO_TYPE, VFIO_BASE + n)``; ``_IO(t, nr)`` has no direction or size
bits, so it is simply ``t << 8 | nr`` (``_IOC_TYPESHIFT = 8``, ``_IOC_NRSHIFT = 0``).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import logging
import mmap
import os
import select
import struct
from dataclasses import dataclass
from pathlib import Path

from ...protocol import pcie as proto
from ...protocol.pci_config import BDF_RE, PcieCapability
from ...transport import (
    DeviceGone,
    DeviceNotFound,
    InvalidRequest,
    PermissionDenied,
    TransportError,
)
from .config import PciFunction

__all__ = ["VfioUnavailable", "VfioGroup", "preflight", "VfioDevice", "VfioBar", "VfioDmaBuffer",
           "VfioMsi", "VFIO_IOCTL"]

log = logging.getLogger(__name__)

VFIO_TYPE = ord(";")
VFIO_BASE = 100


def _io(nr: int) -> int:
    """``_IO(VFIO_TYPE, VFIO_BASE + nr)`` from linux/ioctl.h (no direction/size bits)."""
    return (VFIO_TYPE << 8) | (VFIO_BASE + nr)


#: The requests used, by their kernel names (``VFIO_BASE + n`` in the order of vfio.h).
VFIO_IOCTL = {
    "GET_API_VERSION": _io(0),
    "CHECK_EXTENSION": _io(1),
    "SET_IOMMU": _io(2),
    "GROUP_GET_STATUS": _io(3),
    "GROUP_SET_CONTAINER": _io(4),
    "GROUP_GET_DEVICE_FD": _io(6),
    "DEVICE_GET_REGION_INFO": _io(8),
    "DEVICE_SET_IRQS": _io(10),
    "DEVICE_RESET": _io(11),
    "IOMMU_MAP_DMA": _io(13),
    "IOMMU_UNMAP_DMA": _io(14),
}
VFIO_API_VERSION = 0
VFIO_TYPE1_IOMMU, VFIO_TYPE1v2_IOMMU = 1, 3
VFIO_GROUP_FLAGS_VIABLE = 1 << 0
VFIO_REGION_INFO_FLAG_MMAP = 1 << 2
VFIO_PCI_BAR0_REGION_INDEX = 0
VFIO_PCI_CONFIG_REGION_INDEX = 7
VFIO_PCI_MSI_IRQ_INDEX = 1
VFIO_IRQ_SET_DATA_NONE, VFIO_IRQ_SET_DATA_EVENTFD = 1 << 0, 1 << 2
VFIO_IRQ_SET_ACTION_TRIGGER = 1 << 5
VFIO_DMA_MAP_FLAG_READ, VFIO_DMA_MAP_FLAG_WRITE = 1 << 0, 1 << 1
PCI_COMMAND, PCI_COMMAND_MEMORY, PCI_COMMAND_MASTER = 0x04, 1 << 1, 1 << 2

_GROUP_STATUS = struct.Struct("<II")  # argsz, flags
_REGION_INFO = struct.Struct("<IIIIQQ")  # argsz, flags, index, cap_offset, size, offset
_DMA_MAP = struct.Struct("<IIQQQ")  # argsz, flags, vaddr, iova, size
_DMA_UNMAP = struct.Struct("<IIQQ")  # argsz, flags, iova, size
_IRQ_SET = struct.Struct("<IIIII")  # argsz, flags, index, start, count; then data[]


class VfioUnavailable(TransportError):
    """The machine is not set up for VFIO (IOMMU off, device on another driver, no /dev node)."""


def bind_commands(bdf: str, current_driver: str | None) -> str:
    """The exact shell commands that hand ``bdf`` to vfio-pci."""
    dev = f"/sys/bus/pci/devices/{bdf}"
    steps = ["modprobe vfio-pci"]
    if current_driver:
        steps.append(f"echo {bdf} > {dev}/driver/unbind")
    steps += [f"echo vfio-pci > {dev}/driver_override", f"echo {bdf} > /sys/bus/pci/drivers_probe"]
    return "; ".join(steps)


@dataclass(frozen=True)
class VfioGroup:
    """Where a checked device lives: its IOMMU group and the group's /dev node."""

    bdf: str
    group: int
    dev_path: Path


def preflight(bdf: str, *, sysfs_root: Path = Path("/sys"),
              dev_root: Path = Path("/dev")) -> VfioGroup:
    """Check, in order, everything that must hold before VFIO can open ``bdf``.

    Raises one-line errors: :class:`DeviceNotFound` (no such function), :class:`VfioUnavailable`
    (IOMMU disabled, bound to another driver, no /dev/vfio node), :class:`PermissionDenied`
    (/dev/vfio/N not accessible), :class:`DeviceGone` (link down in LnkSta, when config space is
    readable; otherwise the link is checked through VFIO after opening).
    """
    if not BDF_RE.match(bdf):
        raise DeviceNotFound(f"bad PCI address {bdf!r}: expected DDDD:BB:DD.F, e.g. 0000:01:00.0")
    fn = PciFunction(bdf, sysfs_root)
    if not fn.exists():
        raise DeviceNotFound(f"no PCI device {bdf} (not in {fn.path.parent}; "
                             "`busprobe list` shows the devices found)")
    groups = sysfs_root / "kernel" / "iommu_groups"
    if not groups.is_dir() or not any(groups.iterdir()):
        raise VfioUnavailable(
            f"no IOMMU groups ({groups} is empty): enable IOMMU: add intel_iommu=on iommu=pt "
            "(Intel) or amd_iommu=on (AMD) to the kernel command line, enable VT-d/AMD-Vi in "
            "firmware, and reboot")
    driver_link = fn.path / "driver"
    driver = driver_link.resolve().name if driver_link.exists() else None
    if driver != "vfio-pci":
        bound = f"bound to {driver}" if driver else "not bound to any driver"
        raise VfioUnavailable(f"{bdf} is {bound}, not vfio-pci; as root run: "
                              f"{bind_commands(bdf, driver)}")
    group_link = fn.path / "iommu_group"
    if not group_link.exists():
        raise VfioUnavailable(f"{bdf} has no IOMMU group ({group_link} missing): enable IOMMU: "
                              "intel_iommu=on or amd_iommu=on on the kernel command line")
    group = int(group_link.resolve().name)
    dev_path = dev_root / "vfio" / str(group)
    if not dev_path.exists():
        raise VfioUnavailable(f"{dev_path} does not exist: load vfio-pci (modprobe vfio-pci) "
                              f"and rebind {bdf}: {bind_commands(bdf, driver)}")
    if not os.access(dev_path, os.R_OK | os.W_OK):
        raise PermissionDenied(f"permission denied on {dev_path}: run as root, or give your "
                               f"user the group: sudo chown $USER {dev_path}")
    try:
        cap = fn.capability()
    except PermissionDenied:
        cap = None  # non-root sees 64 bytes of config; VfioDevice re-checks through VFIO
    if cap is not None:
        check_link(bdf, cap.lnksta)
    return VfioGroup(bdf, group, dev_path)


def check_link(bdf: str, lnksta: int) -> None:
    """:class:`DeviceGone` if Link Status shows no negotiated lanes (link down or training)."""
    width = (lnksta >> 4) & 0x3F
    if width == 0 or lnksta == 0xFFFF:
        raise DeviceGone(f"{bdf}: PCIe link is down (LnkSta {lnksta:#06x}: negotiated width x0); "
                         "check the board is powered, seated and its bitstream loaded, then "
                         "rescan: echo 1 > /sys/bus/pci/rescan")


def _ioctl(fd: int, request: str, arg: int | bytes | bytearray = 0) -> int:
    """One VFIO ioctl; returns the kernel's return value.

    Structures go in as a ``bytearray`` so the kernel's answer is written back into it (with an
    immutable ``bytes`` argument ``fcntl.ioctl`` returns a copy of the buffer, not the result).
    """
    try:
        if isinstance(arg, bytearray):
            return fcntl.ioctl(fd, VFIO_IOCTL[request], arg, True)
        return fcntl.ioctl(fd, VFIO_IOCTL[request], arg)
    except OSError as exc:
        raise VfioUnavailable(f"VFIO_{request} failed: {os.strerror(exc.errno)}") from None


class VfioBar:
    """A BAR mapped into this process; 32-bit accesses are single aligned loads/stores.

    ``memoryview.cast("I")`` indexing reads/writes one native ``unsigned int``, so each register
    access is one 32-bit MMIO transaction (a byte-wise copy would split it into four).
    """

    def __init__(self, mapping: mmap.mmap, size: int) -> None:
        self._map = mapping
        self._words = memoryview(mapping).cast("I")
        self.size = size

    def read32(self, offset: int) -> int:
        return self._words[offset >> 2]

    def write32(self, offset: int, value: int) -> None:
        self._words[offset >> 2] = value & 0xFFFF_FFFF

    def close(self) -> None:
        self._words.release()
        self._map.close()


class VfioDmaBuffer:
    """Anonymous, page-aligned host memory the device can reach at :attr:`bus_address` (IOVA)."""

    def __init__(self, container_fd: int, size: int, iova: int) -> None:
        self.size = size
        self.bus_address = iova
        self._container = container_fd
        self._map = mmap.mmap(-1, size, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS,
                              prot=mmap.PROT_READ | mmap.PROT_WRITE)
        vaddr = ctypes.addressof(ctypes.c_char.from_buffer(self._map))
        arg = _DMA_MAP.pack(_DMA_MAP.size, VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
                            vaddr, iova, size)
        _ioctl(container_fd, "IOMMU_MAP_DMA", arg)

    def read(self, offset: int, length: int) -> bytes:
        return self._map[offset:offset + length]

    def write(self, offset: int, data: bytes) -> None:
        self._map[offset:offset + len(data)] = data

    def close(self) -> None:
        try:
            _ioctl(self._container, "IOMMU_UNMAP_DMA",
                   _DMA_UNMAP.pack(_DMA_UNMAP.size, 0, self.bus_address, self.size))
        finally:
            self._map.close()


class VfioMsi:
    """MSI vector 0 of the device signalled on an eventfd."""

    def __init__(self, device_fd: int) -> None:
        self._device = device_fd
        self.fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        arg = _IRQ_SET.pack(_IRQ_SET.size + 4, VFIO_IRQ_SET_DATA_EVENTFD |
                            VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_PCI_MSI_IRQ_INDEX, 0, 1)
        _ioctl(device_fd, "DEVICE_SET_IRQS", arg + struct.pack("<i", self.fd))

    def wait(self, timeout: float) -> bool:
        """True once an interrupt has arrived (all pending ones are consumed), False on timeout."""
        ready, _, _ = select.select([self.fd], [], [], max(timeout, 0.0))
        if not ready:
            return False
        try:
            os.eventfd_read(self.fd)
        except BlockingIOError:
            pass
        return True

    def close(self) -> None:
        arg = _IRQ_SET.pack(_IRQ_SET.size, VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
                            VFIO_PCI_MSI_IRQ_INDEX, 0, 0)
        try:
            _ioctl(self._device, "DEVICE_SET_IRQS", arg)
        finally:
            os.close(self.fd)


class VfioDevice:
    """An open VFIO device: container + group + device fd, BAR0 mapped, DMA allocator, MSI.

    Parameters
    ----------
    group : VfioGroup
        From :func:`preflight`.
    dev_root : Path
        ``/dev``.
    """

    #: IOVAs handed out from here up (below 4 GiB so 32-bit descriptors work, above page 0).
    IOVA_BASE = 0x1000_0000

    def __init__(self, group: VfioGroup, *, dev_root: Path = Path("/dev")) -> None:
        self.bdf = group.bdf
        self._fds: list[int] = []
        self._buffers: list[VfioDmaBuffer] = []
        self._next_iova = self.IOVA_BASE
        self.bar: VfioBar | None = None
        self.msi: VfioMsi | None = None
        try:
            self._open(group, dev_root)
        except BaseException:
            self.close()
            raise

    def _fd(self, path: Path) -> int:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except PermissionError:
            raise PermissionDenied(f"permission denied on {path}: run as root or "
                                   f"sudo chown $USER {path}") from None
        except FileNotFoundError:
            raise VfioUnavailable(f"{path} does not exist: modprobe vfio-pci") from None
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                raise VfioUnavailable(f"{path} is busy: another process has the device "
                                      "open") from None
            raise VfioUnavailable(f"cannot open {path}: {exc.strerror}") from None
        self._fds.append(fd)
        return fd

    def _open(self, group: VfioGroup, dev_root: Path) -> None:
        container = self._container = self._fd(dev_root / "vfio" / "vfio")
        if _ioctl(container, "GET_API_VERSION") != VFIO_API_VERSION:
            raise VfioUnavailable("unknown VFIO API version")
        gfd = self._fd(group.dev_path)
        status = bytearray(_GROUP_STATUS.pack(_GROUP_STATUS.size, 0))
        _ioctl(gfd, "GROUP_GET_STATUS", status)
        if not _GROUP_STATUS.unpack(status)[1] & VFIO_GROUP_FLAGS_VIABLE:
            raise VfioUnavailable(
                f"IOMMU group {group.group} is not viable: every device in "
                f"/sys/kernel/iommu_groups/{group.group}/devices must be bound to vfio-pci")
        _ioctl(gfd, "GROUP_SET_CONTAINER", struct.pack("<i", container))
        iommu = (VFIO_TYPE1v2_IOMMU if _ioctl(container, "CHECK_EXTENSION", VFIO_TYPE1v2_IOMMU)
                 else VFIO_TYPE1_IOMMU)
        _ioctl(container, "SET_IOMMU", iommu)
        self._device = _ioctl(gfd, "GROUP_GET_DEVICE_FD", bytearray(group.bdf.encode() + b"\0"))
        self._fds.append(self._device)
        cap = PcieCapability.parse(self._config_read(0, 0x100))
        if cap is not None:
            check_link(self.bdf, cap.lnksta)
        self._enable_bus_master()
        flags, size, offset = self._region(VFIO_PCI_BAR0_REGION_INDEX)
        if not size:
            raise DeviceNotFound(f"{self.bdf} has no BAR0: is the busprobe bitstream loaded?")
        if not flags & VFIO_REGION_INFO_FLAG_MMAP:
            raise VfioUnavailable(f"{self.bdf}: BAR0 cannot be mmap'd through VFIO")
        if size < proto.BAR0_SIZE:
            # The identity registers lie beyond a smaller BAR: reading them would not be a
            # register access but an IndexError (a 4 KiB BAR0 did that on a real kernel).
            raise InvalidRequest(f"{self.bdf}: not a busprobe PCIe bitstream (BAR0 is {size} "
                                 f"bytes, busprobe's is {proto.BAR0_SIZE})")
        mapping = mmap.mmap(self._device, size, flags=mmap.MAP_SHARED,
                            prot=mmap.PROT_READ | mmap.PROT_WRITE, offset=offset)
        self.bar = VfioBar(mapping, size)
        try:
            self.msi = VfioMsi(self._device)
        except VfioUnavailable as exc:  # polling still works; say why interrupts are off
            log.warning("%s: MSI unavailable (%s); polling for completion", self.bdf, exc)

    def _region(self, index: int) -> tuple[int, int, int]:
        info = bytearray(_REGION_INFO.pack(_REGION_INFO.size, 0, index, 0, 0, 0))
        _ioctl(self._device, "DEVICE_GET_REGION_INFO", info)
        _, flags, _, _, size, offset = _REGION_INFO.unpack(info)
        return flags, size, offset

    def _enable_bus_master(self) -> None:
        """Set Memory Space and Bus Master Enable in the Command register: vfio-pci leaves
        them as it found them, and without BME every DMA of the device is silently dropped."""
        command = int.from_bytes(self._config_read(PCI_COMMAND, 2), "little")
        wanted = command | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER
        if wanted != command:
            _, _, offset = self._region(VFIO_PCI_CONFIG_REGION_INDEX)
            os.pwrite(self._device, wanted.to_bytes(2, "little"), offset + PCI_COMMAND)

    def _config_read(self, at: int, length: int) -> bytes:
        _, _, offset = self._region(VFIO_PCI_CONFIG_REGION_INDEX)
        return os.pread(self._device, length, offset + at)

    def alloc(self, size: int) -> VfioDmaBuffer:
        """A DMA buffer of ``size`` bytes (rounded up to pages) mapped at a fresh IOVA."""
        size = -(-size // mmap.PAGESIZE) * mmap.PAGESIZE
        if self._next_iova + size > 1 << proto.DMA_ADDRESS_WIDTH:
            raise InvalidRequest(f"DMA buffers exceed the core's {proto.DMA_ADDRESS_WIDTH}-bit "
                                 "address space: use shorter transfers or a lower queue depth")
        buf = VfioDmaBuffer(self._container, size, self._next_iova)
        self._next_iova += size
        self._buffers.append(buf)
        return buf

    def free(self, buf: VfioDmaBuffer) -> None:
        self._buffers.remove(buf)
        buf.close()

    def close(self) -> None:
        for buf in self._buffers:
            buf.close()
        self._buffers.clear()
        if self.msi is not None:
            self.msi.close()
            self.msi = None
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        for fd in reversed(self._fds):
            os.close(fd)
        self._fds.clear()
