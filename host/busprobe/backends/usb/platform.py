"""What the USB device transport needs from a backend: endpoint 0 and a queue of bulk transfers.

:class:`UsbPlatform` is to USB what :class:`~busprobe.backends.pcie.platform.DmaPlatform` is to
PCIe: the small surface where a real bus and a simulated one differ, primitives only. libusb
implements it on a board (:class:`~busprobe.backends.usb.libusb_platform.LibusbPlatform`); the
simulation with requests carried out by a host-controller model against the gateware
(:class:`busprobe.sim.usb_platform.SimUsbPlatform`). Every protocol above it — the queued
stream, loopback, Bulk-Only Transport (:mod:`.plans`, :mod:`.bot`) — and validation, vendor
requests, telemetry and pattern handling (:class:`~busprobe.backends.usb.transport.
UsbDeviceTransport`) are written once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...transport import BusDescription, InvalidRequest
from .transfers import Completion, Transfer, TransferQueue

__all__ = ["UsbPlatform", "CONTROL_IN"]

#: bmRequestType direction bit: device-to-host (USB 2.0 §9.3.1).
CONTROL_IN = 0x80


class UsbPlatform(TransferQueue, Protocol):
    """One USB device on one bus, as the device transport drives it.

    Implementations subclass it, so the optional parts below have their defaults.

    Attributes
    ----------
    name : str
        The device selector, prefix of every error message.
    vendor_requests : bool
        Whether the device answers busprobe's vendor requests (pattern, telemetry, IN transfer
        length). The stock LUNA reference design does not: it streams COUNTER from power-up and
        ends no IN transfer with a short packet.
    emulated : str or None
        The machine is emulated (``"qemu"``, :func:`busprobe.emulation.emulated_host`): its
        controller is far slower than hardware, so a run waits longer before it counts as stuck.
        None on real hardware, and in simulation (whose clock is simulated).
    tool_path : str or None
        The host path a point's tool ceiling is measured for (:attr:`Transport.tool_path`):
        ``libusb`` on a board, None in simulation (its clock stands still while the host
        computes).
    """

    name: str
    vendor_requests: bool
    emulated: str | None
    tool_path: str | None = None

    def open(self) -> None: ...

    def close(self) -> None:
        """Release the device; harmless when it never opened or is gone."""

    def control(self, request_type: int, request: int, value: int, index: int,
                length_or_data: int | bytes) -> bytes:
        """One control transfer on endpoint 0: IN requests (``request_type & CONTROL_IN``) pass
        a length and get the data, OUT requests pass their data and get ``b""``."""

    def submit(self, transfers: Sequence[Transfer]) -> float:
        """Queue bulk transfers (:meth:`~.transfers.TransferQueue.submit`)."""

    def reap(self, timeout: float) -> list[Completion]:
        """Completed transfers (:meth:`~.transfers.TransferQueue.reap`)."""

    def cancel(self) -> None:
        """Cancel what is in flight (:meth:`~.transfers.TransferQueue.cancel`)."""

    def now(self) -> float:
        """Seconds: wall clock on hardware, simulated time in simulation."""

    def bus(self) -> BusDescription:
        """The bus the device is on (speed, host profile, port)."""

    def topology(self) -> list[dict[str, Any]]:
        """One dict per hop from the root to the device."""

    def bus_reset(self) -> bool:
        """Reset the bus and enumerate the device again, as a host does after a port reset (the
        usbredir export relays a guest's): every transfer in flight is dropped, unanswered, and
        every stream freed; False when this platform cannot (nothing done)."""
        return False

    def alloc_streams(self, endpoints: Sequence[int], count: int) -> None:
        """Give bulk ``endpoints`` bulk streams 1..``count`` (libusb's ``libusb_alloc_streams``;
        UAS at SuperSpeed); a :class:`~.transfers.Transfer` then names its stream."""
        raise InvalidRequest(f"{self.name}: this platform cannot allocate bulk streams "
                             f"(python-libusb1 does not wrap libusb_alloc_streams); UAS at "
                             f"SuperSpeed runs in simulation, or sweep block:/dev/sdX under uas")

    def free_streams(self, endpoints: Sequence[int]) -> None:
        """Free the streams :meth:`alloc_streams` gave (nothing to do where it gave none)."""
