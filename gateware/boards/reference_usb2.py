"""Stand-in USB 2.0 HS device built only from LUNA parts, for the board flow.

Used by ``--design usb2-stock`` until ``busprobe.gateware.usb2.stock`` exists (it is written in
parallel); then the design registry switches to it and this file goes. Bulk IN (a byte counter,
always valid) and bulk OUT (always ready, data dropped) with the IDs of
:mod:`busprobe.protocol.usb2`.
"""

from __future__ import annotations

from amaranth import Elaboratable, Module
from busprobe.protocol import usb2
from luna.gateware.usb.usb2.device import USBDevice
from luna.gateware.usb.usb2.endpoints.stream import USBStreamInEndpoint, USBStreamOutEndpoint
from usb_protocol.emitters import DeviceDescriptorCollection
from usb_protocol.types import USBTransferType

__all__ = ["ReferenceUsb2Device"]


class ReferenceUsb2Device(Elaboratable):
    """Minimal LUNA high-speed bulk IN + OUT device.

    Parameters
    ----------
    ulpi : ULPI bus
        The PHY resource (``.i``/``.o``/``.oe`` subfields); the device runs in the ``usb`` domain.
    """

    def __init__(self, *, ulpi):
        self.ulpi = ulpi

    @staticmethod
    def descriptors() -> DeviceDescriptorCollection:
        collection = DeviceDescriptorCollection()
        with collection.DeviceDescriptor() as d:
            d.idVendor, d.idProduct = usb2.VID, usb2.PID
            d.iManufacturer, d.iProduct, d.iSerialNumber = (usb2.MANUFACTURER, usb2.PRODUCT,
                                                            usb2.SERIAL)
            d.bNumConfigurations = 1
        with collection.ConfigurationDescriptor() as c:
            with c.InterfaceDescriptor() as i:
                i.bInterfaceNumber = 0
                for address in (usb2.EP_IN, usb2.EP_OUT):
                    with i.EndpointDescriptor() as e:
                        e.bEndpointAddress = address
                        e.bmAttributes = USBTransferType.BULK
                        e.wMaxPacketSize = usb2.MAX_PACKET_SIZE
        return collection

    def elaborate(self, platform):
        m = Module()
        m.submodules.usb = usb = USBDevice(bus=self.ulpi)
        usb.add_standard_control_endpoint(self.descriptors())

        ep_in = USBStreamInEndpoint(endpoint_number=usb2.EP_IN & 0x7F,
                                    max_packet_size=usb2.MAX_PACKET_SIZE)
        ep_out = USBStreamOutEndpoint(endpoint_number=usb2.EP_OUT,
                                      max_packet_size=usb2.MAX_PACKET_SIZE)
        usb.add_endpoint(ep_in)
        usb.add_endpoint(ep_out)
        m.d.comb += [
            usb.connect.eq(1),
            ep_in.stream.valid.eq(1),
            ep_out.stream.ready.eq(1),
        ]
        with m.If(ep_in.stream.ready):
            m.d.usb += ep_in.stream.payload.eq(ep_in.stream.payload + 1)
        return m
