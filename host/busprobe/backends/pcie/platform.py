"""What the PCIe DMA transport needs from a backend, and the descriptor rules it applies.

:class:`DmaPlatform` is to PCIe what :class:`~busprobe.backends.usb.platform.UsbPlatform` is to
USB: the small surface where a real bus and a simulated one differ. It bundles a :class:`Bar`
(BAR0 registers), :class:`DmaBuffer` s (host memory the device reaches at a bus address), an
optional :class:`Interrupt` (MSI) and a clock, and describes the bus it sits on (link, MPS/MRRS
settings, topology). The VFIO backend implements it with an mmap'd BAR, IOMMU-mapped memory and
sysfs (:class:`~busprobe.backends.pcie.vfio_platform.VfioPlatform`); the simulated backend with
RPC calls executed by the cocotb bench (:class:`busprobe.sim.pcie.backend.SimDmaPlatform`).
Everything above it is :class:`~busprobe.backends.pcie.dma_transport.PcieDmaTransport`, written
once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ...protocol import pcie as proto
from ...transport import BusDescription, InvalidRequest

__all__ = ["Bar", "DmaBuffer", "Interrupt", "DmaPlatform", "check_descriptor", "split_transfer",
           "PAGE", "DESC_CHUNK"]

#: Host memory is allocated in pages (no TLP may cross a 4 KiB boundary, PCIe Base Spec 2.2.7:
#: requests from an aligned descriptor start never do, :func:`split_transfer`).
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
    """One busprobe PCIe device: registers, memory, interrupts, a clock, and its bus.

    Attributes
    ----------
    name : str
        The device selector, prefix of every error message.
    bar : Bar
        BAR0 (once open).
    msi : Interrupt or None
        MSI delivery (once open), None where the driver must poll.
    driver_options : dict
        Keyword arguments of :class:`~busprobe.backends.pcie.driver.PcieDmaDriver` that depend
        on the platform's clock (timeouts, MSI slice, completion timeout).
    tool_path : str or None
        The host path a point's tool ceiling is measured for (:attr:`Transport.tool_path`):
        ``vfio`` on a board, None in simulation (implementations subclass this class, so it has
        its default).
    """

    name: str
    bar: Bar
    msi: Interrupt | None
    driver_options: dict[str, Any]
    tool_path: str | None = None

    def open(self) -> None: ...

    def close(self) -> None:
        """Release the device and undo :meth:`configure`; harmless when never opened."""

    def alloc(self, size: int) -> DmaBuffer: ...

    def free(self, buf: DmaBuffer) -> None: ...

    def now(self) -> float:
        """Seconds: wall clock on hardware, simulated time in simulation."""

    def bus(self, identity: Mapping[str, int]) -> BusDescription:
        """The bus the device is on, with MPS/MRRS as the device reports them in ``identity``
        (:meth:`~busprobe.backends.pcie.driver.PcieDmaDriver.probe`; empty before it opened)."""

    def configure(self, **settings: Any) -> None:
        """Set ``mps`` / ``mrrs`` (as the bus allows; before or after :meth:`open`)."""

    def topology(self, bus: BusDescription) -> list[dict[str, Any]]:
        """One dict per hop from the root to the device, with ``bus``'s settings in force."""


#: The longest descriptor that leaves the next one aligned (:func:`split_transfer`).
DESC_CHUNK = proto.DESC_MAX_LENGTH - proto.DESC_MAX_LENGTH % proto.DMA_ADDRESS_ALIGN


def check_descriptor(address: int, length: int, *,
                     longest: int | None = proto.DESC_MAX_LENGTH) -> None:
    """Raise :class:`InvalidRequest` unless ``length`` bytes at bus ``address`` are what the
    core can take (:mod:`busprobe.protocol.pcie`): a positive multiple of the datapath width
    (LitePCIe #97), at most ``longest`` (one descriptor's; ``None``: a transfer, which
    :func:`split_transfer` cuts), from a :data:`~busprobe.protocol.pcie.DMA_ADDRESS_ALIGN`-
    aligned start."""
    if length <= 0 or length % proto.DMA_LENGTH_ALIGN:
        raise InvalidRequest(f"PCIe DMA length {length} is not a positive multiple of "
                             f"{proto.DMA_LENGTH_ALIGN} bytes (the {proto.DATA_WIDTH}-bit "
                             "datapath width; LitePCIe #97)")
    if longest is not None and length > longest:
        raise InvalidRequest(f"PCIe DMA descriptor of {length} bytes is longer than "
                             f"{longest}, the descriptor's length field")
    if address % proto.DMA_ADDRESS_ALIGN:
        raise InvalidRequest(f"DMA buffer at {address:#x} is not "
                             f"{proto.DMA_ADDRESS_ALIGN}-byte aligned")


def split_transfer(bus_address: int, length: int) -> list[tuple[int, int]]:
    """``(address, length)`` descriptors covering the transfer: as few as the descriptor's
    length field allows, each starting :data:`~busprobe.protocol.pcie.DMA_ADDRESS_ALIGN`-aligned.

    A descriptor may span 4 KiB pages: LitePCIe's splitter cuts requests every MPS/MRRS bytes
    (a power of two, at most 512) from the descriptor's aligned start, so no request crosses a
    page boundary (PCIe Base 3.0 §2.2.7). Each descriptor costs two or three MMIO writes on the
    downstream lane, the one read completions share: cut at every page, a 64 KiB read took 32
    of them, which held reads 1.5 % below the link model (issue 32).

    Raises :class:`InvalidRequest` if the length is not a multiple of the DMA data width or the
    start is not aligned as the core needs (see :mod:`busprobe.protocol.pcie`).
    """
    check_descriptor(bus_address, length, longest=None)
    out = []
    address, end = bus_address, bus_address + length
    while address < end:
        chunk = min(end - address, DESC_CHUNK)
        out.append((address, chunk))
        address += chunk
    return out
