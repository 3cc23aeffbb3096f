"""USB descriptors of the busprobe SuperSpeed device, from :mod:`busprobe.protocol.usb3`."""

from busprobe.protocol import uas, usb3
from busprobe.protocol.streams import MAX_STREAMS_EXPONENT
from usb_protocol.emitters.descriptors.standard import SuperSpeedDeviceDescriptorCollection
from usb_protocol.types import USBTransferType

__all__ = ["build_descriptors", "CONTROL_MAX_PACKET_EXPONENT", "VENDOR_INTERFACE"]

#: bMaxPacketSize0 of a SuperSpeed device: 2**9 = 512 bytes (USB 3.2 §9.6.1).
CONTROL_MAX_PACKET_EXPONENT = (usb3.CONTROL_MAX_PACKET_SIZE - 1).bit_length()


#: The probe's interface: vendor specific (class, subclass, protocol).
VENDOR_INTERFACE = (0xFF, 0x00, 0x00)


def _uas_alternate(c):
    """Interface 0 alternate 1: USB Attached SCSI's four pipes, each endpoint followed by its
    SuperSpeed companion and its Pipe Usage descriptor (UASP 1.0 §5.3.3.1); the data pipes on
    alternate 0's endpoints. The status and data pipes offer bulk streams (MaxStreams
    :data:`~busprobe.protocol.streams.MAX_STREAMS_EXPONENT`: stream ID = tag), the command pipe
    none."""
    with c.InterfaceDescriptor() as i:
        i.bInterfaceNumber = 0
        i.bAlternateSetting = uas.UAS_ALTERNATE
        i.bInterfaceClass, i.bInterfaceSubclass, i.bInterfaceProtocol = uas.UAS_INTERFACE
        for address, pipe in uas.PIPE_ENDPOINTS:
            with i.EndpointDescriptor() as e:
                e.bEndpointAddress = address
                e.bmAttributes = USBTransferType.BULK
                e.wMaxPacketSize = usb3.MAX_PACKET_SIZE
                e.bInterval = 0
                with e.SuperSpeedCompanion() as companion:
                    companion.bMaxBurst = usb3.MAX_BURST
                    companion.bmAttributes = (MAX_STREAMS_EXPONENT
                                              if address in uas.STREAM_PIPES else 0)
                e.add_subordinate_descriptor(uas.pipe_usage(pipe))


def build_descriptors(*, product: str = usb3.PRODUCT, interface: tuple[int, int, int] =
                      VENDOR_INTERFACE, max_streams_exponent: int = 0, uas_pipes: bool = False
                      ) -> SuperSpeedDeviceDescriptorCollection:
    """Device, configuration (bulk IN and OUT with their SuperSpeed endpoint companions) and BOS.

    The BOS carries the SuperSpeed USB device capability (and the USB 2.0 extension every
    SuperSpeed device must have, USB 3.2 §9.6.2); the companions advertise
    :data:`~busprobe.protocol.usb3.MAX_BURST` and MaxStreams ``max_streams_exponent`` (2**n
    streams; 0: none, USB 3.2 §9.6.7). ``product`` and ``interface``
    (class, subclass, protocol) name a personality: the null disk is mass storage, SCSI, BOT
    (:data:`busprobe.protocol.bot.BOT_INTERFACE`); ``uas_pipes`` adds its alternate 1, UAS.
    """
    descriptors = SuperSpeedDeviceDescriptorCollection()
    with descriptors.DeviceDescriptor() as d:
        d.bcdUSB = 3.00
        d.idVendor = usb3.VID
        d.idProduct = usb3.PID
        d.iManufacturer = usb3.MANUFACTURER
        d.iProduct = product
        d.iSerialNumber = usb3.SERIAL
        d.bMaxPacketSize0 = CONTROL_MAX_PACKET_EXPONENT
        d.bNumConfigurations = 1

    with descriptors.ConfigurationDescriptor() as c:
        c.bmAttributes = 0x80  # bus powered, no remote wakeup
        c.bMaxPower = 12  # × 8 mA at SuperSpeed = 96 mA
        with c.InterfaceDescriptor() as i:
            i.bInterfaceNumber = 0
            i.bInterfaceClass, i.bInterfaceSubclass, i.bInterfaceProtocol = interface
            for address in (usb3.EP_IN, usb3.EP_OUT):
                with i.EndpointDescriptor() as e:
                    e.bEndpointAddress = address
                    e.bmAttributes = USBTransferType.BULK
                    e.wMaxPacketSize = usb3.MAX_PACKET_SIZE
                    e.bInterval = 0
                    with e.SuperSpeedCompanion() as companion:
                        companion.bMaxBurst = usb3.MAX_BURST
                        companion.bmAttributes = max_streams_exponent  # bits 4:0 MaxStreams
        if uas_pipes:
            _uas_alternate(c)

    with descriptors.BOSDescriptor() as bos:
        with bos.USB2Extension() as usb2_extension:
            usb2_extension.bmAttributes = 0  # no LPM
        with bos.SuperSpeedUSBDeviceCapability() as capability:
            capability.wSpeedsSupported = 0b1000  # SuperSpeed only: this device has no USB 2.0
            capability.bFunctionalitySupport = 3  # lowest speed with full function: SuperSpeed
            capability.bU1DevExitLat = 0
            capability.wU2DevExitLat = 0
    return descriptors
