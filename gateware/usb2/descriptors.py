"""USB descriptors of the busprobe USB 2.0 device, from :mod:`busprobe.protocol.usb2`."""

import struct

from busprobe.protocol import uas, usb2
from usb_protocol.emitters import DeviceDescriptorCollection
from usb_protocol.types import DescriptorTypes, USBTransferType

__all__ = ["build_descriptors", "CONTROL_MAX_PACKET_SIZE", "VENDOR_INTERFACE"]

#: EP0 max packet size (64 is the only value allowed at high speed).
CONTROL_MAX_PACKET_SIZE = usb2.CONTROL_MAX_PACKET_SIZE
#: The device qualifier (USB 2.0 §9.6.2, Table 9-9): bLength, bDescriptorType, bcdUSB,
#: class, subclass, protocol, bMaxPacketSize0, bNumConfigurations, bReserved. Packed here:
#: usb_protocol's ``DeviceQualifierDescriptor`` (0.9) gives it a bLength of 9, one byte short.
_QUALIFIER = struct.Struct("<BBHBBBBBB")


#: bInterfaceClass, bInterfaceSubClass, bInterfaceProtocol of the probe's interface.
VENDOR_INTERFACE = (0xFF, 0xFF, 0xFF)


def _configuration(descriptors, max_packet_size, interface=VENDOR_INTERFACE,
                   uas_pipes=False):
    """Add the one configuration, its bulk endpoints ``max_packet_size`` bytes long."""
    with descriptors.ConfigurationDescriptor() as c:
        c.bmAttributes = 0x80  # bus powered, no remote wakeup
        c.bMaxPower = 50  # 100 mA
        with c.InterfaceDescriptor() as i:
            i.bInterfaceNumber = 0
            i.bInterfaceClass, i.bInterfaceSubclass, i.bInterfaceProtocol = interface
            for address in (usb2.EP_IN, usb2.EP_OUT):
                with i.EndpointDescriptor() as e:
                    e.bEndpointAddress = address
                    e.bmAttributes = USBTransferType.BULK
                    e.wMaxPacketSize = max_packet_size
                    e.bInterval = 0  # bulk OUT: the device never NAKs, no PING hint
        if uas_pipes:
            _uas_alternate(c, max_packet_size)


def _uas_alternate(c, max_packet_size):
    """Interface 0 alternate 1: USB Attached SCSI's four pipes, each endpoint followed by its
    Pipe Usage descriptor (UASP 1.0 §5.3.3.1), the data pipes on alternate 0's endpoints."""
    with c.InterfaceDescriptor() as i:
        i.bInterfaceNumber = 0
        i.bAlternateSetting = uas.UAS_ALTERNATE
        i.bInterfaceClass, i.bInterfaceSubclass, i.bInterfaceProtocol = uas.UAS_INTERFACE
        for address, pipe in uas.PIPE_ENDPOINTS:
            with i.EndpointDescriptor() as e:
                e.bEndpointAddress = address
                e.bmAttributes = USBTransferType.BULK
                e.wMaxPacketSize = max_packet_size
                e.bInterval = 0
                e.add_subordinate_descriptor(uas.pipe_usage(pipe))


def build_descriptors(*, product: str = usb2.PRODUCT, other_speed: bool = True,
                      interface: tuple[int, int, int] = VENDOR_INTERFACE,
                      uas_pipes: bool = False) -> DeviceDescriptorCollection:
    """Device descriptor and one configuration: one interface, bulk EP_IN and EP_OUT of 512 bytes;
    the device qualifier and the other-speed configuration a high-speed device must have (USB
    2.0 §9.6.2, §9.6.4: what changes at full speed, there the 64-byte bulk packets).

    Parameters
    ----------
    product : str
        Product string (the stock reference device says so in its name).
    other_speed : bool
        Add the qualifier and the other-speed configuration (the stock reference device,
        LUNA's own, is built without them, as it was measured: ``usb2-stock``).
    interface : (class, subclass, protocol)
        What interface 0 alternate 0 says it is.
    uas_pipes : bool
        Add interface 0 alternate 1, USB Attached SCSI (the null disk's).
    """
    descriptors = DeviceDescriptorCollection()
    with descriptors.DeviceDescriptor() as d:
        d.bcdUSB = 2.00
        d.idVendor = usb2.VID
        d.idProduct = usb2.PID
        d.iManufacturer = usb2.MANUFACTURER
        d.iProduct = product
        d.iSerialNumber = usb2.SERIAL
        d.bMaxPacketSize0 = CONTROL_MAX_PACKET_SIZE
        d.bNumConfigurations = 1
    _configuration(descriptors, usb2.MAX_PACKET_SIZE, interface, uas_pipes)
    if other_speed:
        device = descriptors.get_descriptor_bytes(DescriptorTypes.DEVICE)
        descriptors.add_descriptor(_QUALIFIER.pack(
            _QUALIFIER.size, DescriptorTypes.DEVICE_QUALIFIER, *struct.unpack_from("<H", device, 2),
            *device[4:8], device[17], 0))
        # The same configuration at full speed, as an OTHER_SPEED_CONFIGURATION (its type is
        # the only other difference, §9.6.4).
        full_speed = DeviceDescriptorCollection(automatic_language_descriptor=False)
        _configuration(full_speed, usb2.FULL_SPEED_MAX_PACKET_SIZE, interface, uas_pipes)
        raw = bytearray(full_speed.get_descriptor_bytes(DescriptorTypes.CONFIGURATION))
        raw[1] = DescriptorTypes.OTHER_SPEED_CONFIGURATION
        descriptors.add_descriptor(bytes(raw),
                                   descriptor_type=DescriptorTypes.OTHER_SPEED_CONFIGURATION)
    return descriptors
