"""Real PCIe backend: the busprobe DMA device through Linux VFIO (``pcie:DDDD:BB:DD.F``).

:func:`open_pcie` is the transport factory of real PCIe devices (see :mod:`busprobe.buses`).
The transport (:mod:`.dma_transport`) and the driver that programs the device (:mod:`.driver`)
are shared with the simulated backend (:mod:`busprobe.sim.pcie.backend`); this package adds the
VFIO platform (:mod:`.vfio_platform` over :mod:`.vfio`) and the MPS/MRRS config-space guard
(:mod:`.config`).

Selector options: ``allow_config_write=1`` lets ``configure(mps=, mrrs=)`` rewrite Device Control
(root only; the CLI's ``--allow-config-write`` sets :attr:`VfioPlatform.allow_config_write`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .dma_transport import PcieDmaTransport
from .driver import PcieDmaDriver
from .vfio_platform import VfioPlatform

if TYPE_CHECKING:  # the description is built above the backends and handed down
    from ...targets import TargetDescription

__all__ = ["open_pcie", "PcieDmaTransport", "PcieDmaDriver", "VfioPlatform"]


def open_pcie(target: TargetDescription) -> PcieDmaTransport:
    """Factory of real PCIe devices (:attr:`busprobe.buses.PCIE`)."""
    return PcieDmaTransport(VfioPlatform(target))
