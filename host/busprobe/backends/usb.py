"""The real USB backend: a busprobe USB 2.0 device through libusb-1.0 (python-libusb1).

Streaming uses libusb's asynchronous API so ``queue_depth`` bulk transfers are really outstanding
at once: submit N, resubmit each on completion until the count is reached, pump events. IN data
is handed to the sink in submission order; OUT data comes from the source just before each
(re)submission. Control requests (pattern, IN transfer length, telemetry) go through
:class:`~busprobe.backends.usb2_device.Usb2DeviceDriver`, the same driver the simulation uses.

libusb errors become :mod:`busprobe.transport` errors: not found → DeviceNotFound, no device →
DeviceGone, access → PermissionDenied (naming the shipped udev rule), timeout → TransferTimeout.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from ..protocol import usb2
from ..protocol.patterns import Pattern
from ..selectors import Selector
from ..transport import (
    BusDescription,
    DeviceNotFound,
    InvalidRequest,
    Sink,
    Source,
    StreamResult,
    Telemetry,
    Transport,
    TransportError,
)
from .libusb import (
    load_usb1,
    map_usb_error,
    transfer_status_error,
    udev_install_command,
    udev_rule_path,
)
from .usb2_device import Usb2DeviceDriver
from .usb_stream import BulkStream

__all__ = [
    "open_usb", "UsbTransport", "UsbTarget", "parse_usb_target", "load_usb1", "map_usb_error",
    "transfer_status_error", "udev_rule_path", "udev_install_command", "SPEED_NAMES",
]

log = logging.getLogger(__name__)

#: libusb speed codes → names (``libusb_speed``).
SPEED_NAMES = {0: "unknown", 1: "low", 2: "full", 3: "high", 4: "super", 5: "super-plus"}
_INTERFACE = 0
_CONTROL_TIMEOUT_MS = 1000


@dataclass(frozen=True)
class UsbTarget:
    """What ``usb:VID:PID[#SERIAL]`` selects."""

    vid: int
    pid: int
    serial: str | None = None

    def __str__(self) -> str:
        return f"usb:{self.vid:04x}:{self.pid:04x}" + (f"#{self.serial}" if self.serial else "")


def parse_usb_target(target: str) -> UsbTarget:
    """``"1209:0001#BP2-0001"`` → :class:`UsbTarget`; :class:`InvalidRequest` if malformed."""
    ids, _, serial = target.partition("#")
    parts = ids.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        vid, pid = (int(p, 16) for p in parts)
        if not (0 <= vid <= 0xFFFF and 0 <= pid <= 0xFFFF and all(parts)):
            raise ValueError
    except ValueError:
        raise InvalidRequest(f"bad USB selector usb:{target}: expected usb:VID:PID[#SERIAL] "
                             "with 4-digit hex ids, e.g. usb:1209:0001") from None
    return UsbTarget(vid, pid, serial or None)


def open_usb(selector: Selector) -> UsbTransport:
    """Factory registered for the ``usb`` scheme (see :mod:`busprobe.selectors`)."""
    if selector.options:
        raise InvalidRequest(f"{selector.text}: USB selectors take no options")
    return UsbTransport(parse_usb_target(selector.target), selector=selector.text)



class UsbTransport(Transport):
    """A busprobe USB 2.0 device on a real bus, through libusb.

    Parameters
    ----------
    target : UsbTarget
        Vendor/product id and optional serial number to open.
    selector : str
        The selector text, for messages and results.
    """

    directions = ("in", "out")

    def __init__(self, target: UsbTarget, *, selector: str | None = None) -> None:
        self.target = target
        self.selector = selector or str(target)
        self._usb1: Any = None
        self._context: Any = None
        self._device: Any = None
        self._handle: Any = None
        self._driver = Usb2DeviceDriver(self._control, name=self.selector)
        self._max_packet = usb2.MAX_PACKET_SIZE
        self._profile: str | None = None  # "" once looked up and not found

    # -- life cycle --------------------------------------------------------------------------
    def open(self) -> None:
        self._usb1 = usb1 = load_usb1()
        self._context = usb1.USBContext()
        try:
            self._context.open()
            self._device, self._handle = self._find()
            self._handle.setAutoDetachKernelDriver(True)
            self._handle.claimInterface(_INTERFACE)
            self._max_packet = self._driver.check_info()
        except usb1.USBError as exc:
            self.close()
            raise map_usb_error(exc, self.selector) from None
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
        raise DeviceNotFound(f"{self.selector}: no such USB device{detail}; "
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
        self._driver.forget_state()

    def now(self) -> float:
        return time.perf_counter()

    # -- description -------------------------------------------------------------------------
    @property
    def bus(self) -> BusDescription:
        device = self._device
        speed = SPEED_NAMES.get(device.getDeviceSpeed(), "unknown") if device else "high"
        kind = "usb3-ss" if speed.startswith("super") else "usb2-hs"
        extra: dict[str, Any] = {"port": self._port_name()} if device else {}
        return BusDescription(kind=kind, speed=speed, max_packet_size=self._max_packet,
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
            from ..selectors import parse_selector
            from ..topology import bus_from_sysfs

            try:
                self._profile = bus_from_sysfs(parse_selector(self._exact_selector())
                                               ).host_profile or ""
            except (TransportError, OSError) as exc:
                log.info("no host profile for %s: %s", self.selector, exc)
                self._profile = ""
        return self._profile or None

    def topology(self) -> list[dict[str, Any]]:
        if self._device is None:
            return []
        from ..topology import topology_for

        try:
            return topology_for(self._exact_selector())
        except (TransportError, OSError) as exc:  # no sysfs (not Linux, container): libusb only
            log.info("sysfs topology of %s: %s", self.selector, exc)
        return [{"hop": "device", "bus": self._device.getBusNumber(), "port": self._port_name(),
                 "address": self._device.getDeviceAddress(), "speed": self.bus.speed}]

    # -- control requests (encoding and decoding: Usb2DeviceDriver, shared with the sim) --
    def _control(self, request_type: int, request: int, value: int, index: int,
                 length_or_data: int | bytes) -> bytes:
        usb1 = self._usb1
        try:
            if request_type & usb1.ENDPOINT_IN:
                assert isinstance(length_or_data, int)
                return bytes(self._handle.controlRead(request_type, request, value, index,
                                                      length_or_data, _CONTROL_TIMEOUT_MS))
            self._handle.controlWrite(request_type, request, value, index, bytes(length_or_data),
                                      _CONTROL_TIMEOUT_MS)
            return b""
        except usb1.USBError as exc:
            raise map_usb_error(exc, f"{self.selector}: {_request_name(request)}") from None

    def set_pattern(self, pattern: Pattern) -> None:
        self._driver.set_pattern(pattern)

    def clear_telemetry(self) -> None:
        self._driver.clear_telemetry()

    def read_telemetry(self) -> Telemetry:
        return self._driver.read_telemetry()

    # -- streaming ---------------------------------------------------------------------------
    def stream(self, direction: str, length: int, count: int, queue_depth: int,
               source: Source | None = None, sink: Sink | None = None) -> StreamResult:
        self.validate(direction, length, queue_depth)
        if direction == "in":
            # The device ends each IN transfer where the host's transfer ends, so a short
            # length completes with a short packet instead of waiting for more data.
            self._driver.set_in_transfer(length)
            endpoint = usb2.EP_IN
        else:
            if source is None:
                raise InvalidRequest("an OUT stream needs a data source")
            endpoint = usb2.EP_OUT
        run = BulkStream(self._usb1, self._handle, endpoint=endpoint, length=length, count=count,
                       queue_depth=queue_depth, source=source,
                       what=f"{self.selector}: {direction} transfer")
        return run.run(self._context, sink)


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
