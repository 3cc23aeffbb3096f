"""The busprobe USB device on a real bus: a :class:`UsbPlatform` through libusb-1.0.

Streaming uses libusb's asynchronous API (:class:`~.bulk_stream.BulkStream`) so ``queue_depth``
bulk transfers are really outstanding at once. Everything above endpoint 0 and the bulk streams
is :class:`~.transport.UsbDeviceTransport`, the same driver the simulation runs.

libusb errors become :mod:`busprobe.transport` errors (:mod:`.libusb`): not found →
DeviceNotFound, no device → DeviceGone, access → PermissionDenied (naming the shipped udev rule),
timeout → TransferTimeout.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...buses import USB2_HS
from ...protocol import usb2
from ...selectors import UsbTarget, parse_selector
from ...targets import TargetDescription
from ...topology import bus_from_sysfs, topology_for
from ...transport import (
    BusDescription,
    DeviceNotFound,
    Sink,
    StreamResult,
    TransportError,
)
from .bot import run_by_bulk
from .bulk_stream import BulkStream, run_together
from .libusb import load_usb1, map_usb_error
from .platform import CONTROL_IN
from .transport import UsbDeviceTransport

__all__ = ["open_usb", "LibusbPlatform", "SPEED_NAMES"]

log = logging.getLogger(__name__)

#: libusb speed codes → names (``libusb_speed``).
SPEED_NAMES = {0: "unknown", 1: "low", 2: "full", 3: "high", 4: "super", 5: "super-plus"}
_INTERFACE = 0
_CONTROL_TIMEOUT_MS = 1000


def open_usb(target: TargetDescription) -> UsbDeviceTransport:
    """Factory of the ``usb`` row of :mod:`busprobe.buses` (the selector is already checked)."""
    return UsbDeviceTransport(LibusbPlatform(target.address, name=target.text))


class LibusbPlatform:
    """A busprobe USB device on this machine's bus, through libusb (a :class:`UsbPlatform`).

    Parameters
    ----------
    target : UsbTarget
        Vendor/product id and optional serial number to open.
    name : str
        The selector text, for messages and results.
    """

    vendor_requests = True

    def __init__(self, target: UsbTarget, *, name: str | None = None) -> None:
        self.target = target
        self.name = name or str(target)
        self._usb1: Any = None
        self._context: Any = None
        self._device: Any = None
        self._handle: Any = None
        self._profile: str | None = None  # "" once looked up and not found

    # -- life cycle ---------------------------------------------------------------------------
    def open(self) -> None:
        self._usb1 = usb1 = load_usb1()
        self._context = usb1.USBContext()
        try:
            self._context.open()
            self._device, self._handle = self._find()
            # Any speed: the device's GET_INFO says whether it is the USB 2.0 or the SuperSpeed
            # gateware (UsbDeviceTransport), and the transport reports its bus accordingly.
            self._handle.setAutoDetachKernelDriver(True)
            self._handle.claimInterface(_INTERFACE)
        except usb1.USBError as exc:
            self.close()
            raise map_usb_error(exc, self.name) from None
        except TransportError:
            self.close()
            raise

    def _find(self) -> tuple[Any, Any]:
        found = []
        for device in self._context.getDeviceIterator(skip_on_error=True):
            if (device.getVendorID(), device.getProductID()) != (self.target.vid,
                                                                 self.target.pid):
                continue
            handle = device.open()  # USBErrorAccess propagates: that is the message to give
            serial = _read_serial(handle)
            if self.target.serial is None or serial == self.target.serial:
                return device, handle
            found.append(serial)
            handle.close()
        detail = f" (serials present: {', '.join(map(str, found))})" if found else ""
        raise DeviceNotFound(f"{self.name}: no such USB device{detail}; "
                             "`busprobe list` shows what is connected")

    def close(self) -> None:
        if self._handle is not None:
            try:
                self._handle.releaseInterface(_INTERFACE)
            except Exception:  # closing after the device went away
                pass
            self._handle.close()
            self._handle = None
        if self._context is not None:
            self._context.close()
            self._context = None
        self._device = None

    def now(self) -> float:
        return time.perf_counter()

    # -- description --------------------------------------------------------------------------
    def bus(self) -> BusDescription:
        device = self._device
        speed = SPEED_NAMES.get(device.getDeviceSpeed(), "unknown") if device else "high"
        extra: dict[str, Any] = {"port": self._port_name()} if device else {}
        return BusDescription(kind=USB2_HS.kind, speed=speed, max_packet_size=usb2.MAX_PACKET_SIZE,
                              host_profile=self._host_profile(), extra=extra)

    def _exact_selector(self) -> str:
        """The selector of the device actually opened (with its serial, when it has one)."""
        serial = _read_serial(self._handle) if self._handle is not None else None
        return str(UsbTarget(self.target.vid, self.target.pid, serial or self.target.serial))

    def _port_name(self) -> str:
        busnum, ports = self._device.getBusNumber(), self._device.getPortNumberList()
        return f"{busnum}-{'.'.join(map(str, ports))}" if ports else str(busnum)

    def _host_profile(self) -> str | None:
        """The host-controller profile for the ceiling model, from the controller's driver in
        sysfs (``None`` where sysfs cannot tell)."""
        if self._device is None:
            return None
        if self._profile is None:
            try:
                self._profile = bus_from_sysfs(parse_selector(self._exact_selector())
                                               ).host_profile or ""
            except (TransportError, OSError) as exc:
                log.info("no host profile for %s: %s", self.name, exc)
                self._profile = ""
        return self._profile or None

    def topology(self) -> list[dict[str, Any]]:
        if self._device is None:
            return []
        try:
            return topology_for(self._exact_selector())
        except (TransportError, OSError) as exc:  # no sysfs (not Linux, container): libusb only
            log.info("sysfs topology of %s: %s", self.name, exc)
        return [{"hop": "device", "bus": self._device.getBusNumber(), "port": self._port_name(),
                 "address": self._device.getDeviceAddress(), "speed": self.bus().speed}]

    # -- transfers ----------------------------------------------------------------------------
    def control(self, request_type: int, request: int, value: int, index: int,
                length_or_data: int | bytes) -> bytes:
        usb1 = self._usb1
        try:
            if request_type & CONTROL_IN:
                assert isinstance(length_or_data, int)
                return bytes(self._handle.controlRead(request_type, request, value, index,
                                                      length_or_data, _CONTROL_TIMEOUT_MS))
            self._handle.controlWrite(request_type, request, value, index, bytes(length_or_data),
                                      _CONTROL_TIMEOUT_MS)
            return b""
        except usb1.USBError as exc:
            raise map_usb_error(exc, f"{self.name}: {_request_name(request)}") from None

    def bulk(self, endpoint: int, length: int, count: int, queue_depth: int,
             outgoing: Sequence[bytes] | None, sink: Sink | None) -> StreamResult:
        direction = "in" if endpoint & CONTROL_IN else "out"
        run = BulkStream(self._usb1, self._handle, endpoint=endpoint, length=length, count=count,
                         queue_depth=queue_depth, outgoing=outgoing,
                         what=f"{self.name}: {direction} transfer")
        return run.run(self._context, sink)

    def loopback(self, length: int, count: int, queue_depth: int, outgoing: Sequence[bytes],
                 sink: Sink | None) -> StreamResult:
        streams = [BulkStream(self._usb1, self._handle, endpoint=endpoint, length=length,
                              count=count, queue_depth=queue_depth,
                              outgoing=outgoing if endpoint == usb2.EP_OUT else None,
                              what=f"{self.name}: loopback {name} transfer")
                   for endpoint, name in ((usb2.EP_OUT, "out"), (usb2.EP_IN, "in"))]
        sent, returned = run_together(self._context, [(streams[0], None), (streams[1], sink)])
        return replace(returned, direction="loopback", start=min(sent.start, returned.start),
                       end=max(sent.end, returned.end))

    def bot(self, cbws: Sequence[bytes], direction: str, length: int,
            outgoing: Sequence[bytes] | None,
            sink: Sink | None) -> tuple[StreamResult, list[bytes]]:
        return run_by_bulk(self.bulk, cbws, direction, length, outgoing, sink)


def _read_serial(handle: Any) -> str | None:
    try:
        return handle.getSerialNumber()
    except Exception:  # a device without a readable serial still matches VID:PID
        return None


def _request_name(request: int) -> str:
    try:
        return usb2.Request(request).name
    except ValueError:
        return f"request {request:#04x}"
