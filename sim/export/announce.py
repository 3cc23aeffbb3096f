"""What a usbredir device server tells the guest before the first descriptor (usbredir spec):
``interface_info`` and ``ep_info``, then ``device_connect`` with the device's speed.

The facts come from the device's own descriptors (:class:`~.device_info.DeviceInfo`).
"""

from __future__ import annotations

from .device_info import DeviceInfo
from .usbredir_wire import (
    ENDPOINT_SLOTS,
    INTERFACE_INFO,
    Cap,
    Negotiated,
    PacketType,
    Speed,
    TransferType,
    endpoint_slot,
)

__all__ = ["announcement", "interfaces_announcement"]


def _control_packet_size(info: DeviceInfo, speed: Speed) -> int:
    """Endpoint 0's packet size: bMaxPacketSize0 is the size below SuperSpeed and its exponent
    at SuperSpeed (9: 512 bytes, USB 3.2 §9.6.1)."""
    return 1 << info.max_packet_size0 if speed == Speed.SUPER else info.max_packet_size0


def interfaces_announcement(negotiated: Negotiated, info: DeviceInfo,
                            speed: Speed) -> list[bytes]:
    """``interface_info`` and ``ep_info`` (sent again after every SET_CONFIGURATION)."""
    columns = [bytearray(ENDPOINT_SLOTS) for _ in range(4)]
    for slot, interface in enumerate(info.interfaces[:ENDPOINT_SLOTS]):
        for column, value in zip(columns, (interface.number, interface.cls,
                                           interface.subclass, interface.protocol), strict=True):
            column[slot] = value
    interfaces_info = negotiated.encode(PacketType.INTERFACE_INFO, 0, INTERFACE_INFO.pack(
        len(info.interfaces), *map(bytes, columns)))
    types = [TransferType.INVALID] * ENDPOINT_SLOTS
    intervals, interfaces, packets, streams = ([0] * ENDPOINT_SLOTS for _ in range(4))
    for address in (0x00, 0x80):
        types[endpoint_slot(address)] = TransferType.CONTROL
        packets[endpoint_slot(address)] = _control_packet_size(info, speed)
    for endpoint in info.endpoints:
        slot = endpoint_slot(endpoint.address)
        types[slot], intervals[slot] = endpoint.transfer_type, endpoint.interval
        interfaces[slot], packets[slot] = endpoint.interface, endpoint.max_packet_size
        streams[slot] = endpoint.max_streams
    return [interfaces_info, negotiated.ep_info(types, intervals, interfaces, packets, streams)]


def announcement(negotiated: Negotiated, info: DeviceInfo, speed: Speed) -> list[bytes]:
    """Everything the guest learns first, in the spec's order: the interfaces and endpoints,
    then ``device_connect``."""
    fields = [speed, info.cls, info.subclass, info.protocol, info.vendor, info.product]
    if negotiated.has(Cap.CONNECT_DEVICE_VERSION):
        fields.append(info.bcd_device)
    connect = negotiated.encode(PacketType.DEVICE_CONNECT, 0, negotiated.connect.pack(*fields))
    return [*interfaces_announcement(negotiated, info, speed), connect]
