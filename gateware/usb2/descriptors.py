"""USB descriptors of the busprobe USB 2.0 device, from :mod:`busprobe.protocol.usb2`."""

from busprobe.protocol import usb2
from usb_protocol.emitters import DeviceDescriptorCollection
from usb_protocol.types import USBTransferType

__all__ = ["build_descriptors", "CONTROL_MAX_PACKET_SIZE"]

#: EP0 max packet size (64 is the only value allowed at high speed).
CONTROL_MAX_PACKET_SIZE = 64


def build_descriptors(*, product: str = usb2.PRODUCT) -> DeviceDescriptorCollection:
    """Device descriptor and one configuration: one interface, bulk EP_IN and EP_OUT of 512 bytes.

    Parameters
    ----------
    product : str
        Product string (the stock reference device says so in its name).
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

    with descriptors.ConfigurationDescriptor() as c:
        c.bmAttributes = 0x80  # bus powered, no remote wakeup
        c.bMaxPower = 50  # 100 mA
        with c.InterfaceDescriptor() as i:
            i.bInterfaceNumber = 0
            i.bInterfaceClass = 0xFF  # vendor specific
            for address in (usb2.EP_IN, usb2.EP_OUT):
                with i.EndpointDescriptor() as e:
                    e.bEndpointAddress = address
                    e.bmAttributes = USBTransferType.BULK
                    e.wMaxPacketSize = usb2.MAX_PACKET_SIZE
                    e.bInterval = 0  # bulk OUT: the device never NAKs, no PING hint
    return descriptors
