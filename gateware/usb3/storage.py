"""The storage personality of the SuperSpeed device: a SCSI null disk over Bulk-Only Transport
(alternate 0) and USB Attached SCSI with bulk streams (alternate 1).

The probe device (:class:`~.device.Usb3ProbeDevice`) with its interface said to be mass storage
(class 08, subclass 06, protocol 0x50), the BOT class requests on EP0, and the USB 2.0 disk's
:class:`~busprobe.gateware.common.scsi_engine.ScsiBotEngine` (the same decode, answers, LBA
pattern and telemetry) between the bursting bulk endpoints, a word a cycle: 500 MB/s in the
``ss`` domain, above the link's 477, so the disk is never the bottleneck. The vendor requests
stay, so the SuperSpeed telemetry (bytes, bursts, NumP, the timing window) reads as for the
probe; its ``pattern_errors`` word counts written words that were not the LBA pattern.

Alternate 1 is UAS (:class:`~busprobe.gateware.common.uas_engine.UasEngine` a word a beat, its
task set of 32 tags): the command pipe (EP4 OUT) without streams, the status pipe (EP3 IN) and
the data pipes (EP1 IN, EP2 OUT, alternate 0's endpoints) with bulk streams, stream ID = tag,
selected by the device: the data-in and status endpoints keep each packet's tag and select the
stream of the next one buffered, the data-out endpoint the tag whose data the engine takes.
On alternate 0 the stream layers stand aside (Stream ID 0, as without streams).
"""

from amaranth import Cat, Const, DomainRenamer, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import bot, uas, usb3
from busprobe.protocol.patterns import NO_ERROR_OFFSET
from busprobe.protocol.storage import DEFAULT_CAPACITY_BLOCKS
from busprobe.protocol.streams import MAX_STREAMS
from usb_protocol.types import USBRequestRecipient

from ..common.packet_stream import PacketStreamSignature, RegisteredPacketStream
from ..common.pattern import PATTERN_SHAPE
from ..common.scsi_engine import ScsiBotEngine
from ..common.storage_engines import share_data_in, share_telemetry
from ..common.storage_replies import StorageReplies
from ..common.storage_telemetry import StorageTelemetry
from ..common.uas_engine import UasEngine
from .descriptors import build_descriptors
from .device import Usb3ProbeDevice
from .held_handshakes import HeldHandshakes
from .out_endpoint import BurstOutEndpoint
from .request_handler import SuperSpeedProbeRequestHandler
from .stream_in_endpoint import StreamInEndpoint
from .stream_out_endpoint import StreamOutEndpoint

__all__ = ["Usb3StorageDevice", "SuperSpeedStorageRequestHandler", "Usb3StorageDataPath"]

#: Bytes a beat of the SuperSpeed endpoints' packet streams.
WORD_BYTES = 4


class SuperSpeedStorageRequestHandler(SuperSpeedProbeRequestHandler):
    """:class:`SuperSpeedProbeRequestHandler` with the BOT class requests to interface 0 (BOT
    §3.1, 3.2) once configured: Bulk-Only Mass Storage Reset (``bot_reset`` at its STATUS TP)
    and Get Max LUN (one byte, 0: one LUN). Any other class request is stalled.

    Attributes
    ----------
    bot_reset: Signal(), output
        Strobe: a Bulk-Only Mass Storage Reset completed.
    configured: Signal(), input
        The device is configured (class requests are stalled before).
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.bot_reset = Signal()
        self.configured = Signal()

    def _class(self, m, setup):
        to_us = ((setup.recipient == USBRequestRecipient.INTERFACE) & (setup.index == 0)
                 & (setup.value == 0) & self.configured)
        return (to_us & (setup.request == bot.GET_MAX_LUN),
                to_us & (setup.request == bot.MASS_STORAGE_RESET), 0, 1)

    def _class_status(self, m):
        # The only OUT class request taken.
        m.d.comb += self.bot_reset.eq(1)


class Usb3StorageDataPath(wiring.Component):
    """What the null disk's SuperSpeed bulk endpoints carry: the BOT engine a word a beat and its
    telemetry, in the place (and with the ports) of
    :class:`~busprobe.gateware.common.data_path.BulkDataPath`; the data mode and pattern requests
    do not change it (SET_DATA_MODE and SET_PATTERN restart it).

    Attributes
    ----------
    bot_reset: Signal(), input
        Strobe: Bulk-Only Mass Storage Reset (the engine waits for a CBW).
    set_interface: Signal(), input
        Strobe: SET_INTERFACE or SET_CONFIGURATION restarted both endpoints (so the engines).
    alternate: Signal(), input
        The alternate setting in force: 0 BOT on the bulk endpoints, 1 UAS.
    command_out: PacketStreamSignature(4), input
    status_in: PacketStreamSignature(4), output
        UAS's command and status pipes.
    tag: Signal(16), output
        The UAS tag the data-in and status beats belong to (their endpoints' packet streams).
    want_out: Signal(16), output
        The UAS tag whose data the engine takes next (0: none; the data-out stream it selects).
    out_acked: Signal(), input
    out_acked_length: Signal(range(1025)), input
        Strobe: the bulk OUT endpoint ACKed a data packet of this many bytes (a UAS write's
        SENSE waits for its last, :class:`~busprobe.gateware.common.uas_engine.UasEngine`).
    out_started: Signal(), input
        Strobe: a data packet for EP2 OUT began to arrive (its endpoint's ``dp_start``).
    status_soon: Signal(), output
        A write's last data packet is arriving: the status pipe announces its SENSE (ERDY).
    engine: ScsiBotEngine
    uas: UasEngine
    telemetry: StorageTelemetry
        Read as vendor VPD page 0xC0; its gap counts are ``ss`` cycles (125 MHz).

    (``mode``, ``pattern``, ``restart``, ``clear``, ``to_in``, ``in_framed``, ``from_out``,
    ``pattern_errors``, ``first_error_offset`` as the
    :class:`~busprobe.gateware.common.data_path.BulkDataPath`'s; ``in_framed`` is always set:
    packets end where the engine says, ``first_error_offset`` is never known.)

    Parameters
    ----------
    capacity_blocks: int
        Blocks the disk has.
    """

    mode: In(usb3.DataMode)
    pattern: In(PATTERN_SHAPE)
    restart: In(1)
    clear: In(1)
    bot_reset: In(1)
    set_interface: In(1)
    alternate: In(1)
    command_out: In(PacketStreamSignature(WORD_BYTES))
    status_in: Out(PacketStreamSignature(WORD_BYTES))
    tag: Out(16)
    want_out: Out(16)
    to_in: Out(PacketStreamSignature(WORD_BYTES))
    in_framed: Out(1)
    from_out: In(PacketStreamSignature(WORD_BYTES))
    out_acked: In(1)
    out_acked_length: In(range(usb3.MAX_PACKET_SIZE + 1))
    out_started: In(1)
    status_soon: Out(1)
    pattern_errors: Out(32)
    first_error_offset: Out(32)

    def __init__(self, *, capacity_blocks=DEFAULT_CAPACITY_BLOCKS):
        super().__init__()
        replies = StorageReplies(capacity_blocks)
        self.engine = ScsiBotEngine(replies=replies, capacity_blocks=capacity_blocks,
                                    width=WORD_BYTES, max_packet_size=usb3.MAX_PACKET_SIZE)
        self.uas = UasEngine(replies=replies, capacity_blocks=capacity_blocks, width=WORD_BYTES,
                             max_packet_size=usb3.MAX_PACKET_SIZE, ready_ius=False,
                             acked=("out",), max_tag=MAX_STREAMS)
        self.telemetry = StorageTelemetry(replies=replies)

    def elaborate(self, platform):
        m = Module()
        engine, uas_engine, telemetry = self.engine, self.uas, self.telemetry
        # The engines and their telemetry are written for the USB 2.0 clock's name.
        m.submodules.engine = DomainRenamer({"usb": "ss"})(engine)
        m.submodules.uas = DomainRenamer({"usb": "ss"})(uas_engine)
        m.submodules.telemetry = DomainRenamer({"usb": "ss"})(telemetry)
        reset = self.bot_reset | self.restart | self.set_interface
        uas_on = self.alternate
        # OUT beats reach the engines through registers both ways: from the OUT endpoint's
        # buffer RAM through the beat's byte count into the engine's length registers (123.58
        # MHz, nextpnr default seed), and from the UAS engine's state through its ``ready``
        # into the endpoint's drain (113.33 MHz, seed 1) were ss critical paths on ECPIX-5.
        # A cycle of latency; a beat a cycle.
        m.submodules.data_out_slice = data_out = RegisteredPacketStream(width=WORD_BYTES,
                                                                        domain="ss")
        wiring.connect(m, wiring.flipped(self.from_out), data_out.sink)
        beat = data_out.source
        m.d.comb += [data_out.flush.eq(reset),
                     beat.ready.eq(Mux(uas_on, uas_engine.out_packets.ready,
                                       engine.out_packets.ready)),
                     engine.out_packets.valid.eq(beat.valid & ~uas_on),
                     uas_engine.out_packets.valid.eq(beat.valid & uas_on),
                     engine.out_packets.payload.eq(beat.payload),
                     uas_engine.out_packets.payload.eq(beat.payload)]
        # A write's SENSE goes at its last data packet's ACK (a cycle later: registered, off
        # the endpoint's ACK path), not once the check has read that packet out.
        m.d.ss += [uas_engine.out_acked.eq(self.out_acked),
                   uas_engine.out_acked_length.eq(self.out_acked_length),
                   uas_engine.out_started.eq(self.out_started)]
        m.d.comb += self.status_soon.eq(uas_engine.status_soon)
        wiring.connect(m, wiring.flipped(self.command_out), uas_engine.command_packets)
        # The engines' data-in and status beats reach the IN endpoints through registers both
        # ways: from the engines' length counters and states into the endpoints' packet framing
        # (and from the endpoints' ``ready`` back) were ss timing paths on ECPIX-5 (issue 44
        # item 7). A cycle of latency; a beat a cycle. Flushed with the endpoints they feed.
        m.submodules.data_in_slice = data_in = RegisteredPacketStream(width=WORD_BYTES,
                                                                      domain="ss")
        m.submodules.status_slice = status = RegisteredPacketStream(width=WORD_BYTES,
                                                                    domain="ss")
        m.d.comb += [data_in.flush.eq(reset), status.flush.eq(reset)]
        wiring.connect(m, uas_engine.status_packets, status.sink)
        wiring.connect(m, status.source, wiring.flipped(self.status_in))
        wiring.connect(m, data_in.source, wiring.flipped(self.to_in))
        m.d.comb += [
            self.tag.eq(uas_engine.tag),
            self.in_framed.eq(1),
            engine.reset.eq(reset),
            uas_engine.reset.eq(self.restart | self.set_interface),
            telemetry.clear.eq(self.clear),
            self.pattern_errors.eq(telemetry.mismatches),
            self.first_error_offset.eq(Const(NO_ERROR_OFFSET, 32)),
        ]
        # Registered: from the engine's state into the OUT stream layer's selection was an ss
        # timing path on ECPIX-5 (the ERDY selecting the tag's stream goes a cycle later).
        m.d.ss += self.want_out.eq(Mux(uas_engine.data_out, uas_engine.tag, 0))
        share_data_in(m, data_in.sink, engine, uas_engine, uas_on)
        share_telemetry(m, telemetry, engine, uas_engine, uas_on, domain="ss")
        return m


class Usb3StorageDevice(Usb3ProbeDevice):
    """The ``usb3-storage`` design: the SCSI null disk over BOT (issue 28 part 4) and, on
    alternate 1, over UAS with bulk streams (issue 44) at SuperSpeed.

    Attributes
    ----------
    endpoint_status: StreamInEndpoint
        UAS's status pipe (EP3 IN), tagged, streams chosen by the device.
    endpoint_command: BurstOutEndpoint
        UAS's command pipe (EP4 OUT), no streams.
    (the rest as :class:`~.device.Usb3ProbeDevice`'s)

    Parameters
    ----------
    capacity_blocks: int
        Blocks the disk reports (default 64 GiB of 512-byte blocks; nothing is stored).
    (the rest as :class:`~.device.Usb3ProbeDevice`'s)
    """

    def __init__(self, *, capacity_blocks=DEFAULT_CAPACITY_BLOCKS, **kwargs):
        self._capacity = capacity_blocks
        super().__init__(**kwargs)
        self.endpoint_status = StreamInEndpoint(endpoint_number=uas.EP_STATUS & 0xF, slots=2,
                                                max_streams=MAX_STREAMS, tagged=True,
                                                by_want=True)
        self.endpoint_command = BurstOutEndpoint(endpoint_number=uas.EP_COMMAND, slots=2)

    def _descriptors(self):
        return build_descriptors(product=usb3.STORAGE_PRODUCT, interface=bot.BOT_INTERFACE,
                                 uas_pipes=True)

    def _alternates(self):
        return 2

    def _request_handler(self):
        # GET_INFO says it is the disk, so a host refuses a stream sweep in one line.
        return SuperSpeedStorageRequestHandler(features=usb3.Feature.STORAGE)

    def _data_path(self):
        return Usb3StorageDataPath(capacity_blocks=self._capacity)

    def _bulk_endpoints(self):
        # Alternate 0's endpoints are UAS's data pipes on alternate 1: with the stream layers,
        # which stand aside on alternate 0.
        return (StreamInEndpoint(endpoint_number=usb3.EP_IN & 0xF, slots=usb3.MAX_BURST_PACKETS,
                                 max_streams=MAX_STREAMS, tagged=True, by_want=True),
                StreamOutEndpoint(endpoint_number=usb3.EP_OUT & 0xF,
                                  slots=usb3.OUT_BUFFER_PACKETS, max_streams=MAX_STREAMS,
                                  by_want=True))

    def _handshake_waits(self, m, endpoint_in, requesters):
        m.submodules.held_handshakes = held = HeldHandshakes()
        m.d.comb += [held.state.eq(endpoint_in.state),
                     held.others_primed.eq(endpoint_in.others_primed),
                     held.sending.eq(endpoint_in.sending),
                     held.end_of_burst.eq(endpoint_in.end_of_burst)]
        # The COMMAND IU's ACK goes after the data-in train it came during, not between two of
        # its packets: nothing the data pipe waits for follows from it (the engine has the IU).
        command = self.endpoint_command.handshake
        defer = Cat(*(held.train if port is command else Const(0, 1) for port in requesters))
        return held.hold, defer

    def _more_handshake_requests(self, endpoint_in, endpoint_out):
        return [self.endpoint_command.handshake, self.endpoint_status.handshake,
                endpoint_out.control_handshake, endpoint_in.control_handshake,
                self.endpoint_status.control_handshake]

    def elaborate(self, platform):
        m = super().elaborate(platform)
        core, requests, standard = self.core, self.requests, self.standard
        registered = self._registered
        endpoint_in, endpoint_out = self.endpoint_in, self.endpoint_out
        status, command, data_path = self.endpoint_status, self.endpoint_command, self.data_path
        core.add_endpoint(status)
        core.add_endpoint(command)
        both_restart = Signal()
        m.d.comb += [both_restart.eq(standard.restart_in & standard.restart_out),
                     requests.configured.eq(core.configuration != 0)]
        bot_reset = registered(requests.bot_reset)
        # A port reset (Hot Reset: LUNA's link in reset) starts the data path and every endpoint
        # over as SET_INTERFACE does, and empties them: LUNA only zeroes the address and
        # configuration, and a reset in the middle of a read's data stream left the disk
        # sending that read's packets through the enumeration after it (Linux's uas error
        # handler then offlined it).
        hot_reset = registered(core.link_in_reset)
        set_interface = registered(both_restart) | hot_reset
        alternate = registered(standard.alternate)
        # A BOT reset also empties both endpoints: a CSW or data still buffered belongs to the
        # command it abandons. (Assigned again after the probe's own: the last wins.)
        flush = registered(requests.set_pattern) | bot_reset | hot_reset
        streams = alternate & (core.configuration != 0)
        m.d.comb += [
            data_path.bot_reset.eq(bot_reset), data_path.set_interface.eq(set_interface),
            data_path.alternate.eq(alternate),
            data_path.out_acked.eq(endpoint_out.events.acked),
            data_path.out_acked_length.eq(endpoint_out.events.acked_bytes),
            data_path.out_started.eq(endpoint_out.events.dp_start),
            status.announce.eq(data_path.status_soon),
            endpoint_in.flush.eq(flush), endpoint_out.flush.eq(flush),
            status.flush.eq(flush), command.flush.eq(flush),
            status.restart.eq(set_interface), command.restart.eq(set_interface),
            # Streams on alternate 1 only; the stream IDs of data packets sent and ACK TPs
            # taken, and End Of Burst, are those of the IN endpoint sending.
            endpoint_in.streams.eq(streams), endpoint_out.streams.eq(streams),
            endpoint_in.enabled.eq(streams), endpoint_out.enabled.eq(streams),
            status.streams.eq(1), status.enabled.eq(streams),
            endpoint_in.packet_stream_id.eq(data_path.tag),
            status.packet_stream_id.eq(data_path.tag),
            endpoint_out.want.eq(data_path.want_out),
            endpoint_in.ack_stream_id.eq(core.ack_stream_id),
            status.ack_stream_id.eq(core.ack_stream_id),
            core.stream_id.eq(Mux(status.sending, status.stream_id, endpoint_in.stream_id)),
            core.end_of_burst.eq(Mux(status.sending, status.end_of_burst,
                                     endpoint_in.end_of_burst)),
            status.framed.eq(1),
        ]
        # One IN endpoint sends at a time (LUNA's multiplexer does not arbitrate): a registered
        # grant. Deciding it in the cycle a packet starts, from each endpoint's start condition
        # into the other's, chained both endpoints' start logic and was the ss clock's critical
        # path on ECPIX-5 (105.90 MHz, nextpnr default seed; issue 44 item 7). The grant passes
        # to the other endpoint only while the one holding it neither sends nor starts, so a
        # status packet waits at most a packet (and a cycle) for the data pipe; the data pipe
        # holds the grant while neither wants it.
        grant_status = Signal()
        m.d.comb += [endpoint_in.may_send.eq(~grant_status), status.may_send.eq(grant_status)]
        # A SENSE waits while the data pipe's stream has ended with the next one's data, a
        # one-packet transfer, buffered: until all it sent is acknowledged and that stream's
        # ERDY has gone (if it goes at once: the host primed it). A host that resubmits at a
        # completion (`ideal`) then answers the ERDY before it sends the next COMMAND IU, not
        # behind it, and the next data packet goes sooner (1 KiB x QD 4 reads: 374.57 MB/s, was
        # 362.43). Not before a longer train: the device's answers to that IU would go between
        # its data packets (4 KiB x QD 8 behind small-burst: 349.87, was 354.38). Registered,
        # as the grant: the endpoints' start logic must not reach through it.
        acked_before, sense_waits = Signal(), Signal()
        m.d.ss += [acked_before.eq(endpoint_in.acknowledged),
                   sense_waits.eq(endpoint_in.next_due
                                  & (~endpoint_in.acknowledged | ~acked_before
                                     | endpoint_in.handshake.valid))]
        with m.If(~grant_status):
            with m.If(status.wants_to_send & ~endpoint_in.sending & ~endpoint_in.starting
                      & ~sense_waits):
                m.d.ss += grant_status.eq(1)
        with m.Elif(~status.sending & ~status.starting
                    & (endpoint_in.wants_to_send | ~status.wants_to_send)):
            m.d.ss += grant_status.eq(0)
        wiring.connect(m, command.stream, data_path.command_out)
        wiring.connect(m, data_path.status_in, status.stream)
        return m
