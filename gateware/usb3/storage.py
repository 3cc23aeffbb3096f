"""The storage personality of the SuperSpeed device: a SCSI null disk over Bulk-Only Transport.

The probe device (:class:`~.device.Usb3ProbeDevice`) with its interface said to be mass storage
(class 08, subclass 06, protocol 0x50), the BOT class requests on EP0, and the USB 2.0 disk's
:class:`~busprobe.gateware.common.scsi_engine.ScsiBotEngine` (the same decode, answers, LBA
pattern and telemetry) between the bursting bulk endpoints, a word a cycle: 500 MB/s in the
``ss`` domain, above the link's 477, so the disk is never the bottleneck. The vendor requests
stay, so the SuperSpeed telemetry (bytes, bursts, NumP, the timing window) reads as for the
probe; its ``pattern_errors`` word counts written words that were not the LBA pattern.
"""

from amaranth import Const, DomainRenamer, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import bot, usb3
from busprobe.protocol.patterns import NO_ERROR_OFFSET
from busprobe.protocol.storage import DEFAULT_CAPACITY_BLOCKS
from usb_protocol.types import USBRequestRecipient

from ..common.packet_stream import PacketStreamSignature
from ..common.pattern import PATTERN_SHAPE
from ..common.scsi_engine import ScsiBotEngine
from ..common.storage_replies import StorageReplies
from ..common.storage_telemetry import ENGINE_EVENTS, StorageTelemetry
from .descriptors import build_descriptors
from .device import Usb3ProbeDevice
from .request_handler import SuperSpeedProbeRequestHandler

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
        Strobe: SET_INTERFACE or SET_CONFIGURATION restarted both endpoints (so the engine).
    engine: ScsiBotEngine
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
    to_in: Out(PacketStreamSignature(WORD_BYTES))
    in_framed: Out(1)
    from_out: In(PacketStreamSignature(WORD_BYTES))
    pattern_errors: Out(32)
    first_error_offset: Out(32)

    def __init__(self, *, capacity_blocks=DEFAULT_CAPACITY_BLOCKS):
        super().__init__()
        replies = StorageReplies(capacity_blocks)
        self.engine = ScsiBotEngine(replies=replies, capacity_blocks=capacity_blocks,
                                    width=WORD_BYTES, max_packet_size=usb3.MAX_PACKET_SIZE)
        self.telemetry = StorageTelemetry(replies=replies)

    def elaborate(self, platform):
        m = Module()
        engine, telemetry = self.engine, self.telemetry
        # The engine and its telemetry are written for the USB 2.0 clock's name.
        m.submodules.engine = DomainRenamer({"usb": "ss"})(engine)
        m.submodules.telemetry = DomainRenamer({"usb": "ss"})(telemetry)
        reset = self.bot_reset | self.restart | self.set_interface
        # OUT beats reach the engine from a register: from the OUT endpoint's buffer RAM through
        # the beat's byte count into the engine's length registers was the ss clock's critical
        # path on ECPIX-5 (123.58 MHz, nextpnr default seed). A cycle of latency; a beat a cycle.
        held = Signal()
        beat = Signal.like(self.from_out.payload)
        out = engine.out_packets
        m.d.comb += [self.from_out.ready.eq(~held | out.ready),
                     out.valid.eq(held), out.payload.eq(beat)]
        with m.If(self.from_out.ready):
            m.d.ss += [held.eq(self.from_out.valid), beat.eq(self.from_out.payload)]
        with m.If(reset):
            m.d.ss += held.eq(0)
        wiring.connect(m, engine.in_packets, wiring.flipped(self.to_in))
        m.d.comb += [
            self.in_framed.eq(1),
            engine.reset.eq(reset),
            telemetry.clear.eq(self.clear),
            telemetry.capture.eq(engine.capture),
            engine.snapshot_ready.eq(telemetry.ready),
            telemetry.read_address.eq(engine.read_address),
            engine.read_data.eq(telemetry.read_data),
            telemetry.phase_error.eq(engine.phase_error),
            self.pattern_errors.eq(telemetry.mismatches),
            self.first_error_offset.eq(Const(NO_ERROR_OFFSET, 32)),
        ]
        for name in ENGINE_EVENTS:
            m.d.comb += getattr(telemetry, name).eq(getattr(engine, name))
        return m


class Usb3StorageDevice(Usb3ProbeDevice):
    """The ``usb3-storage`` design: the SCSI null disk over BOT at SuperSpeed (issue 28 part 4).

    Parameters
    ----------
    capacity_blocks: int
        Blocks the disk reports (default 64 GiB of 512-byte blocks; nothing is stored).
    (the rest as :class:`~.device.Usb3ProbeDevice`'s)
    """

    def __init__(self, *, capacity_blocks=DEFAULT_CAPACITY_BLOCKS, **kwargs):
        self._capacity = capacity_blocks
        super().__init__(**kwargs)

    def _descriptors(self):
        return build_descriptors(product=usb3.STORAGE_PRODUCT, interface=bot.BOT_INTERFACE)

    def _request_handler(self):
        # GET_INFO says it is the disk, so a host refuses a stream sweep in one line.
        return SuperSpeedStorageRequestHandler(features=usb3.Feature.STORAGE)

    def _data_path(self):
        return Usb3StorageDataPath(capacity_blocks=self._capacity)

    def elaborate(self, platform):
        m = super().elaborate(platform)
        requests, standard, registered = self.requests, self.standard, self._registered
        both_restart = Signal()
        m.d.comb += [both_restart.eq(standard.restart_in & standard.restart_out),
                     requests.configured.eq(self.core.configuration != 0)]
        bot_reset = registered(requests.bot_reset)
        # A BOT reset also empties both endpoints: a CSW or data still buffered belongs to the
        # command it abandons. (Assigned again after the probe's own: the last wins.)
        flush = registered(requests.set_pattern) | bot_reset
        m.d.comb += [self.data_path.bot_reset.eq(bot_reset),
                     self.data_path.set_interface.eq(registered(both_restart)),
                     self.endpoint_in.flush.eq(flush), self.endpoint_out.flush.eq(flush)]
        return m
