"""The busprobe USB 2.0 high-speed device: always-ready bulk IN and OUT, pattern, telemetry."""

from amaranth import DomainRenamer, Elaboratable, Module
from luna.gateware.usb.usb2.device import USBDevice

from ..common.checker import PatternChecker
from .descriptors import build_descriptors
from .in_endpoint import PatternInEndpoint
from .out_endpoint import SinkOutEndpoint
from .request_handler import ProbeRequestHandler
from .telemetry import Usb2Telemetry

__all__ = ["Usb2ProbeDevice", "usb_device"]


def usb_device(*, ulpi, handle_clocking):
    """LUNA's ``USBDevice`` on a ULPI bus, with every domain it uses mapped to ``usb``.

    Upstream work-around (luna-usb 0.2.3): ``StreamSerializer`` and the GET_DESCRIPTOR handlers
    write ``m.d.sync`` whatever domain they are given, so a design with only the 60 MHz ``usb``
    domain would grow a second, undriven ``sync`` clock. Renaming ``sync`` to ``usb`` here keeps
    every flip-flop on the ULPI clock.
    """
    device = USBDevice(bus=ulpi, handle_clocking=handle_clocking)
    return device, DomainRenamer({"sync": "usb"})(device)


class Usb2ProbeDevice(Elaboratable):
    """USB 2.0 HS bulk device that is never the bottleneck (issue 2).

    - EP0: LUNA standard requests + :class:`ProbeRequestHandler` (busprobe vendor requests).
    - EP1 IN (0x81): :class:`PatternInEndpoint`, a double-buffered pattern source that never NAKs.
    - EP2 OUT (0x02): :class:`SinkOutEndpoint` + :class:`PatternChecker`, ACKs back-to-back packets.
    - :class:`Usb2Telemetry`: what the host did, in protocol order.

    Everything runs in the ``usb`` domain (60 MHz from the PHY); the board or simulation top
    provides that domain.

    Attributes
    ----------
    usb: USBDevice
        LUNA's device core (for board hooks and debugging).

    Parameters
    ----------
    ulpi: ULPI bus
        Resource-style bus (``data.i/.o/.oe``, ``dir.i``, ``nxt.i``, ``stp.o``, ``rst.o``, optional
        ``clk``), e.g. ``platform.request("target_phy")`` or :func:`~.ulpi.ulpi_bus`.
    handle_clocking: bool
        Let LUNA drive the ``usb`` clock from ``ulpi.clk`` (False: the caller provides it).
    out_buffer_packets: int
        OUT buffer size in packets.
    """

    def __init__(self, *, ulpi, handle_clocking=False, out_buffer_packets=4):
        self.usb, self._usb_renamed = usb_device(ulpi=ulpi, handle_clocking=handle_clocking)
        self.control = self.usb.add_standard_control_endpoint(build_descriptors())
        self.requests = ProbeRequestHandler()
        self.control.add_request_handler(self.requests)
        self.ep_in = PatternInEndpoint()
        self.ep_out = SinkOutEndpoint(buffer_packets=out_buffer_packets)
        self.usb.add_endpoint(self.ep_in)
        self.usb.add_endpoint(self.ep_out)
        self.checker = PatternChecker(domain="usb")
        self.telemetry = Usb2Telemetry()

    def elaborate(self, platform):
        m = Module()
        m.submodules.usb = self._usb_renamed
        m.submodules.checker = checker = self.checker
        m.submodules.telemetry = telemetry = self.telemetry
        usb, requests, ep_in, ep_out = self.usb, self.requests, self.ep_in, self.ep_out

        # Data toggles restart at DATA0 after a bus reset and after SET_CONFIGURATION [9.4.5].
        reset_toggle = usb.reset_detected | self.control.interface.config_changed

        m.d.comb += [
            usb.connect.eq(1),
            usb.full_speed_only.eq(0),
            usb.low_speed_only.eq(0),

            ep_in.pattern.eq(requests.pattern),
            ep_in.restart.eq(requests.set_pattern),
            ep_in.reframe.eq(requests.set_in_transfer),
            ep_in.transfer_length.eq(requests.in_transfer_length),
            ep_in.zlp.eq(requests.in_zlp),
            ep_in.reset_toggle.eq(reset_toggle),
            ep_out.reset_toggle.eq(reset_toggle),

            checker.pattern.eq(requests.pattern),
            checker.restart.eq(requests.set_pattern),
            checker.clear.eq(requests.clear_telemetry),
            checker.stream.valid.eq(ep_out.stream.valid),
            checker.stream.payload.eq(ep_out.stream.payload),

            telemetry.clear.eq(requests.clear_telemetry),
            telemetry.sof.eq(usb.sof_detected),
            telemetry.ping.eq(ep_out.ping),
            telemetry.nyet.eq(ep_out.nyet),
            telemetry.pattern_errors.eq(checker.errors),
            telemetry.first_error_offset.eq(checker.first_error_offset),
            requests.telemetry.eq(telemetry.words),
        ]
        for endpoint, traffic in ((ep_in, telemetry.ep_in), (ep_out, telemetry.ep_out)):
            m.d.comb += [
                traffic.token.eq(endpoint.token),
                traffic.nak.eq(endpoint.nak),
                traffic.acked.eq(endpoint.acked),
                traffic.acked_length.eq(endpoint.acked_length),
            ]
        m.d.comb += [
            telemetry.ep_in.packet_start.eq(ep_in.packet_start),
            telemetry.ep_out.packet_start.eq(ep_out.token),
        ]
        return m
