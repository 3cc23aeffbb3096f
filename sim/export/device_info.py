"""What a USB redirection announces about a device, read from the device's own descriptors.

The usbredir device server tells the guest the device's speed, class and ids (``device_connect``),
its interfaces (``interface_info``) and endpoints (``ep_info``) before the guest sees a single
descriptor. Those facts come from the gateware: :func:`read_device_info` reads the device and
configuration descriptors through the platform's endpoint 0 (GET_DESCRIPTOR, USB 2.0 §9.4.3) and
:func:`parse_device_info` walks them (§9.6).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from usb_protocol.types import DescriptorTypes, USBStandardRequests

__all__ = ["DeviceInfo", "Endpoint", "Interface", "read_device_info", "parse_device_info"]

#: ``control(request_type, request, value, index, length_or_data) -> bytes``.
Control = Callable[[int, int, int, int, "int | bytes"], bytes]
_STANDARD_DEVICE_IN = 0x80
_DEVICE = struct.Struct("<BBHBBBBHHHBBBB")  # the 18-byte device descriptor
_CONFIG = struct.Struct("<BBHBBBBB")  # the 9-byte configuration descriptor
_INTERFACE = struct.Struct("<BBBBBBBBB")
_ENDPOINT = struct.Struct("<BBBBHB")
#: The SuperSpeed endpoint companion descriptor's type (USB 3.2 Table 9-6), and bulk's
#: bmAttributes transfer type.
_SUPERSPEED_COMPANION = 0x30
_BULK = 2


@dataclass(frozen=True)
class Interface:
    number: int
    cls: int
    subclass: int
    protocol: int
    alternate: int = 0


@dataclass(frozen=True)
class Endpoint:
    address: int
    transfer_type: int  # bmAttributes bits 1:0
    interval: int
    interface: int
    max_packet_size: int  # wMaxPacketSize as the descriptor has it
    alternate: int = 0
    max_streams: int = 0  # bulk streams its SuperSpeed companion offers (2**MaxStreams, or 0)


@dataclass
class DeviceInfo:
    """The device as its descriptors describe it (configuration ``configuration``).

    ``interfaces`` and ``endpoints`` are those of the alternates in force: alternate 0 as
    parsed, another after :meth:`in_force`; ``alternates`` has every setting's.
    """

    vendor: int
    product: int
    bcd_device: int
    cls: int
    subclass: int
    protocol: int
    max_packet_size0: int
    configuration: int
    interfaces: list[Interface] = field(default_factory=list)
    endpoints: list[Endpoint] = field(default_factory=list)
    alternates: list[Interface | Endpoint] = field(default_factory=list)

    def in_force(self, settings: Mapping[int, int]) -> DeviceInfo:
        """The same device with interface ``n`` in alternate ``settings.get(n, 0)``."""
        def chosen(item: Interface | Endpoint) -> bool:
            number = item.number if isinstance(item, Interface) else item.interface
            return item.alternate == settings.get(number, 0)
        return replace(self, interfaces=[i for i in self.alternates
                                         if isinstance(i, Interface) and chosen(i)],
                       endpoints=[e for e in self.alternates
                                  if isinstance(e, Endpoint) and chosen(e)])


def _get_descriptor(control: Control, kind: int, length: int) -> bytes:
    return control(_STANDARD_DEVICE_IN, USBStandardRequests.GET_DESCRIPTOR, kind << 8, 0, length)


def read_device_info(control: Control) -> DeviceInfo:
    """Read the device and first configuration descriptors through ``control``."""
    device = _get_descriptor(control, DescriptorTypes.DEVICE, _DEVICE.size)
    head = _get_descriptor(control, DescriptorTypes.CONFIGURATION, _CONFIG.size)
    total = struct.unpack_from("<H", head, 2)[0]
    return parse_device_info(device, _get_descriptor(control, DescriptorTypes.CONFIGURATION,
                                                     total))


def parse_device_info(device: bytes, configuration: bytes) -> DeviceInfo:
    """Decode a device descriptor and a whole configuration; ``ValueError`` if malformed."""
    if len(device) < _DEVICE.size or device[1] != DescriptorTypes.DEVICE:
        raise ValueError(f"not a device descriptor: {device.hex()}")
    (_, _, _, cls, subclass, protocol, mps0, vendor, product, bcd_device,
     *_) = _DEVICE.unpack_from(device)
    if len(configuration) < _CONFIG.size or configuration[1] != DescriptorTypes.CONFIGURATION:
        raise ValueError(f"not a configuration descriptor: {configuration[:9].hex()}")
    info = DeviceInfo(vendor, product, bcd_device, cls, subclass, protocol, mps0,
                      configuration[5])
    offset, interface, alt = 0, -1, 0
    while offset + 2 <= len(configuration):
        length, kind = configuration[offset], configuration[offset + 1]
        if length < 2 or offset + length > len(configuration):
            raise ValueError(f"configuration descriptor broken at byte {offset}")
        if kind == DescriptorTypes.INTERFACE and length >= _INTERFACE.size:
            _, _, interface, alt, _, icls, isub, iproto, _ = _INTERFACE.unpack_from(
                configuration, offset)
            info.alternates.append(Interface(interface, icls, isub, iproto, alt))
        elif kind == DescriptorTypes.ENDPOINT and length >= _ENDPOINT.size:
            _, _, address, attributes, packet, interval = _ENDPOINT.unpack_from(configuration,
                                                                                offset)
            info.alternates.append(Endpoint(address, attributes & 0x3, interval, interface,
                                            packet, alt))
        elif (kind == _SUPERSPEED_COMPANION and length >= 4 and info.alternates
              and isinstance(info.alternates[-1], Endpoint)
              and info.alternates[-1].transfer_type == _BULK):
            # bmAttributes bits 4:0 of a bulk endpoint's companion: MaxStreams, 2**n streams
            # (USB 3.2 §9.6.7).
            exponent = configuration[offset + 3] & 0x1F
            info.alternates[-1] = replace(info.alternates[-1],
                                          max_streams=1 << exponent if exponent else 0)
        offset += length
    return info.in_force({})
