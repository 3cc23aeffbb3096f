"""What the USB device transport needs from a backend: endpoint 0 and bulk streams.

:class:`UsbPlatform` is to USB what :class:`~busprobe.backends.pcie.platform.DmaPlatform` is to
PCIe: the small surface where a real bus and a simulated one differ. libusb implements it on a
board (:class:`~busprobe.backends.usb.libusb_platform.LibusbPlatform`); the simulation
implements it with requests carried out by the ULPI host model against the gateware
(:class:`busprobe.sim.usb2.backend.SimUsb2Platform`). Everything above it — validation, vendor
requests, telemetry, pattern handling — is :class:`~busprobe.backends.usb.transport.
UsbDeviceTransport`, written once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...transport import BusDescription, Sink, StreamResult

__all__ = ["UsbPlatform", "CONTROL_IN"]

#: bmRequestType direction bit: device-to-host (USB 2.0 §9.3.1).
CONTROL_IN = 0x80


class UsbPlatform(Protocol):
    """One USB device on one bus, as the device transport drives it.

    Attributes
    ----------
    name : str
        The device selector, prefix of every error message.
    vendor_requests : bool
        Whether the device answers busprobe's vendor requests (pattern, telemetry, IN transfer
        length). The stock LUNA reference design does not: it streams COUNTER from power-up and
        ends no IN transfer with a short packet.
    """

    name: str
    vendor_requests: bool

    def open(self) -> None: ...

    def close(self) -> None:
        """Release the device; harmless when it never opened or is gone."""

    def control(self, request_type: int, request: int, value: int, index: int,
                length_or_data: int | bytes) -> bytes:
        """One control transfer on endpoint 0: IN requests (``request_type & CONTROL_IN``) pass
        a length and get the data, OUT requests pass their data and get ``b""``."""

    def bulk(self, endpoint: int, length: int, count: int, queue_depth: int,
             outgoing: Sequence[bytes] | None, sink: Sink | None) -> StreamResult:
        """Move ``count`` bulk transfers of ``length`` bytes on ``endpoint`` (bit 7 set: IN),
        keeping ``queue_depth`` submitted at once.

        OUT transfers send ``outgoing[i]`` (all made before the clock starts, so producing them
        never starves the queue); every IN transfer's data goes to ``sink`` in submission
        order, short ones included. ``start``/``end`` of the result are on :meth:`now`'s clock.
        """

    def loopback(self, length: int, count: int, queue_depth: int, outgoing: Sequence[bytes],
                 sink: Sink | None) -> StreamResult:
        """``count`` OUT transfers of ``outgoing[i]`` and ``count`` IN transfers of ``length``
        bytes, both queues ``queue_depth`` deep at once, for a device in loopback mode: every
        IN transfer's data goes to ``sink`` in order. The result counts the bytes that came
        back, from the first submission to the last completion of either direction.
        """

    def bot(self, cbws: Sequence[bytes], direction: str, length: int,
            outgoing: Sequence[bytes] | None,
            sink: Sink | None) -> tuple[StreamResult, list[bytes]]:
        """Run one Bulk-Only Transport command per CBW in ``cbws``, one at a time: the CBW on
        the OUT endpoint, ``length`` data bytes in ``direction`` (OUT: ``outgoing[i]``; IN: to
        ``sink``), then a 13-byte CSW read on the IN endpoint, each stage submitted when the one
        before completed (:func:`~busprobe.backends.usb.bot.run_by_bulk` on libusb).

        Returns the data phases as one result (first CBW submitted to last CSW completed, data
        bytes only) and the CSWs as received, for the transport to check.
        """

    def now(self) -> float:
        """Seconds: wall clock on hardware, simulated time in simulation."""

    def bus(self) -> BusDescription:
        """The bus the device is on (speed, host profile, port)."""

    def topology(self) -> list[dict[str, Any]]:
        """One dict per hop from the root to the device."""
