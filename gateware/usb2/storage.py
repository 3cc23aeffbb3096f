"""The storage personality of the USB 2.0 device: a SCSI null disk over Bulk-Only Transport.

The probe device (:class:`~.device.Usb2ProbeDevice`) with its interface said to be mass storage
(class 08, subclass 06, protocol 0x50), the BOT class requests on EP0, and the
:class:`~.scsi_engine.ScsiBotEngine` between the bulk endpoints; the vendor requests stay, so
the USB telemetry (bytes, packets, NAKs, the timing window) reads as for any probe build.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import bot, uas, usb2
from busprobe.protocol.storage import DEFAULT_CAPACITY_BLOCKS
from usb_protocol.types import USBRequestRecipient

from ..common.packet_stream import PacketStreamSignature
from ..common.pattern import PATTERN_SHAPE
from ..common.scsi_engine import ScsiBotEngine
from ..common.storage_engines import share_data_in, share_telemetry
from ..common.storage_replies import StorageReplies
from ..common.storage_telemetry import StorageTelemetry
from ..common.uas_engine import UasEngine
from .control_replies import ControlReplies
from .descriptors import build_descriptors
from .device import Usb2ProbeDevice
from .in_endpoint import StreamInEndpoint
from .out_endpoint import StreamOutEndpoint
from .request_handler import ProbeRequestHandler
from .standard_requests import Action

__all__ = ["Usb2StorageDevice", "StorageRequestHandler", "StorageDataPath", "STORAGE_PRODUCT"]

STORAGE_PRODUCT = f"{usb2.PRODUCT} null disk"


class StorageRequestHandler(ProbeRequestHandler):
    """:class:`ProbeRequestHandler` with the BOT class requests to interface 0 (BOT §3.1, 3.2):
    Bulk-Only Mass Storage Reset (``bot_reset`` when its status stage is ACKed) and Get Max LUN
    (one byte, 0: one LUN). Any other class request is stalled.

    Attributes
    ----------
    bot_reset: Signal(), output
        Strobe: a Bulk-Only Mass Storage Reset completed.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.bot_reset = Signal()

    def _class(self, m, request):
        setup = request.setup
        to_us = ((setup.recipient == USBRequestRecipient.INTERFACE) & (setup.index == 0)
                 & (self.interface.active_config != 0))
        with m.If(to_us):
            with m.Switch(setup.request):
                with m.Case(bot.MASS_STORAGE_RESET):
                    with m.If(request.no_data & (setup.value == 0)):
                        request.acknowledge(Action.CLASS_RESET)
                with m.Case(bot.GET_MAX_LUN):
                    with m.If(request.is_in & (setup.value == 0)):
                        request.send(self._replies.zero.word, 1)

    def _act(self, m, action, setup):
        super()._act(m, action, setup)
        with m.If(action == Action.CLASS_RESET):
            m.d.comb += self.bot_reset.eq(1)


class StorageDataPath(wiring.Component):
    """What the null disk's bulk endpoints carry: the SCSI engine and its telemetry, in the
    place (and with the ports) of :class:`~busprobe.gateware.common.data_path.BulkDataPath`; the
    data mode and pattern requests do not change it (SET_DATA_MODE and SET_PATTERN still
    restart it).

    Attributes
    ----------
    bot_reset: Signal(), input
        Strobe: Bulk-Only Mass Storage Reset.
    pattern_errors: Signal(32), output
        Written words that were not the LBA pattern (the USB telemetry's checker word).
    in_acked, out_acked: Signal(), input
        Strobe: the bulk IN (OUT) endpoint had a packet ACKed, of ``in_acked_length``
        (``out_acked_length``) bytes: UAS's SENSE waits for the data's (:class:`~.uas_engine.
        UasEngine`).
    in_acked_length, out_acked_length: Signal(range(MAX_PACKET_SIZE + 1)), input
    engine: ScsiBotEngine
    telemetry: StorageTelemetry

    (``mode``, ``pattern``, ``restart``, ``clear``, ``to_in``, ``in_framed``, ``from_out``,
    ``first_error_offset`` as :class:`~busprobe.gateware.common.data_path.BulkDataPath`'s;
    ``in_framed`` is always set: packets end where the engine says.)

    Parameters
    ----------
    capacity_blocks: int
        Blocks the disk has.
    """

    mode: In(usb2.DataMode)
    pattern: In(PATTERN_SHAPE)
    restart: In(1)
    clear: In(1)
    bot_reset: In(1)
    alternate: In(1)
    set_interface: In(1)
    command_out: In(PacketStreamSignature(1))
    status_in: Out(PacketStreamSignature(1))
    to_in: Out(PacketStreamSignature(1))
    in_framed: Out(1)
    from_out: In(PacketStreamSignature(1))
    pattern_errors: Out(32)
    first_error_offset: Out(32)
    in_acked: In(1)
    in_acked_length: In(range(usb2.MAX_PACKET_SIZE + 1))
    out_acked: In(1)
    out_acked_length: In(range(usb2.MAX_PACKET_SIZE + 1))

    def __init__(self, *, capacity_blocks=DEFAULT_CAPACITY_BLOCKS):
        super().__init__()
        replies = StorageReplies(capacity_blocks)
        self.engine = ScsiBotEngine(replies=replies, capacity_blocks=capacity_blocks)
        self.uas = UasEngine(replies=replies, capacity_blocks=capacity_blocks)
        self.telemetry = StorageTelemetry(replies=replies)

    def elaborate(self, platform):
        m = Module()
        m.submodules.engine = engine = self.engine
        m.submodules.telemetry = telemetry = self.telemetry
        m.submodules.uas = uas_engine = self.uas
        # The data pipes are alternate 0's endpoints in both settings: the setting in force
        # picks the engine on them (the other one waits, reset by SET_INTERFACE).
        uas_on = self.alternate
        wiring.connect(m, wiring.flipped(self.command_out), uas_engine.command_packets)
        wiring.connect(m, uas_engine.status_packets, wiring.flipped(self.status_in))
        for sink in (engine.out_packets, uas_engine.out_packets):
            m.d.comb += sink.payload.eq(self.from_out.payload)
        m.d.comb += [
            self.in_framed.eq(1),
            engine.out_packets.valid.eq(self.from_out.valid & ~uas_on),
            uas_engine.out_packets.valid.eq(self.from_out.valid & uas_on),
            self.from_out.ready.eq(Mux(uas_on, uas_engine.out_packets.ready,
                                       engine.out_packets.ready)),
            engine.reset.eq(self.bot_reset | self.restart | self.set_interface),
            uas_engine.reset.eq(self.restart | self.set_interface),
            uas_engine.in_acked.eq(self.in_acked),
            uas_engine.in_acked_length.eq(self.in_acked_length),
            uas_engine.out_acked.eq(self.out_acked),
            uas_engine.out_acked_length.eq(self.out_acked_length),
            telemetry.clear.eq(self.clear),
            self.pattern_errors.eq(telemetry.mismatches),
        ]
        share_data_in(m, self.to_in, engine, uas_engine, uas_on)
        share_telemetry(m, telemetry, engine, uas_engine, uas_on)
        return m


class Usb2StorageDevice(Usb2ProbeDevice):
    """The ``usb2-storage`` design: a SCSI null disk over BOT (issue 28), never the bottleneck.

    Parameters
    ----------
    capacity_blocks: int
        Blocks the disk reports (default 64 GiB of 512-byte blocks; nothing is stored).
    (the rest as :class:`~.device.Usb2ProbeDevice`'s)
    """

    def __init__(self, *, capacity_blocks=DEFAULT_CAPACITY_BLOCKS, features=usb2.NO_FEATURES,
                 **kwargs):
        self._capacity = capacity_blocks
        # GET_INFO says it is the disk, so a host refuses a plain stream sweep in one line
        # instead of waiting out NAKs the data path will never end.
        super().__init__(features=usb2.Feature(features) | usb2.Feature.STORAGE, **kwargs)
        # Alternate 1 (UAS): its command and status pipes; its data pipes are EP_IN / EP_OUT.
        self.ep_status = StreamInEndpoint(endpoint_number=uas.EP_STATUS & 0x7F, buffer_packets=2)
        self.ep_command = StreamOutEndpoint(endpoint_number=uas.EP_COMMAND, buffer_packets=2)
        self.usb.add_endpoint(self.ep_status)
        self.usb.add_endpoint(self.ep_command)

    def _control_replies(self, features):
        descriptors = build_descriptors(product=STORAGE_PRODUCT, interface=bot.BOT_INTERFACE,
                                        uas_pipes=True)
        return ControlReplies(features=features, descriptors=descriptors)

    def _request_handler(self, features, replies):
        return StorageRequestHandler(features=features, replies=replies, alternates=2)

    def _data_path(self, features):
        return StorageDataPath(capacity_blocks=self._capacity)

    def elaborate(self, platform):
        m = super().elaborate(platform)
        requests = self.requests
        # A BOT reset also empties both endpoints' buffers: a CSW or data still queued belongs
        # to the command it abandons. (Assigned again after the probe's own: the last wins.)
        flush = requests.set_pattern | requests.set_data_mode | requests.bot_reset
        # SET_INTERFACE switches transports: what either had buffered is abandoned.
        flush = flush | requests.set_interface
        m.d.comb += [self.data_path.bot_reset.eq(requests.bot_reset),
                     # UAS's SENSE follows the host's ACK of the data (UasEngine).
                     self.data_path.in_acked.eq(self.ep_in.acked),
                     self.data_path.in_acked_length.eq(self.ep_in.acked_length),
                     self.data_path.out_acked.eq(self.ep_out.acked),
                     self.data_path.out_acked_length.eq(self.ep_out.acked_length),
                     self.ep_in.flush.eq(flush), self.ep_out.flush.eq(flush)]
        reset_toggle = (self.usb.reset_detected | self.control.interface.config_changed
                        | requests.set_interface)
        data_path, status, command = self.data_path, self.ep_status, self.ep_command
        m.d.comb += [
            data_path.alternate.eq(requests.alternate),
            data_path.set_interface.eq(requests.set_interface),
            status.flush.eq(flush), command.flush.eq(flush),
            status.reset_toggle.eq(reset_toggle), command.reset_toggle.eq(reset_toggle),
        ]
        wiring.connect(m, command.stream, data_path.command_out)
        wiring.connect(m, data_path.status_in, status.stream)
        return m
