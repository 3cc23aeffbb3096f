"""How a usbredir export carries the guest's control requests to the device (one job: endpoint 0).

``control_packet`` → :meth:`UsbPlatform.control`; ``set_configuration``, ``get_configuration``,
``set_alt_setting``, ``get_alt_setting`` → the standard requests they stand for, and after a
successful SET_CONFIGURATION or SET_INTERFACE the interfaces and endpoints in force announced
again (``interface_info``, ``ep_info``), as usbredirhost does; ``reset`` → ``bus_reset()``.
:class:`RequestRelay` is a part of :class:`~.usbredir_export.UsbredirExport`, which provides
the connection (``_send``, ``_answered``, ``_take_cancelled``, ``negotiated``, ``platform``,
``info``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from busprobe.transport import (
    DeviceGone,
    EndpointStalled,
    InvalidRequest,
    TransferTimeout,
    TransportError,
)
from usb_protocol.types import USBStandardRequests

from .announce import interfaces_announcement
from .device_info import DeviceInfo
from .usbredir_wire import (
    ALT_SETTING_STATUS,
    CONFIGURATION_STATUS,
    CONTROL,
    Negotiated,
    Packet,
    PacketType,
    Speed,
    Status,
)

__all__ = ["RequestRelay", "status_of"]

log = logging.getLogger(__name__)

#: bmRequestType of standard requests (USB 2.0 §9.3.1): to/from the device, to/from an interface.
_TO_DEVICE, _FROM_DEVICE, _TO_INTERFACE, _FROM_INTERFACE = 0x00, 0x80, 0x01, 0x81


def status_of(exc: TransportError) -> Status:
    """The usbredir status a platform error is answered with."""
    if isinstance(exc, EndpointStalled):
        return Status.STALL
    if isinstance(exc, TransferTimeout):
        return Status.TIMEOUT
    if isinstance(exc, InvalidRequest):
        return Status.INVAL
    return Status.IOERROR


#: Standard requests that only read (USB 2.0 §9.4): a device answering them stays as it was.
_STANDARD_READS = frozenset({USBStandardRequests.GET_STATUS, USBStandardRequests.GET_DESCRIPTOR,
                             USBStandardRequests.GET_CONFIGURATION,
                             USBStandardRequests.GET_INTERFACE})
#: usbredir packets that read the device or only talk to the export.
_READS_ONLY = frozenset({PacketType.HELLO, PacketType.GET_CONFIGURATION,
                         PacketType.GET_ALT_SETTING, PacketType.RESET})


class RequestRelay:
    """The control side of an export.

    Attributes
    ----------
    settings : dict
        The alternate setting in force per interface number (absent: 0), as the guest's
        SET_INTERFACEs left them.
    as_reset : bool
        Whether the device is as a bus reset and enumeration leave it: nothing but standard
        reads reached it since (a reset of it then changes nothing and is skipped).
    """

    platform: Any
    negotiated: Negotiated
    info: DeviceInfo | None
    speed: Speed
    settings: dict[int, int]
    as_reset: bool

    def _send(self, data: bytes) -> None: ...
    def _answered(self, packet_id: int) -> None: ...
    def _take_cancelled(self, packet_id: int) -> bool: ...
    def _after_bus_reset(self) -> None: ...

    def in_force(self) -> DeviceInfo | None:
        """The device's interfaces and endpoints in the alternates in force."""
        return None if self.info is None else self.info.in_force(self.settings)

    def _announce_interfaces(self) -> None:
        info = self.in_force()
        assert info is not None
        for message in interfaces_announcement(self.negotiated, info, self.speed):
            self._send(message)

    def _set_configuration(self, packet: Packet) -> None:
        (value,) = packet.fields
        status, _ = self._standard(_TO_DEVICE, USBStandardRequests.SET_CONFIGURATION, value, 0)
        self._send(self.negotiated.encode(PacketType.CONFIGURATION_STATUS, packet.id,
                                          CONFIGURATION_STATUS.pack(status, value)))
        self.settings.clear()  # SET_CONFIGURATION returns every interface to alternate 0
        self._announce_interfaces()  # the spec has the usb-host announce them again

    def _get_configuration(self, packet: Packet) -> None:
        status, data = self._standard(_FROM_DEVICE, USBStandardRequests.GET_CONFIGURATION, 0, 0,
                                      1)
        self._send(self.negotiated.encode(PacketType.CONFIGURATION_STATUS, packet.id,
                                          CONFIGURATION_STATUS.pack(status, data[0] if data
                                                                    else 0)))

    def _set_alt_setting(self, packet: Packet) -> None:
        interface, alt = packet.fields
        status, _ = self._standard(_TO_INTERFACE, USBStandardRequests.SET_INTERFACE, alt,
                                   interface)
        if status == Status.SUCCESS:
            # As usbredirhost does: the setting's interface and endpoints are announced before
            # its status, so the guest knows the new endpoints (UAS's 0x04 and 0x83) when it
            # sends to them, and bulk packets are checked against them (connection.refusal).
            self.settings[interface] = alt
            self._announce_interfaces()
        self._send(self.negotiated.encode(PacketType.ALT_SETTING_STATUS, packet.id,
                                          ALT_SETTING_STATUS.pack(status, interface, alt)))

    def _get_alt_setting(self, packet: Packet) -> None:
        (interface,) = packet.fields
        status, data = self._standard(_FROM_INTERFACE, USBStandardRequests.GET_INTERFACE, 0,
                                      interface, 1)
        self._send(self.negotiated.encode(PacketType.ALT_SETTING_STATUS, packet.id,
                                          ALT_SETTING_STATUS.pack(status, interface,
                                                                  data[0] if data else 0)))

    def _reset(self, packet: Packet) -> None:
        """A bus reset and enumeration in the simulation, unless the device is still as one
        leaves it (:attr:`as_reset`): each costs seconds of simulation, and a guest resets the
        port two to three times while it enumerates (Linux's port reset, its second reset
        after the first descriptor read); the request after a redundant reset then waited
        behind it past Linux's 5 s control timeout ("device descriptor read/64, error -110",
        issue 47 item 3). No answer either way: the spec has none for a reset."""
        if self.as_reset:
            log.info("usbredir: reset of a device as a reset leaves it: nothing to do")
            return
        started = time.monotonic()
        if self.platform.bus_reset():
            self.as_reset = True
            self._after_bus_reset()
            log.info("usbredir: bus reset and enumeration in %.2f s", time.monotonic() - started)
        else:
            # A platform without a port reset (the guest believes the device reset while its
            # endpoints, streams and task set keep their state: what the VM ladder's first run
            # met when uas reset the SuperSpeed disk, before its simulation had a Hot Reset).
            log.warning("usbredir: the guest reset the device, but %s cannot reset its bus: "
                        "the device keeps its state", self.platform.name)

    def _note_effect(self, packet: Packet) -> None:
        """Whether ``packet`` leaves the device as a reset left it: only standard requests
        that read (descriptors, status, configuration, alternate setting) do."""
        if packet.kind in _READS_ONLY:
            return
        if packet.kind == PacketType.CONTROL_PACKET and packet.fields:
            _, request, request_type, *_ = packet.fields
            if request_type & 0xE0 == 0x80 and request in _STANDARD_READS:
                return
        self.as_reset = False

    def _standard(self, request_type: int, request: int, value: int, index: int,
                  length_or_data: int | bytes = b"") -> tuple[Status, bytes]:
        # Each request with its wall time: a guest's kernel gives one 5 s (Linux's control
        # timeout), so the log shows where an enumeration's time goes.
        started = time.monotonic()
        status, data = Status.SUCCESS, b""
        try:
            data = self.platform.control(request_type, request, value, index, length_or_data)
        except DeviceGone:
            raise
        except TransportError as exc:
            log.info("usbredir: request %#04x: %s", request, exc)
            status = status_of(exc)
        log.info("usbredir: control %02x %02x %04x %04x: %s in %.3f s", request_type, request,
                 value, index, status.name, time.monotonic() - started)
        return status, data

    def _control(self, packet: Packet) -> None:
        endpoint, request, request_type, _, value, index, length = packet.fields
        incoming = bool(request_type & 0x80)
        status, data = self._standard(request_type, request, value, index,
                                      length if incoming else packet.data)
        moved = len(data) if incoming else (len(packet.data) if status == Status.SUCCESS else 0)
        if self._take_cancelled(packet.id):
            status = Status.CANCELLED
        self._answered(packet.id)
        self._send(self.negotiated.encode(
            PacketType.CONTROL_PACKET, packet.id,
            CONTROL.pack(endpoint, request, request_type, status, value, index, moved), data))
