"""The null disk's command engine: Bulk-Only Transport with the command block interpreted.

The framing is :class:`~.bot_framing.BotFraming`'s, as the pattern framer's
(:class:`~busprobe.gateware.common.bot.BotFramer`); what differs is the handler: a disk reads
the command block, so the data-in length is the answer's (or the READ's), a command can fail,
and the data come from a table or the LBA pattern. One engine for both buses: a byte a beat
behind the USB 2.0 endpoints, a word a beat (with ``keep``) behind the SuperSpeed ones, so the
data phase runs at 500 MB/s there.
"""

from amaranth import Cat, Mux, Signal
from amaranth.lib.wiring import In, Out
from busprobe.protocol.bot import CswStatus
from busprobe.protocol.storage import DEFAULT_CAPACITY_BLOCKS
from busprobe.protocol.usb2 import MAX_PACKET_SIZE

from .bot_framing import BotFraming, BotHandler, OutBeat, at_most, less_than
from .lba_pattern import LbaPattern
from .packet_stream import PacketStreamSignature
from .scsi_decode import Kind, ScsiDecode
from .storage_engine import StorageEngine, address_ahead

__all__ = ["ScsiBotEngine"]


class ScsiBotEngine(StorageEngine):
    """A SCSI null disk behind BOT, one command at a time, on the bulk endpoints' packet streams.

    A CBW (anything but a valid one gets a CSW of phase error, as
    :class:`~.bot_framing.BotFraming` answers it) is decoded in five cycles: the fields, the
    command in two steps (:class:`~.scsi_decode.ScsiDecode`, the decode UAS shares: answer,
    length, sense), the lengths compared, then the data phase against the host's (BOT §6.7's
    thirteen cases):

    - the host expects no data (Hn): the CSW at once; phase error if the command had data;
    - the command has none, failed, or its direction is not the host's: IN gets ``H`` zero
      bytes, OUT data are taken and dropped, the residue is ``H`` (phase error if the directions
      disagree): no STALL, so the driver never has a halt to clear;
    - both agree: ``min(H, D)`` bytes move; more than the device has (Hi > Di) ends with a short
      packet, as bridge chips end it, or, where the data end on a packet boundary, zeros up to
      ``H`` (a ZLP or a STALL would be the other choices); the residue is ``H - D``; fewer than
      the device has (H < D) is a phase error.

    A command that fails (unknown operation code, a CDB shorter than its group's, a LUN other
    than 0, an INQUIRY page it does not have, an LBA range past the capacity) ends with CSW
    status 1 and sets the sense the next REQUEST SENSE returns; any other command clears it.

    Every count is in bytes whatever the width: the CSW and table answers leave a word at a
    time, and the LBA pattern is generated and checked a beat at a time
    (:class:`~.lba_pattern.LbaPattern`).

    Attributes
    ----------
    reset: Signal(), input
        Strobe: Bulk-Only Mass Storage Reset: wait for a CBW, forgetting the command.
    out_packets: PacketStreamSignature(width), input
        From the bulk OUT endpoint.
    in_packets: PacketStreamSignature(width), output
        To the bulk IN endpoint (no cut-through: packets end where this says).
    read_address: Signal(range(replies.depth)), output
    read_data: Signal(32), input
        The replies RAM (a cycle's latency).
    capture: Signal(), output
        Strobe: snapshot the telemetry (the telemetry page was asked for).
    snapshot_ready: Signal(), input
    command, read, write, check, phase_error: Signal(), output
        Strobes: a CBW was taken; it was a READ / WRITE of ``blocks`` blocks; it failed (CHECK
        CONDITION); its CSW says phase error.
    blocks: Signal(32), output
    mismatch: Signal(), output
        Strobe: a written word was not the LBA pattern.
    waiting: Signal(), output
        Between a CSW and the next CBW (its cycles are the gap between commands).

    Parameters
    ----------
    replies: StorageReplies
        The answers (and the capacity they were built for).
    capacity_blocks: int
    width: int
        Bytes per beat of both packet streams: 1 (USB 2.0) or 4 (SuperSpeed).
    max_packet_size: int
        The bulk endpoints' wMaxPacketSize (a short packet ends an OUT data phase; an IN one
        that ends on a packet boundary short of the host's length is padded).
    """

    def __init__(self, *, replies=None, capacity_blocks=DEFAULT_CAPACITY_BLOCKS, width=1,
                 max_packet_size=MAX_PACKET_SIZE):
        if width not in (1, 4):
            raise ValueError(f"the BOT engine moves 1 or 4 bytes a beat, not {width}")
        self._width, self._max_packet = width, max_packet_size
        super().__init__({
            "out_packets": In(PacketStreamSignature(width)),
            "in_packets": Out(PacketStreamSignature(width)),
            "phase_error": Out(1),
        }, replies=replies, capacity_blocks=capacity_blocks)

    def _engine(self, m):
        framing = BotFraming(self.out_packets, self.in_packets, width=self._width,
                             max_packet_size=self._max_packet, domain="usb")
        m.submodules.pattern = pattern = LbaPattern(width=self._width)
        decode = ScsiDecode(replies=self._replies, capacity_blocks=self._capacity)
        m.d.comb += [self.waiting.eq(framing.waiting), self.phase_error.eq(framing.phase_error)]
        m.d.usb += [self.command.eq(0), self.read.eq(0), self.write.eq(0), self.check.eq(0),
                    self.mismatch.eq(0)]
        commands = _ScsiCommands(self, framing, decode, pattern)
        commands.read_replies(m)
        framing.elaborate(m, commands)


class _ScsiCommands(BotHandler):
    """The null disk's commands: decode, the §6.7 match of the host's data phase with the
    command's, the answer or the LBA pattern in, the LBA pattern checked out.

    Parameters
    ----------
    engine: ScsiBotEngine
        Whose ports (the replies RAM, the telemetry strobes) the handler drives.
    framing: BotFraming
    decode: ScsiDecode
    pattern: LbaPattern
    """

    def __init__(self, engine, framing, decode, pattern):
        self._engine, self._framing, self._decode, self._pattern = engine, framing, decode, pattern
        self._width, self._max_packet = engine._width, engine._max_packet
        longest = engine._replies.longest
        self._data_left = Signal(32)   # bytes of the command's own data still to move
        self._position = Signal(range(longest + self._width + 1))  # bytes of the answer so far
        self._word_bad = Signal()      # a byte of the LBA pattern word being written was wrong
        self._shorter, self._longer = Signal(), Signal()  # device_length <, > the host's
        self._agree = Signal()  # no data, or the host's direction is the command's

    def start(self, m):
        m.d.usb += self._engine.command.eq(1)
        m.next = "PLAN"

    def read_replies(self, m):
        """Drive the replies RAM's address: the answer's word at ``position``, a word ahead of
        the beat on the IN stream (the RAM has a cycle's latency)."""
        engine, decode, inp = self._engine, self._decode, self._engine.in_packets
        take = inp.valid & inp.ready
        m.d.comb += engine.read_address.eq(address_ahead(
            decode.word, self._position, self._width, take & (decode.kind == Kind.TABLE)))

    def states(self, m):
        engine, framing, decode = self._engine, self._framing, self._decode
        with m.State("PLAN"):
            decode.plan(m, cb=framing.cb, cdb_length=framing.field("cb_length", 8),
                        lun=framing.field("lun", 8), capture=engine.capture)
            m.next = "SETTLE"

        with m.State("SETTLE"):
            decode.settle(m)
            m.next = "MATCH"

        with m.State("MATCH"):
            # The lengths compared a cycle before PHASE uses them (from ``device_length``
            # through the compares and the residue's subtract was an ss timing path on
            # ECPIX-5, issue 44 item 7).
            host_length = framing.host_length
            kind = decode.kind
            device_in = (kind == Kind.TABLE) | (kind == Kind.READ)
            m.d.usb += [self._shorter.eq(decode.device_length < host_length),
                        self._longer.eq(decode.device_length > host_length),
                        self._agree.eq((decode.device_length == 0)
                                       | (framing.host_in == device_in))]
            m.next = "PHASE"

        with m.State("PHASE"):
            self._phase(m)

        with m.State("LOAD"):
            # The replies RAM reads the answer's first word (or the telemetry snapshot is
            # still being written): the data start a cycle after the address.
            with m.If(engine.snapshot_ready):
                m.next = "DATA_IN"

    def _phase(self, m):
        """Match the command's data phase to the host's (BOT §6.7) and start it."""
        sync, framing, decode, pattern = m.d.usb, self._framing, self._decode, self._pattern
        host_length, host_in = framing.host_length, framing.host_in
        kind, fail, device_length = decode.kind, decode.fail, decode.device_length
        # Registered in MATCH: from ``device_length`` through its 42-bit zero test into the
        # residue's subtract was the ECPIX-5 ``ss`` critical path (114.04 MHz, default seed).
        agree = self._agree
        moved = Mux(agree & self._shorter, device_length[:32], Mux(agree, host_length, 0))
        phase = ~agree | self._longer
        command_status = Mux(fail != 0, CswStatus.FAILED, CswStatus.PASSED)
        sync += [
            framing.status.eq(Mux(phase, CswStatus.PHASE_ERROR, command_status)),
            framing.residue.eq(host_length - moved), framing.excess.eq(host_length - moved),
            self._data_left.eq(moved), self._engine.check.eq(fail != 0),
            self._engine.blocks.eq(decode.blocks),
            self._engine.read.eq(kind == Kind.READ), self._engine.write.eq(kind == Kind.WRITE),
        ]
        m.d.comb += [pattern.start.eq(1), pattern.lba.eq(decode.lba)]
        with m.If(host_length == 0):
            sync += framing.residue.eq(0)
            m.next = "CSW"
        with m.Elif(host_in):
            # Data ending on a packet boundary short of H are padded with zeros to H: a short
            # packet cannot end them.
            packet_shift = (self._max_packet - 1).bit_length()
            pad = (moved < host_length) & (moved[:packet_shift] == 0)
            sync += framing.remaining.eq(Mux(pad, host_length, moved))
            m.next = "LOAD"
        with m.Else():
            sync += framing.remaining.eq(host_length)
            m.next = "DATA_OUT"

    def data_in(self, m, take, beat):
        # A beat is all data or all padding: padding starts on a packet boundary.
        engine, pattern, data_left = self._engine, self._pattern, self._data_left
        from_data = data_left != 0
        table = (engine.read_data.word_select(self._position[:2], 8) if self._width == 1
                 else engine.read_data)
        m.d.comb += pattern.advance.eq(take & from_data)
        with m.If(take):
            m.d.usb += self._position.eq(self._position + self._width)
            with m.If(from_data):
                m.d.usb += data_left.eq(data_left - beat)
        data = Mux(from_data, Mux(self._decode.kind == Kind.READ, pattern.data, table), 0)
        return 1, data

    def data_out(self, m, beat: OutBeat):
        sync, engine, pattern = m.d.usb, self._engine, self._pattern
        out, data_left, word_bad = engine.out_packets, self._data_left, self._word_bad
        checking = data_left != 0
        if self._width == 1:
            bad = out.payload.data != pattern.data
        else:
            # Only the bytes of the beat that are data of the command are checked.
            enable = Cat(*((out.payload.keep[i] & ~at_most(data_left, i)).replicate(8)
                           for i in range(self._width)))
            bad = ((out.payload.data ^ pattern.data) & enable) != 0
        # Its ready is always set: a beat is taken where it is valid.
        m.d.comb += pattern.advance.eq(out.valid & checking)
        with m.If(out.valid & checking):
            short = less_than(data_left, beat.count)
            sync += [data_left.eq(Mux(short, 0, data_left - beat.count)),
                     word_bad.eq(word_bad | bad)]
            with m.If(pattern.word_end):
                sync += [engine.mismatch.eq(word_bad | bad), word_bad.eq(0)]
        return 1

    def finish(self, m):
        m.d.usb += [self._position.eq(0), self._decode.kind.eq(Kind.NONE), self._word_bad.eq(0)]
