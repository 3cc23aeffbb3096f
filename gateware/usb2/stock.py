"""Stock-LUNA reference device: what LUNA's own stream endpoints achieve, for comparison."""

from amaranth import Elaboratable, Module
from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern
from luna.gateware.usb.usb2.endpoints.stream import USBStreamInEndpoint, USBStreamOutEndpoint

from ..common.pattern import PatternByteSource
from .descriptors import build_descriptors
from .device import usb_device

__all__ = ["StockUsb2Device"]


class StockUsb2Device(Elaboratable):
    """Same descriptors and VID:PID as the busprobe device, built only from LUNA's stock parts.

    ``USBStreamInEndpoint`` and ``USBStreamOutEndpoint`` at their default buffer sizes, no vendor
    requests, no telemetry. The IN stream is the COUNTER pattern from power-up (a byte source in
    the ``usb`` domain, so the host's ``PatternStream(COUNTER)`` check passes); OUT data is
    drained and dropped. The benchmark measures the busprobe device's gain against this one.

    Parameters
    ----------
    ulpi: ULPI bus
        As for :class:`~busprobe.gateware.usb2.device.Usb2ProbeDevice`.
    handle_clocking: bool
        Let LUNA drive the ``usb`` clock from ``ulpi.clk``.
    """

    def __init__(self, *, ulpi, handle_clocking=False):
        self.usb, self._usb_renamed = usb_device(ulpi=ulpi, handle_clocking=handle_clocking)
        self.usb.add_standard_control_endpoint(build_descriptors(other_speed=False))
        self.ep_in = USBStreamInEndpoint(endpoint_number=usb2.EP_IN & 0x7F,
                                         max_packet_size=usb2.MAX_PACKET_SIZE)
        self.ep_out = USBStreamOutEndpoint(endpoint_number=usb2.EP_OUT,
                                           max_packet_size=usb2.MAX_PACKET_SIZE)
        self.usb.add_endpoint(self.ep_in)
        self.usb.add_endpoint(self.ep_out)

    def elaborate(self, platform):
        m = Module()
        m.submodules.usb = self._usb_renamed
        m.submodules.source = source = PatternByteSource(domain="usb")
        m.d.comb += [
            self.usb.connect.eq(1),
            source.pattern.eq(Pattern.COUNTER),
            self.ep_in.stream.valid.eq(1),
            self.ep_in.stream.payload.eq(source.stream.payload),
            source.stream.ready.eq(self.ep_in.stream.ready),
            self.ep_out.stream.ready.eq(1),
        ]
        return m
