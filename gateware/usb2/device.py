"""The busprobe USB 2.0 high-speed device: always-ready bulk IN and OUT, pattern, telemetry."""

from amaranth import DomainRenamer, Elaboratable, Module, Signal
from amaranth.lib import wiring
from busprobe.protocol import usb2
from luna.gateware.usb.usb2.control import USBControlEndpoint
from luna.gateware.usb.usb2.device import USBDevice

from ..common.data_path import BulkDataPath
from .control_endpoint import Endpoint0Guard
from .control_replies import ControlReplies
from .in_endpoint import StreamInEndpoint
from .out_endpoint import StreamOutEndpoint
from .request_handler import ProbeRequestHandler
from .rx_monitor import RxPacketMonitor
from .telemetry import Usb2Telemetry

__all__ = ["Usb2ProbeDevice", "Usb2FullProbeDevice", "usb_device"]


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

    - EP0: LUNA's control endpoint with one handler, :class:`ProbeRequestHandler`: the standard
      requests and the busprobe vendor requests, every data stage read from the telemetry's
      snapshot RAM.
    - EP1 IN (0x81): :class:`StreamInEndpoint`, a block-RAM ring of packets filled from a
      packet stream; never NAKs a source that keeps up.
    - EP2 OUT (0x02): :class:`StreamOutEndpoint`, ACKs back-to-back packets into a packet stream.
    - :class:`~busprobe.gateware.common.data_path.BulkDataPath` (a byte a beat): what those
      streams carry (the pattern and its checker, or OUT looped back to IN), as SET_DATA_MODE
      selects.
    - :class:`RxPacketMonitor`: every packet received, and the ones dropped (bad PID, malformed,
      bad CRC, not for this device).
    - :class:`Usb2Telemetry`: what the host did, in protocol order, in block RAM, with the
      snapshot GET_TELEMETRY reads.

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
    in_buffer_packets: int
        IN ring size in packets (a power of two).
    features: usb2.Feature
        Optional parts (the BOT framer, the packet-shape and receive-drop counters); the
        default build has none, to stay lean, and GET_INFO says which a bitstream has.
    """

    def __init__(self, *, ulpi, handle_clocking=False, out_buffer_packets=4, in_buffer_packets=4,
                 features=usb2.NO_FEATURES):
        self.features = features = usb2.Feature(features)
        self.usb, self._usb_renamed = usb_device(ulpi=ulpi, handle_clocking=handle_clocking)
        # What USBDevice.add_standard_control_endpoint does, with the endpoint behind a guard
        # and one request handler of ours for every request, standard and vendor.
        self.control = USBControlEndpoint(utmi=self.usb.utmi)
        self.usb.add_endpoint(Endpoint0Guard(self.control))
        replies = self._control_replies(features)
        self.requests = self._request_handler(features, replies)
        self.control.add_request_handler(self.requests)
        self.ep_in = StreamInEndpoint(buffer_packets=in_buffer_packets)
        self.ep_out = StreamOutEndpoint(buffer_packets=out_buffer_packets)
        self.usb.add_endpoint(self.ep_in)
        self.usb.add_endpoint(self.ep_out)
        self.data_path = self._data_path(features)
        self.rx_monitor = RxPacketMonitor() if features & usb2.Feature.RX_DROPS else None
        self.telemetry = Usb2Telemetry(features=features, replies=replies)

    # What a personality of the device (the null disk) replaces: its descriptors and EP0
    # answers, its request handler, what its bulk endpoints carry.
    def _control_replies(self, features):
        return ControlReplies(features=features)

    def _request_handler(self, features, replies):
        return ProbeRequestHandler(features=features, replies=replies)

    def _data_path(self, features):
        return BulkDataPath(width=1, domain="usb", max_packet_size=usb2.MAX_PACKET_SIZE,
                            mod63=True, bot=bool(features & usb2.Feature.BOT))

    def elaborate(self, platform):
        m = Module()
        m.submodules.usb = self._usb_renamed
        m.submodules.data_path = data_path = self.data_path
        m.submodules.telemetry = telemetry = self.telemetry
        usb, requests, ep_in, ep_out = self.usb, self.requests, self.ep_in, self.ep_out

        # Data toggles restart at DATA0 after a bus reset, SET_CONFIGURATION [9.4.5] and
        # SET_INTERFACE [9.1.1.5].
        reset_toggle = (usb.reset_detected | self.control.interface.config_changed
                        | requests.set_interface)

        m.d.comb += [
            usb.connect.eq(1),
            usb.full_speed_only.eq(0),
            usb.low_speed_only.eq(0),

            # A new pattern or data mode starts both directions afresh, nothing left buffered.
            data_path.mode.eq(requests.data_mode),
            data_path.pattern.eq(requests.pattern),
            data_path.restart.eq(requests.set_pattern | requests.set_data_mode),
            data_path.clear.eq(requests.clear_telemetry),
            ep_in.flush.eq(requests.set_pattern | requests.set_data_mode),
            ep_out.flush.eq(requests.set_pattern | requests.set_data_mode),
            ep_in.reframe.eq(requests.set_in_transfer),
            ep_in.cut_through.eq(~data_path.in_framed),
            ep_in.transfer_length.eq(requests.in_transfer_length),
            ep_in.zlp.eq(requests.in_zlp),
            ep_in.reset_toggle.eq(reset_toggle),
            ep_out.reset_toggle.eq(reset_toggle),
            ep_in.halt.eq(requests.halt_in),
            ep_out.halt.eq(requests.halt_out),

            telemetry.clear.eq(requests.clear_telemetry),
            telemetry.sof.eq(usb.sof_detected),
            telemetry.ping.eq(ep_out.ping),
            telemetry.nyet.eq(ep_out.nyet),
            telemetry.out_duplicate.eq(ep_out.duplicate),
            telemetry.pattern_errors.eq(data_path.pattern_errors),
            telemetry.first_error_offset.eq(data_path.first_error_offset),
            telemetry.capture.eq(requests.capture_telemetry),
            telemetry.read_address.eq(requests.read_address),
            requests.read_data.eq(telemetry.read_data),
            requests.snapshot_ready.eq(telemetry.ready),
        ]
        if self.rx_monitor is not None:
            m.submodules.rx_monitor = rx_monitor = self.rx_monitor
            m.d.comb += [
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
            ]
        wiring.connect(m, data_path.to_in, ep_in.stream)
        wiring.connect(m, ep_out.stream, data_path.from_out)
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


class Usb2FullProbeDevice(Usb2ProbeDevice):
    """:class:`Usb2ProbeDevice` with every optional part (:data:`~busprobe.protocol.usb2.
    ALL_FEATURES`): the BOT framer, the packet-shape and the receive-drop counters. It is the
    ``usb2-full`` design; the default ``usb2`` leaves them out to stay lean."""

    def __init__(self, **kwargs):
        super().__init__(features=usb2.ALL_FEATURES, **kwargs)
