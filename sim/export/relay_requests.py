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


class RequestRelay:
    """The control side of an export.

    Attributes
    ----------
    settings : dict
        The alternate setting in force per interface number (absent: 0), as the guest's
        SET_INTERFACEs left them.
    """

    platform: Any
    negotiated: Negotiated
    info: DeviceInfo | None
    speed: Speed
    settings: dict[int, int]

    def _send(self, data: bytes) -> None: ...
    def _answered(self, packet_id: int) -> None: ...
    def _take_cancelled(self, packet_id: int) -> bool: ...

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
        self.platform.bus_reset()  # no answer: the spec has none for a reset

    def _standard(self, request_type: int, request: int, value: int, index: int,
                  length_or_data: int | bytes = b"") -> tuple[Status, bytes]:
        try:
            return Status.SUCCESS, self.platform.control(request_type, request, value, index,
                                                         length_or_data)
        except DeviceGone:
            raise
        except TransportError as exc:
            log.info("usbredir: request %#04x: %s", request, exc)
            return status_of(exc), b""

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
