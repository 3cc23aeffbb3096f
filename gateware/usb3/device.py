"""The busprobe USB 3.0 SuperSpeed device: bursting bulk IN and OUT, pattern, telemetry."""

from amaranth import Elaboratable, Module, Signal
from amaranth.lib import wiring
from busprobe.protocol import usb3
from luna.gateware.usb.usb3.endpoints import USB3ControlEndpoint

from ..common.data_path import BulkDataPath
from .core import SuperSpeedCore
from .descriptors import build_descriptors
from .in_endpoint import BurstInEndpoint
from .out_endpoint import BurstOutEndpoint
from .request_handler import SuperSpeedProbeRequestHandler
from .standard_requests import SuperSpeedStandardRequestHandler
from .telemetry import SuperSpeedTelemetry
from .transaction import BulkHandshakeGenerator

__all__ = ["Usb3ProbeDevice"]


class Usb3ProbeDevice(Elaboratable):
    """USB 3.0 SuperSpeed bulk device that is never the bottleneck (issue 10).

    - EP0: LUNA's SuperSpeed control endpoint with
      :class:`.standard_requests.SuperSpeedStandardRequestHandler` (USB 3.2 chapter 9, the
      descriptors from :func:`.descriptors.build_descriptors`: device, configuration with
      endpoint companions, BOS) and :class:`.request_handler.SuperSpeedProbeRequestHandler`
      (busprobe's vendor requests).
    - EP1 IN (0x81): :class:`.in_endpoint.BurstInEndpoint`, bursts of up to 16 packets from a
      ring the pattern generator fills at 4 bytes per cycle (500 MB/s, above the link's 477).
    - EP2 OUT (0x02): :class:`.out_endpoint.BurstOutEndpoint` into
      :class:`~busprobe.gateware.common.word_checker.PatternWordChecker`, 16 buffers
      advertised as NumP.
    - :class:`~busprobe.gateware.common.data_path.BulkDataPath` (a word a beat) between the
      endpoints and the pattern engines: PATTERN as above, or LOOPBACK (SET_DATA_MODE), OUT
      packets returned on IN as they came.
    - :class:`.transaction.BulkHandshakeGenerator`: the bulk endpoints' ACK/NRDY/ERDY.
    - :class:`.telemetry.SuperSpeedTelemetry`: what the host did, in protocol order.

    Everything runs in the ``ss`` domain (125 MHz, 4 symbols per cycle); LUNA's PHY reset
    controller also uses ``sync``. The board or simulation top provides both.

    A personality (:class:`.storage.Usb3StorageDevice`) subclasses it: its descriptors, its
    EP0 handler and its data path come from three factory methods (``_descriptors``,
    ``_request_handler``, ``_data_path``), and its parts are attributes once elaborated.

    Attributes
    ----------
    core: SuperSpeedCore
        LUNA's SuperSpeed layers with busprobe's extensions (link state, for tops and debugging).
    requests, standard, endpoint_in, endpoint_out, data_path:
        The vendor and standard request handlers, the bulk endpoints and the data path (set in
        ``elaborate``).

    Parameters
    ----------
    phy: PIPEInterface
        4-symbol PIPE interface in the ``ss`` domain.
    sync_frequency: float
        Frequency of the ``sync`` domain.
    """

    def __init__(self, *, phy, sync_frequency=125e6):
        self.core = SuperSpeedCore(phy=phy, sync_frequency=sync_frequency)

    def _descriptors(self):
        return build_descriptors()

    def _request_handler(self):
        return SuperSpeedProbeRequestHandler()

    def _data_path(self):
        return BulkDataPath(width=4, domain="ss", max_packet_size=usb3.MAX_PACKET_SIZE)

    def _bulk_endpoints(self):
        """The bulk IN and OUT endpoints."""
        return (BurstInEndpoint(endpoint_number=usb3.EP_IN & 0xF, slots=usb3.MAX_BURST_PACKETS),
                BurstOutEndpoint(endpoint_number=usb3.EP_OUT & 0xF,
                                 slots=usb3.OUT_BUFFER_PACKETS))

    def _more_handshake_requests(self, endpoint_in, endpoint_out):
        """Handshake request ports besides the endpoints' own, served after them."""
        return []

    def _handshake_waits(self, m, endpoint_in, requesters):
        """``(hold, defer)`` for the handshake generator: when the bulk TPs wait for the IN
        endpoint's packets, and which request ports are not taken now (one bit each in the
        order of ``requesters``). The probe: never, none. The storage device holds them
        through a data-in train, and its COMMAND IU's ACK waits for any train
        (:mod:`.held_handshakes`)."""
        return 0, 0

    def _alternates(self):
        """Interface 0's alternate settings (SET_INTERFACE accepts 0 up to one less)."""
        return 1

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core

        control = USB3ControlEndpoint()
        self.standard = standard = SuperSpeedStandardRequestHandler(
            self._descriptors(), alternates=self._alternates())
        control.add_request_handler(standard)
        self.requests = requests = self._request_handler()
        control.add_request_handler(requests)
        core.add_endpoint(control)

        endpoint_in, endpoint_out = self._bulk_endpoints()
        self.endpoint_in, self.endpoint_out = endpoint_in, endpoint_out
        core.add_endpoint(endpoint_in)
        core.add_endpoint(endpoint_out)
        # OUT first: its ACKs pace the host's bursts; IN's NRDY/ERDY can wait a header.
        requesters = [endpoint_out.handshake, endpoint_in.handshake,
                      *self._more_handshake_requests(endpoint_in, endpoint_out)]
        m.submodules.handshakes = handshakes = BulkHandshakeGenerator(ports=len(requesters))
        hold, defer = self._handshake_waits(m, endpoint_in, requesters)
        m.d.comb += [
            core.bulk_header_source.header_eq(handshakes.header_source),
            handshakes.address.eq(core.address),
            handshakes.hold.eq(hold),
            handshakes.defer.eq(defer),
            core.end_of_burst.eq(endpoint_in.end_of_burst),
        ]
        for endpoint_port, generator_port in zip(requesters, handshakes.requests, strict=True):
            m.d.comb += [generator_port.valid.eq(endpoint_port.valid),
                         generator_port.request.eq(endpoint_port.request),
                         endpoint_port.done.eq(generator_port.done)]

        # EP0's requests reach the data path a cycle after they are decoded, strobes and values
        # alike (so they stay together): from the control endpoint's request multiplexer
        # through the handlers into the IN endpoint's flush was the ss clock's critical path on
        # ECPIX-5 (119.4 MHz, nextpnr seed 1). A cycle is nothing next to a control transfer.
        def registered(signal):
            copy = Signal.like(signal, name=f"{signal.name}_r")
            m.d.ss += copy.eq(signal)
            return copy
        self._registered = registered

        # SET_PATTERN and SET_DATA_MODE restart both pattern streams and drop what either
        # endpoint holds, so a new mode starts from empty buffers both ways.
        restart = registered(requests.set_pattern)
        # CLEAR_TELEMETRY's strobe too: decoded from the request's fields, it went on into the
        # disk's telemetry RAM's synchronous resets (ECPIX-5's ss path, 121.80 MHz).
        clear = registered(requests.clear_telemetry)
        m.submodules.data_path = data_path = self.data_path = self._data_path()
        m.d.comb += [
            data_path.mode.eq(registered(requests.data_mode)),
            data_path.pattern.eq(registered(requests.pattern)),
            data_path.restart.eq(restart),
            data_path.clear.eq(clear),
            endpoint_in.framed.eq(data_path.in_framed),
            endpoint_in.flush.eq(restart),
            endpoint_in.new_transfer.eq(registered(requests.set_in_transfer)),
            endpoint_in.transfer_length.eq(registered(requests.in_transfer_length)),
            endpoint_in.zlp.eq(registered(requests.in_zlp)),
            endpoint_out.flush.eq(restart),
            standard.configuration.eq(core.configuration),
            endpoint_in.halt.eq(registered(standard.halt_in)),
            endpoint_in.restart.eq(registered(standard.restart_in)),
            endpoint_out.halt.eq(registered(standard.halt_out)),
            endpoint_out.restart.eq(registered(standard.restart_out)),
        ]
        wiring.connect(m, data_path.to_in, endpoint_in.stream)
        wiring.connect(m, endpoint_out.stream, data_path.from_out)

        m.submodules.telemetry = telemetry = SuperSpeedTelemetry()
        m.d.comb += [
            telemetry.events["in"].eq(endpoint_in.events),
            telemetry.events["out"].eq(endpoint_out.events),
            telemetry.events.itp.eq(core.itp_received),
            telemetry.events.header_credit_stall.eq(core.header_credit_stall),
            telemetry.pattern_errors.eq(data_path.pattern_errors),
            telemetry.first_error_offset.eq(data_path.first_error_offset),
            telemetry.clear.eq(clear),
            requests.telemetry.eq(telemetry.words),
        ]
        return m
