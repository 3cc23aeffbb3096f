"""The busprobe USB device on a real bus: a :class:`UsbPlatform` through libusb-1.0.

Bulk transfers go through libusb's asynchronous API (:class:`~.libusb_queue.LibusbTransferQueue`)
so a plan's transfers are really in flight at once. Everything above endpoint 0 and that queue is
:class:`~.transport.UsbDeviceTransport`, the same driver the simulation runs.

libusb errors become :mod:`busprobe.transport` errors (:mod:`.libusb`): not found →
DeviceNotFound, no device → DeviceGone, access → PermissionDenied (naming the shipped udev rule),
timeout → TransferTimeout.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from ...buses import USB2_HS
from ...emulation import emulated_host
from ...protocol import usb2
from ...selectors import UsbTarget, parse_selector
from ...targets import TargetDescription
from ...topology import bus_from_sysfs, topology_for
from ...transport import BusDescription, DeviceNotFound, InvalidRequest, TransportError
from .libusb import load_usb1, map_usb_error
from .libusb_queue import LibusbTransferQueue
from .platform import CONTROL_IN, UsbPlatform
from .transfers import Completion, Transfer
from .transport import UsbDeviceTransport

__all__ = ["open_usb", "LibusbPlatform", "SPEED_NAMES"]

log = logging.getLogger(__name__)

#: libusb speed codes → names (``libusb_speed``).
SPEED_NAMES = {0: "unknown", 1: "low", 2: "full", 3: "high", 4: "super", 5: "super-plus"}
_INTERFACE = 0
_CONTROL_TIMEOUT_MS = 1000
#: bmRequestType and bRequest of SET_INTERFACE (standard, to an interface; USB 2.0 §9.4.10).
_SET_INTERFACE = (0x01, 11)


def open_usb(target: TargetDescription) -> UsbDeviceTransport:
    """Factory of the ``usb`` row of :mod:`busprobe.buses` (the selector is already checked)."""
    return UsbDeviceTransport(LibusbPlatform(target.address, name=target.text))


class LibusbPlatform(UsbPlatform):
    """A busprobe USB device on this machine's bus, through libusb (a :class:`UsbPlatform`).

    Parameters
    ----------
    target : UsbTarget
        Vendor/product id and optional serial number to open.
    name : str
        The selector text, for messages and results.
    """

    vendor_requests = True
    #: Its points' tool ceiling is the libusb path's (busprobe.tool_ceiling).
    tool_path = "libusb"

    def __init__(self, target: UsbTarget, *, name: str | None = None) -> None:
        self.target = target
        self.name = name or str(target)
        self._usb1: Any = None
        self._context: Any = None
        self._device: Any = None
        self._handle: Any = None
        self._queue: LibusbTransferQueue | None = None
        self.emulated = emulated_host()
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
            self._queue = LibusbTransferQueue(usb1, self._context, self._handle, name=self.name)
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
            if self.target.port is not None and _port_name(device) != self.target.port:
                continue
            handle = device.open()  # USBErrorAccess propagates: that is the message to give
            serial = _read_serial(handle)
            if self.target.serial is None or serial == self.target.serial:
                return device, handle
            found.append(serial)
            handle.close()
        detail = f" (serials present: {', '.join(map(str, found))})" if found else ""
        if self.target.port is not None and not found:
            detail = f" at port {self.target.port}"
        raise DeviceNotFound(f"{self.name}: no such USB device{detail}; "
                             "`busprobe list` shows what is connected")

    def close(self) -> None:
        if self._queue is not None:
            self._queue.close()
            self._queue = None
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
        return str(UsbTarget(self.target.vid, self.target.pid, serial or self.target.serial,
                             self.target.port))

    def _port_name(self) -> str:
        return _port_name(self._device)

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
            if (request_type, request) == _SET_INTERFACE:
                # Through libusb's own call, not a raw control transfer: the kernel must switch
                # its endpoint table to the alternate too (usbfs refuses bulk transfers to an
                # endpoint the alternate in force does not have, e.g. UAS's 0x04 and 0x83).
                self._handle.setInterfaceAltSetting(index, value)
                return b""
            if request_type & CONTROL_IN:
                assert isinstance(length_or_data, int)
                return bytes(self._handle.controlRead(request_type, request, value, index,
                                                      length_or_data, _CONTROL_TIMEOUT_MS))
            self._handle.controlWrite(request_type, request, value, index, bytes(length_or_data),
                                      _CONTROL_TIMEOUT_MS)
            return b""
        except usb1.USBError as exc:
            raise map_usb_error(exc, f"{self.name}: {_request_name(request)}") from None

    def _transfers(self) -> LibusbTransferQueue:
        if self._queue is None:
            raise InvalidRequest(f"{self.name}: the device is not open")
        return self._queue

    def submit(self, transfers: Sequence[Transfer]) -> float:
        return self._transfers().submit(transfers)

    def reap(self, timeout: float) -> list[Completion]:
        return self._transfers().reap(timeout)

    def cancel(self) -> None:
        if self._queue is not None:
            self._queue.cancel()


def _port_name(device: Any) -> str:
    """The device's port path as sysfs names it (``1-2``, ``3-1.4``; the bus alone for a root
    hub)."""
    busnum, ports = device.getBusNumber(), device.getPortNumberList()
    return f"{busnum}-{'.'.join(map(str, ports))}" if ports else str(busnum)


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
