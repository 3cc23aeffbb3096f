"""Real PCIe backend: the busprobe DMA device through Linux VFIO (``pcie:DDDD:BB:DD.F``).

:func:`open_pcie` is the transport factory of real PCIe devices (see :mod:`busprobe.buses`).
The driver that programs the device (:mod:`.driver`) is shared with the simulated backend
(:mod:`busprobe.sim.pcie.backend`); this package adds VFIO plumbing (:mod:`.vfio`) and the
MPS/MRRS config-space guard (:mod:`.config`).

Selector options: ``allow_config_write=1`` lets ``configure(mps=, mrrs=)`` rewrite Device Control
(root only; the CLI's ``--allow-config-write`` sets :attr:`VfioPcieTransport.allow_config_write`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...buses import PCIE
from ...transport import BusDescription, InvalidRequest
from .config import ConfigSpaceGuard, PciFunction
from .dma_transport import PcieDmaTransport
from .driver import DmaBuffer, DmaPlatform, Interrupt, PcieDmaDriver
from .vfio import VfioBar, VfioDevice, preflight

if TYPE_CHECKING:  # the description is built above the backends and handed down
    from ...targets import TargetDescription

__all__ = ["open_pcie", "VfioPcieTransport", "PcieDmaDriver"]


class _VfioPlatform:
    """:class:`DmaPlatform` on an open :class:`VfioDevice`; wall-clock time."""

    def __init__(self, device: VfioDevice) -> None:
        self.device = device
        self.bar: VfioBarAdapter = VfioBarAdapter(device.bar)
        self.msi: Interrupt | None = device.msi

    def alloc(self, size: int) -> DmaBuffer:
        return self.device.alloc(size)

    def free(self, buf: DmaBuffer) -> None:
        self.device.free(buf)

    def now(self) -> float:
        return time.monotonic()


class VfioBarAdapter:
    """Adds ``write32_many`` (a plain loop on real MMIO) to :class:`VfioBar`."""

    def __init__(self, bar: VfioBar) -> None:
        self._bar = bar
        self.read32, self.write32 = bar.read32, bar.write32

    def write32_many(self, writes: list[tuple[int, int]]) -> None:
        for offset, value in writes:
            self._bar.write32(offset, value)


class VfioPcieTransport(PcieDmaTransport):
    """The busprobe PCIe device on this machine, through VFIO.

    Parameters
    ----------
    target : TargetDescription
        ``pcie:DDDD:BB:DD.F[?allow_config_write=1]`` described (:func:`busprobe.targets.describe`;
        sysfs is read when the device is opened, so it need not have been).
    sysfs_root, dev_root : Path
        ``/sys`` and ``/dev`` (fixture trees in tests).
    """

    def __init__(self, target: TargetDescription, *, sysfs_root: Path = Path("/sys"),
                 dev_root: Path = Path("/dev")) -> None:
        super().__init__(target.text)
        self.bdf = target.target
        self.sysfs_root, self.dev_root = sysfs_root, dev_root
        self.allow_config_write = bool(target.options.get("allow_config_write", False))
        self._device: VfioDevice | None = None
        self._guard: ConfigSpaceGuard | None = None
        self._mps: int | None = None
        self._mrrs: int | None = None

    def _open_platform(self) -> DmaPlatform:
        group = preflight(self.bdf, sysfs_root=self.sysfs_root, dev_root=self.dev_root)
        self._device = VfioDevice(group, dev_root=self.dev_root)
        return _VfioPlatform(self._device)

    def _close_platform(self) -> None:
        try:
            if self._guard is not None:
                self._guard.__exit__(None, None, None)
        finally:
            self._guard = None
            if self._device is not None:
                self._device.close()
                self._device = None

    @property
    def bus(self) -> BusDescription:
        cap = PciFunction(self.bdf, self.sysfs_root).capability()
        return BusDescription(
            kind=PCIE.kind, speed=cap.link_speed, width=cap.link_width,
            mps=self.identity.get("mps") or cap.mps, mrrs=self.identity.get("mrrs") or cap.mrrs,
            extra={"bdf": self.bdf, "mps_supported": cap.mps_supported,
                   "link_speed_cap": cap.link_speed_cap, "link_width_cap": cap.link_width_cap})

    def configure(self, **settings: Any) -> None:
        unknown = set(settings) - {"mps", "mrrs"}
        if unknown:
            raise InvalidRequest(f"{self.selector}: cannot set {', '.join(sorted(unknown))}")
        mps, mrrs = settings.get("mps", self._mps), settings.get("mrrs", self._mrrs)
        if self._guard is not None:
            self._guard.__exit__(None, None, None)
            self._guard = None
        guard = ConfigSpaceGuard(self.bdf, mps=mps, mrrs=mrrs, sysfs_root=self.sysfs_root,
                                 allow_write=self.allow_config_write)
        guard.__enter__()
        self._guard, self._mps, self._mrrs = guard, mps, mrrs
        if self.driver is not None:
            self.identity = self.driver.probe()

    def topology(self) -> list[dict[str, Any]]:
        from ...topology.pci import pcie_hops  # H4's sysfs walk: root port ... device

        return [hop.to_json() for hop in pcie_hops(self.bdf, sysfs_root=self.sysfs_root)]


def open_pcie(target: TargetDescription) -> VfioPcieTransport:
    """Factory of real PCIe devices (:attr:`busprobe.buses.PCIE`)."""
    return VfioPcieTransport(target)
