"""The busprobe USB 2.0 high-speed device: always-ready bulk IN and OUT, pattern, telemetry."""

from amaranth import DomainRenamer, Elaboratable, Module, Signal
from luna.gateware.usb.usb2.control import USBControlEndpoint
from luna.gateware.usb.usb2.device import USBDevice

from ..common.checker import PatternChecker
from .control_endpoint import Endpoint0Guard
from .descriptors import build_descriptors
from .in_endpoint import PatternInEndpoint
from .out_endpoint import SinkOutEndpoint
from .request_handler import ProbeRequestHandler
from .rx_monitor import RxPacketMonitor
from .telemetry import Usb2Telemetry

__all__ = ["Usb2ProbeDevice", "usb_device"]


class AddressedUSBDevice(USBDevice):
    """LUNA's ``USBDevice``, with the address it answers to visible outside it.

    Attributes
    ----------
    address: Signal(7), output
        The device address in force (0 until SET_ADDRESS takes effect; LUNA keeps it in a
        signal local to ``elaborate``, so it is read from the token detector it feeds).
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.address = Signal(7)

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.address.eq(m.submodules.token_detector.address)
        return m


def usb_device(*, ulpi, handle_clocking):
    """LUNA's ``USBDevice`` on a ULPI bus, with every domain it uses mapped to ``usb``.

    Upstream work-around (luna-usb 0.2.3): ``StreamSerializer`` and the GET_DESCRIPTOR handlers
    write ``m.d.sync`` whatever domain they are given, so a design with only the 60 MHz ``usb``
    domain would grow a second, undriven ``sync`` clock. Renaming ``sync`` to ``usb`` here keeps
    every flip-flop on the ULPI clock.
    """
    device = AddressedUSBDevice(bus=ulpi, handle_clocking=handle_clocking)
    return device, DomainRenamer({"sync": "usb"})(device)


class Usb2ProbeDevice(Elaboratable):
    """USB 2.0 HS bulk device that is never the bottleneck (issue 2).

    - EP0: LUNA standard requests + :class:`ProbeRequestHandler` (busprobe vendor requests).
    - EP1 IN (0x81): :class:`PatternInEndpoint`, a double-buffered pattern source that never NAKs.
    - EP2 OUT (0x02): :class:`SinkOutEndpoint` + :class:`PatternChecker`, ACKs back-to-back packets.
    - :class:`RxPacketMonitor`: every packet received, and the ones dropped (bad PID, malformed,
      bad CRC, not for this device).
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
        # What USBDevice.add_standard_control_endpoint does, with the endpoint behind a guard.
        self.control = USBControlEndpoint(utmi=self.usb.utmi)
        self.control.add_standard_request_handlers(build_descriptors())
        self.usb.add_endpoint(Endpoint0Guard(self.control))
        self.requests = ProbeRequestHandler()
        self.control.add_request_handler(self.requests)
        self.ep_in = PatternInEndpoint()
        self.ep_out = SinkOutEndpoint(buffer_packets=out_buffer_packets)
        self.usb.add_endpoint(self.ep_in)
        self.usb.add_endpoint(self.ep_out)
        self.checker = PatternChecker(domain="usb")
        self.rx_monitor = RxPacketMonitor()
        self.telemetry = Usb2Telemetry()

    def elaborate(self, platform):
        m = Module()
        m.submodules.usb = self._usb_renamed
        m.submodules.checker = checker = self.checker
        m.submodules.telemetry = telemetry = self.telemetry
        m.submodules.rx_monitor = rx_monitor = self.rx_monitor
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
            rx_monitor.rx_active.eq(usb.utmi.rx_active),
            rx_monitor.rx_valid.eq(usb.utmi.rx_valid),
            rx_monitor.rx_error.eq(usb.utmi.rx_error),
            rx_monitor.rx_data.eq(usb.utmi.rx_data),
            rx_monitor.address.eq(usb.address),
            telemetry.rx.packet.eq(rx_monitor.packet),
            telemetry.rx.bad_pid.eq(rx_monitor.bad_pid),
            telemetry.rx.malformed.eq(rx_monitor.malformed),
            telemetry.rx.crc_error.eq(rx_monitor.crc_error),
            telemetry.rx.foreign.eq(rx_monitor.foreign),
            telemetry.out_duplicate.eq(ep_out.duplicate),
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
