"""The busprobe PCIe device on this machine: a :class:`DmaPlatform` through Linux VFIO.

:class:`VfioPlatform` opens the device through VFIO (:mod:`.vfio`: group, container, BAR0, MSI,
IOMMU-mapped buffers), describes its link from sysfs, changes MPS/MRRS only through the
config-space guard (:mod:`.config`: root, ``allow_config_write``, within what both ends support,
always restored) and walks its topology from the root port down (:mod:`busprobe.topology.pci`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...buses import PCIE
from ...transport import BusDescription, InvalidRequest
from .config import ConfigSpaceGuard, PciFunction
from .platform import Bar, DmaBuffer, DmaPlatform, Interrupt
from .vfio import VfioBar, VfioDevice, preflight

if TYPE_CHECKING:  # the description is built above the backends and handed down
    from ...targets import TargetDescription

__all__ = ["VfioPlatform", "VfioBarAdapter"]


class VfioBarAdapter:
    """Adds ``write32_many`` (a plain loop on real MMIO) to :class:`VfioBar`."""

    def __init__(self, bar: VfioBar) -> None:
        self._bar = bar
        self.read32, self.write32 = bar.read32, bar.write32

    def write32_many(self, writes: list[tuple[int, int]]) -> None:
        for offset, value in writes:
            self._bar.write32(offset, value)


class VfioPlatform(DmaPlatform):
    """A :class:`~busprobe.backends.pcie.platform.DmaPlatform` through VFIO; wall-clock time.

    Parameters
    ----------
    target : TargetDescription
        ``pcie:DDDD:BB:DD.F[?allow_config_write=1]`` described (:func:`busprobe.targets.describe`;
        sysfs is read when the device is opened, so it need not have been).
    sysfs_root, dev_root : Path
        ``/sys`` and ``/dev`` (fixture trees in tests).

    Attributes
    ----------
    allow_config_write : bool
        Whether :meth:`configure` may rewrite Device Control (the CLI's
        ``--allow-config-write``).
    """

    driver_options: dict[str, Any] = {}
    #: Its points' tool ceiling is the VFIO path's (busprobe.tool_ceiling).
    tool_path = "vfio"

    def __init__(self, target: TargetDescription, *, sysfs_root: Path = Path("/sys"),
                 dev_root: Path = Path("/dev")) -> None:
        self.name = target.text
        self.bdf = target.target
        self.sysfs_root, self.dev_root = sysfs_root, dev_root
        self.allow_config_write = bool(target.options.get("allow_config_write", False))
        self._device: VfioDevice | None = None
        self._guard: ConfigSpaceGuard | None = None
        self._mps: int | None = None
        self._mrrs: int | None = None
        self.bar: Bar
        self.msi: Interrupt | None = None

    def open(self) -> None:
        group = preflight(self.bdf, sysfs_root=self.sysfs_root, dev_root=self.dev_root)
        self._device = VfioDevice(group, dev_root=self.dev_root)
        self.bar = VfioBarAdapter(self._device.bar)
        self.msi = self._device.msi

    def close(self) -> None:
        try:
            if self._guard is not None:
                self._guard.__exit__(None, None, None)
        finally:
            self._guard = None
            if self._device is not None:
                self._device.close()
                self._device = None

    def _device_open(self) -> VfioDevice:
        if self._device is None:
            raise InvalidRequest(f"{self.name}: the device is not open")
        return self._device

    def alloc(self, size: int) -> DmaBuffer:
        return self._device_open().alloc(size)

    def free(self, buf: DmaBuffer) -> None:
        self._device_open().free(buf)

    def now(self) -> float:
        return time.monotonic()

    def bus(self, identity: Mapping[str, int]) -> BusDescription:
        cap = PciFunction(self.bdf, self.sysfs_root).capability()
        return BusDescription(
            kind=PCIE.kind, speed=cap.link_speed, width=cap.link_width,
            mps=identity.get("mps") or cap.mps, mrrs=identity.get("mrrs") or cap.mrrs,
            extra={"bdf": self.bdf, "mps_supported": cap.mps_supported,
                   "link_speed_cap": cap.link_speed_cap, "link_width_cap": cap.link_width_cap})

    def configure(self, **settings: Any) -> None:
        mps, mrrs = settings.get("mps", self._mps), settings.get("mrrs", self._mrrs)
        if self._guard is not None:
            self._guard.__exit__(None, None, None)
            self._guard = None
        guard = ConfigSpaceGuard(self.bdf, mps=mps, mrrs=mrrs, sysfs_root=self.sysfs_root,
                                 allow_write=self.allow_config_write)
        guard.__enter__()
        self._guard, self._mps, self._mrrs = guard, mps, mrrs

    def topology(self, bus: BusDescription) -> list[dict[str, Any]]:
        from ...topology.pci import pcie_hops  # the sysfs walk: root port ... device

        return [hop.to_json() for hop in pcie_hops(self.bdf, sysfs_root=self.sysfs_root)]
