"""What the PCIe DMA driver needs from a backend, and the descriptor rules it applies.

:class:`DmaPlatform` bundles a :class:`Bar` (BAR0 registers), :class:`DmaBuffer` s (host memory
the device reaches at a bus address), an optional :class:`Interrupt` (MSI) and a clock. The VFIO
backend implements it with an mmap'd BAR and IOMMU-mapped memory; the simulated backend with RPC
calls executed by the cocotb bench.
"""

from __future__ import annotations

from typing import Protocol

from ...protocol import pcie as proto
from ...transport import InvalidRequest

__all__ = ["Bar", "DmaBuffer", "Interrupt", "DmaPlatform", "split_transfer", "PAGE"]

#: No TLP may cross a 4 KiB address boundary (PCIe Base Spec 2.2.7); descriptors end there.
PAGE = 4096


class Bar(Protocol):
    """A device register window (BAR0)."""

    def read32(self, offset: int) -> int: ...

    def write32(self, offset: int, value: int) -> None: ...

    def write32_many(self, writes: list[tuple[int, int]]) -> None:
        """Several writes in order (one round trip for the simulated BAR)."""


class DmaBuffer(Protocol):
    """Host memory the device can reach at :attr:`bus_address`."""

    bus_address: int
    size: int

    def read(self, offset: int, length: int) -> bytes: ...

    def write(self, offset: int, data: bytes) -> None: ...


class Interrupt(Protocol):
    """MSI delivery."""

    def wait(self, timeout: float) -> bool:
        """Block until an interrupt arrives (True) or ``timeout`` seconds pass (False)."""


class DmaPlatform(Protocol):
    """What the driver needs from a backend: registers, memory, interrupts, a clock."""

    bar: Bar
    msi: Interrupt | None

    def alloc(self, size: int) -> DmaBuffer: ...

    def free(self, buf: DmaBuffer) -> None: ...

    def now(self) -> float:
        """Seconds: wall clock on hardware, simulated time in simulation."""


def split_transfer(bus_address: int, length: int, *, page: int = PAGE) -> list[tuple[int, int]]:
    """``(address, length)`` descriptors covering the transfer, none crossing a ``page`` boundary.

    Raises :class:`InvalidRequest` if the length is not a multiple of the DMA data width or the
    start is not aligned as the core needs (see :mod:`busprobe.protocol.pcie`).
    """
    if length <= 0 or length % proto.DMA_LENGTH_ALIGN:
        raise InvalidRequest(f"PCIe DMA length {length} is not a positive multiple of "
                             f"{proto.DMA_LENGTH_ALIGN} bytes (the {proto.DATA_WIDTH}-bit "
                             "datapath width; LitePCIe #97)")
    if bus_address % proto.DMA_ADDRESS_ALIGN:
        raise InvalidRequest(f"DMA buffer at {bus_address:#x} is not "
                             f"{proto.DMA_ADDRESS_ALIGN}-byte aligned")
    out = []
    address, end = bus_address, bus_address + length
    while address < end:
        chunk = min(end, (address // page + 1) * page) - address
        out.append((address, chunk))
        address += chunk
    return out
