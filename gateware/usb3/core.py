"""LUNA's SuperSpeed layers, opened where busprobe needs to see or add to them.

LUNA's ``USBSuperSpeedDevice`` builds its physical, link and protocol layers inside its
``elaborate``, so nothing between them can be observed or extended. :class:`SuperSpeedCore`
composes the same LUNA layers (through the three thin subclasses below) and keeps LUNA's endpoint
multiplexer and control endpoint, adding what busprobe's bulk endpoints need:

- a second transaction-packet producer beside LUNA's (whose generator always advertises one
  packet and sends NRDY when asked for ERDY, see :mod:`.transaction`);
- the End Of Burst bit and the Stream ID of outgoing data packet headers (LUNA leaves both 0),
  and the Stream ID of the host's ACK TPs (LUNA decodes only Packets Pending);
- what the link shows the telemetry: ITPs and header packets waiting for a link credit;
- its link commands queued whole and sent back to back (:mod:`.link_commands`: LUNA's header
  receiver otherwise starves its LGOODs on a busy lane), and its advertisement after every
  Recovery (LUNA's skips it when the link leaves U0 mid-command);
- its packets sent back to back while no link command or SKP waits (:mod:`.chained_packets`:
  LUNA's transmitter leaves two idle cycles after each);
- the LFPS detections registered on their way to the LTSSM (a timing path on the ECPIX-5).
"""

from amaranth import Cat, Elaboratable, Module, Signal
from luna.gateware.usb.usb3.link import USB3LinkLayer
from luna.gateware.usb.usb3.link.header import HeaderQueue
from luna.gateware.usb.usb3.physical import USB3PhysicalLayer
from luna.gateware.usb.usb3.protocol import USB3ProtocolLayer
from luna.gateware.usb.usb3.protocol.endpoint import SuperSpeedEndpointMultiplexer

from .chained_packets import ChainedPacketTransmitter
from .data_receiver import OneVerdictDataPacketReceiver
from .link_commands import advertise_after_every_recovery, queue_link_commands
from .transmit_arbiter import SameCycleStreamArbiter

__all__ = ["SuperSpeedCore", "BurstLinkLayer", "ProbeProtocolLayer", "RegisteredLfpsPhysicalLayer"]

#: Bit of a data packet header's second word that is End Of Burst (USB 3.2 §8.6.1, LUNA's
#: ``DataHeaderPacket.DW1_LAYOUT``: sequence 5 bits, reserved 1, then EOB).
_EOB_BIT = 6


class RegisteredLfpsPhysicalLayer(USB3PhysicalLayer):
    """LUNA's physical layer, with its two LFPS detections registered on their way to the LTSSM.

    LUNA's LFPS detectors (luna-usb 0.2.3, ``usb3/physical/lfps.py``) strobe ``detect``
    combinationally from their cycle counter's compare with the burst's minimum length (a carry
    chain), and the physical layer passes the strobes straight into the LTSSM's next state
    (``in_usb_reset``, ``lfps_polling_detected``). On the ECPIX-5 build that path, from the Warm
    Reset detector's counter through the LTSSM, was the ``ss`` clock's critical path on nextpnr
    seeds 4 and 5 (124.84 and 115.65 MHz, 125 needed) once GET_DESCRIPTOR came from a ROM. One
    flip-flop on each strobe cuts it; the LTSSM learns of a burst 8 ns later, against bursts of
    0.6-1.4 us (Polling.LFPS) and 80-120 ms (Warm Reset).

    LUNA's ``elaborate`` assigns the two outputs from the detectors; it is given stand-ins for
    them, which are then registered into the real ones (nothing else of the layer changes).

    The receive descrambler's ``enable`` is registered too: the LTSSM decides it from its state
    combinationally, and from the LTSSM's state through the descrambler and LUNA's packet
    realigner into the header receiver was the ``ss`` clock's critical path on the ECPIX-5
    ``usb3-storage`` build (112.75 MHz, default seed; issue 44 item 7). Received words are
    descrambled from a cycle after the LTSSM enters Polling.Idle or U0's states (and until a
    cycle after it leaves them); the training-set detectors read the raw words, and the
    transmit scrambler is unchanged.
    """

    def elaborate(self, platform):
        outputs = (self.lfps_polling_detected, self.lfps_reset_detected)
        self.lfps_polling_detected, self.lfps_reset_detected = Signal(), Signal()
        try:
            m = super().elaborate(platform)
            strobes = (self.lfps_polling_detected, self.lfps_reset_detected)
        finally:
            self.lfps_polling_detected, self.lfps_reset_detected = outputs
        m.d.ss += [output.eq(strobe) for output, strobe in zip(outputs, strobes, strict=True)]
        descrambler = m.submodules.descrambler  # not elaborated yet: its enable is swapped
        decided, descrambler.enable = descrambler.enable, Signal(name="descramble_r")
        m.d.ss += descrambler.enable.eq(decided)
        return m


class BurstLinkLayer(USB3LinkLayer):
    """LUNA's link layer, with End Of Burst on data headers, the header-credit state visible,
    its link commands through a :class:`.link_commands.LinkCommandQueue` and its recovery
    timer's expiry registered.

    Attributes
    ----------
    data_sink_end_of_burst: Signal(), input
        EOB of the data packet being sent; held with ``data_sink.valid`` (or ``send_zlp``).
    data_sink_stream_id: Signal(16), input
        Stream ID of the data packet being sent (0 on an endpoint without streams), held
        like ``data_sink_end_of_burst``.
    header_credit_stall: Signal(), output
        A header packet is waiting to be sent and the link partner has granted no credit (LCRD).
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.data_sink_end_of_burst = Signal()
        self.data_sink_stream_id = Signal(16)
        self.header_credit_stall = Signal()

    def elaborate(self, platform):
        m = super().elaborate(platform)
        transmitter = m.submodules.transmitter
        m.d.comb += self.header_credit_stall.eq(transmitter.queue.valid
                                                & (transmitter.credits_available == 0))
        # Timing: its header CRC-16 reads the header's words, not its output multiplexer; and
        # it sends a waiting packet straight after the last (.chained_packets).
        ChainedPacketTransmitter.adopt(transmitter)
        # Upstream bug (luna-usb 0.2.3, DataPacketReceiver; see .data_receiver): after a
        # zero-length data packet it strobes "good" every cycle and never receives again.
        OneVerdictDataPacketReceiver.adopt(m.submodules.data_rx)

        # Upstream limitation (luna-usb 0.2.3, DataPacketTransmitter; LUNA's SuperSpeed bulk
        # endpoints never burst, greatscottgadgets/luna#64): data headers never carry End Of
        # Burst. The link's header arbiter has not been elaborated yet, so its data-header input
        # is swapped here for a copy of that queue with the EOB bit set from
        # ``data_sink_end_of_burst``; nothing else of the transmitter changes. Busprobe reaches
        # into LUNA's arbiters (``_sinks``) here and for the link commands below, nowhere else.
        header_mux = m.submodules.hp_mux
        data_headers = m.submodules.data_tx.header_source
        with_eob = HeaderQueue()
        position = next(i for i, queue in enumerate(header_mux._sinks) if queue is data_headers)
        header_mux._sinks[position] = with_eob
        m.d.comb += with_eob.header_eq(data_headers)
        m.d.comb += with_eob.header.dw1[_EOB_BIT].eq(self.data_sink_end_of_burst)
        # The same copy carries the Stream ID (DW2 bits 15:0, USB 3.2 §8.6; LUNA's
        # DataHeaderPacket has the field, its transmitter leaves it 0).
        m.d.comb += with_eob.header.dw2[:16].eq(self.data_sink_stream_id)

        # Upstream bug (luna-usb 0.2.3, HeaderPacketReceiver; see .link_commands): on a busy
        # lane its LGOODs starve. Its link commands reach the transmit arbiter through a queue
        # that takes them whole and sends them back to back; dropped when the link leaves U0.
        commands = queue_link_commands(m, m.submodules.stream_arbiter,
                                       m.submodules.header_rx.source,
                                       flush=~self.trained | self.in_reset)
        # Upstream bug (luna-usb 0.2.3, HeaderPacketReceiver; see .link_commands): leaving U0
        # while it sends an LGOOD or LCRD, it skips its advertisement after Recovery.
        advertise_after_every_recovery(m.submodules.header_rx)
        # Timing (ECPIX-5): LUNA's recovery timer strobes its 1 ms expiry combinationally from
        # an adder and compare (luna-usb 0.2.3, LinkMaintenanceTimers), and the strobe runs
        # through the link's recovery trigger into the LTSSM's next state: the ss clock's
        # critical path on nextpnr seeds 1-3 (121.21 MHz on seed 2) once the LFPS detections
        # were registered. The trigger above already reads the timer's output; the timer, which
        # elaborates after this method, is given a stand-in to drive, registered into it (the
        # expiry comes one 8 ns cycle later).
        timers = m.submodules.timers
        expiry = timers.transition_to_recovery
        timers.transition_to_recovery = Signal()
        m.d.ss += expiry.eq(timers.transition_to_recovery)
        # Upstream limitation (luna-usb 0.2.3, StreamArbiter): a dead cycle at every change of
        # stream on the lane; .transmit_arbiter grants in the same cycle.
        arbiter = SameCycleStreamArbiter.adopt(m.submodules.stream_arbiter)
        m.d.comb += [arbiter.counting.eq(self.trained & ~self.in_reset),
                     arbiter.flush.eq(self.in_reset)]
        # The transmitter chains packets only while no other stream waits for the lane: the
        # arbiter hands it over only where the holder drops valid.
        others = Cat(arbiter.waiting[i] for i, stream in enumerate(arbiter._sinks)
                     if stream is not transmitter.source)
        # With an IN endpoint's ERDY due it goes ahead of the link commands, with the headers
        # queued before it (.chained_packets): the host's next transaction waits for it, an
        # LGOOD or LCRD can wait a few headers.
        m.d.comb += transmitter.yield_lane.eq(arbiter.skp_due | ((commands.source.valid
                                                                  | others.any())
                                                                 & ~transmitter.urgent))
        return m


class ProbeProtocolLayer(USB3ProtocolLayer):
    """LUNA's protocol layer with a second header producer and the ITP strobe visible.

    Attributes
    ----------
    extra_header_source: HeaderQueue, input queue
        Header packets from busprobe's bulk transaction generator, arbitrated with LUNA's own.
    itp_received: Signal(), output
        Strobe: an isochronous timestamp packet arrived (one per 125 µs bus interval).
    ack_stream_id: Signal(16), output
        Stream ID of the transaction packet being decoded: valid with the endpoint interface's
        ``handshakes_in.ack_received`` (LUNA's receiver decodes DW2's Packets Pending only).
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.extra_header_source = HeaderQueue()
        self.itp_received = Signal()
        self.ack_stream_id = Signal(16)

    def elaborate(self, platform):
        m = super().elaborate(platform)
        # The arbiter elaborates after this method returns, so a producer added now is served.
        m.submodules.hp_mux.add_producer(self.extra_header_source)
        # ITPs are counted from the handler's strobe: its bus_interval_counter is declared
        # Signal() (1 bit) upstream (luna-usb 0.2.3, timestamp.py), so it cannot be read.
        m.d.comb += self.itp_received.eq(m.submodules.itp_handler.update_received)
        # The receiver decodes its header queue combinationally into ``ack_received``; DW2 of
        # the same header is the ACK TP's Stream ID (USB 3.2 §8.5).
        m.d.comb += self.ack_stream_id.eq(m.submodules.tp_receiver.header_sink.header.dw2[:16])
        return m


class SuperSpeedCore(Elaboratable):
    """LUNA's SuperSpeed device stack over a PIPE interface, with busprobe's extensions.

    Endpoints are added with :meth:`add_endpoint` as with LUNA's ``USBSuperSpeedDevice``; the
    device address and configuration are kept the same way.

    Attributes
    ----------
    link_trained: Signal(), output
        The link reached U0.
    link_in_reset: Signal(), output
        A warm or hot reset is in progress.
    configuration: Signal(8), output
        The configuration value set by SET_CONFIGURATION (0: unconfigured).
    address: Signal(7), output
        The device address in force.
    bulk_header_source: HeaderQueue, input queue
        Transaction packets of busprobe's bulk endpoints (see :mod:`.transaction`).
    end_of_burst: Signal(), input
        EOB of the data packet an endpoint is sending.
    stream_id: Signal(16), input
        Stream ID of the data packet an endpoint is sending (0 without streams).
    ack_stream_id: Signal(16), output
        Stream ID of the ACK TP the endpoints' ``handshakes_in.ack_received`` announces.
    itp_received: Signal(), output
        Strobe per ITP.
    header_credit_stall: Signal(), output
        A header packet waits for a link credit this cycle.

    Parameters
    ----------
    phy: PIPEInterface
        4 symbols wide, synchronous to the ``ss`` domain (``ECP5Usb3Phy`` on the ECPIX-5, the
        simulation's ports in simulation).
    sync_frequency: float
        Frequency of the ``sync`` domain LUNA's PHY reset controller runs in.
    ss_frequency: float
        Frequency of the ``ss`` domain (125 MHz for a 4-symbol PIPE at 5 Gb/s).
    """

    def __init__(self, *, phy, sync_frequency, ss_frequency=125e6):
        self._phy = phy
        self._sync_frequency = sync_frequency
        self._ss_frequency = ss_frequency
        self._endpoints = []
        self.link_trained = Signal()
        self.link_in_reset = Signal()
        self.configuration = Signal(8)
        self.address = Signal(7)
        self.bulk_header_source = HeaderQueue()
        self.end_of_burst = Signal()
        self.stream_id = Signal(16)
        self.ack_stream_id = Signal(16)
        self.itp_received = Signal()
        self.header_credit_stall = Signal()

    def add_endpoint(self, endpoint):
        """Add an endpoint: any elaboratable with a ``SuperSpeedEndpointInterface`` named
        ``interface``."""
        self._endpoints.append(endpoint)

    def elaborate(self, platform):
        m = Module()
        m.submodules.physical = physical = RegisteredLfpsPhysicalLayer(
            phy=self._phy, sync_frequency=self._sync_frequency)
        m.submodules.link = link = BurstLinkLayer(physical_layer=physical,
                                                  ss_clock_frequency=self._ss_frequency)
        m.submodules.protocol = protocol = ProbeProtocolLayer(link_layer=link)
        m.d.comb += [
            self.link_trained.eq(link.trained),
            self.link_in_reset.eq(link.in_reset),
            link.current_address.eq(self.address),
            protocol.current_address.eq(self.address),
            protocol.current_configuration.eq(self.configuration),
            protocol.extra_header_source.header_eq(self.bulk_header_source),
            link.data_sink_end_of_burst.eq(self.end_of_burst),
            link.data_sink_stream_id.eq(self.stream_id),
            self.ack_stream_id.eq(protocol.ack_stream_id),
            self.itp_received.eq(protocol.itp_received),
            self.header_credit_stall.eq(link.header_credit_stall),
        ]

        m.submodules.endpoint_mux = endpoint_mux = SuperSpeedEndpointMultiplexer()
        shared = endpoint_mux.shared
        endpoints = protocol.endpoint_interface
        m.d.comb += [
            shared.rx.tap(endpoints.rx),
            shared.rx_header.eq(endpoints.rx_header),
            shared.rx_complete.eq(endpoints.rx_complete),
            shared.rx_invalid.eq(endpoints.rx_invalid),
            endpoints.tx.stream_eq(shared.tx),
            endpoints.tx_zlp.eq(shared.tx_zlp),
            endpoints.tx_length.eq(shared.tx_length),
            endpoints.tx_endpoint_number.eq(shared.tx_endpoint_number),
            endpoints.tx_sequence_number.eq(shared.tx_sequence_number),
            endpoints.tx_direction.eq(shared.tx_direction),
            endpoints.handshakes_out.connect(shared.handshakes_out),
            endpoints.handshakes_in.connect(shared.handshakes_in),
            # Endpoints see the configuration (LUNA's USBSuperSpeedDevice leaves it undriven).
            shared.active_config.eq(self.configuration),
            shared.active_address.eq(self.address),
        ]
        with m.If(shared.address_changed):
            m.d.ss += self.address.eq(shared.new_address)
        with m.If(shared.config_changed):
            m.d.ss += self.configuration.eq(shared.new_config)
        with m.If(link.in_reset):
            m.d.ss += [self.address.eq(0), self.configuration.eq(0)]

        for index, endpoint in enumerate(self._endpoints):
            endpoint_mux.add_interface(endpoint.interface)
            m.submodules[f"endpoint_{index}"] = endpoint
        return m
