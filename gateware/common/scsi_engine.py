"""The null disk's command engine: Bulk-Only Transport with the command block interpreted.

:class:`~busprobe.gateware.common.bot.BotFramer` moves pattern bytes for any CBW and never reads
the command block; a disk must: the data-in length is the answer's (or the READ's), a command
can fail, and the data come from a table or the LBA pattern. The framing here is the same BOT
(:mod:`busprobe.protocol.bot`), one command at a time, with the SCSI decode between CBW and data.
One engine for both buses: a byte a beat behind the USB 2.0 endpoints, a word a beat (with
``keep``) behind the SuperSpeed ones, so the data phase runs at 500 MB/s there.
"""

from amaranth import Cat, Const, Mux, Signal
from amaranth.lib.wiring import In, Out
from busprobe.protocol.bot import (
    CBW_OFFSETS,
    CBW_SIGNATURE,
    CBW_SIZE,
    CSW_SIGNATURE,
    CSW_SIZE,
    CswStatus,
)
from busprobe.protocol.storage import DEFAULT_CAPACITY_BLOCKS
from busprobe.protocol.usb2 import MAX_PACKET_SIZE

from .lba_pattern import LbaPattern
from .packet_stream import PacketStreamSignature
from .scsi_decode import Kind, ScsiDecode
from .storage_engine import StorageEngine

__all__ = ["ScsiBotEngine"]


class ScsiBotEngine(StorageEngine):
    """A SCSI null disk behind BOT, one command at a time, on the bulk endpoints' packet streams.

    A CBW (an OUT packet of 31 bytes with ``USBC``; anything else gets a CSW of phase error, as
    :class:`~busprobe.gateware.common.bot.BotFramer` answers it) is decoded in three cycles:
    the fields, the command (:class:`~.scsi_decode.ScsiDecode`, the decode UAS shares: answer,
    length, sense), then the data phase against the host's (BOT §6.7's thirteen cases):

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

    Every count is in bytes whatever the width: a beat of ``width`` bytes carries ``keep`` (the
    last one of a packet may be partial), the CBW is taken from whole beats of its packet, the
    CSW and table answers leave a word at a time, and the LBA pattern is generated and checked
    a beat at a time (:class:`~.lba_pattern.LbaPattern`).

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

    def _beat_bytes(self, stream):
        """Bytes in the beat on ``stream``: ``keep``'s low bits set (1 at a byte a beat)."""
        if self._width == 1:
            return 1
        keep = stream.payload.keep
        return sum(keep[i] for i in range(self._width))

    @staticmethod
    def _small(value, limit, *, equal):
        """``value <= limit`` (``equal``) or ``value < limit`` for a wide ``value`` and a
        ``limit`` below 8: the high bits zero and a 3-bit compare. (A 32-bit compare against a
        beat's byte count was the ECP5 ``ss`` clock's critical path, through the carry chain.)"""
        low = value[:3]
        return (value[3:] == 0) & ((low <= limit) if equal else (low < limit))

    def _keep(self, stream, count):
        """Drive ``stream``'s ``keep`` for a beat of ``min(count, width)`` bytes."""
        if self._width == 1:
            return []
        whole = (1 << self._width) - 1
        keep = whole
        for n in range(self._width - 1, 0, -1):
            keep = Mux(count == n, (1 << n) - 1, keep)
        return [stream.payload.keep.eq(keep)]

    def _engine(self, m):
        sync = m.d.usb
        out, inp = self.out_packets, self.in_packets
        replies, width, max_packet = self._replies, self._width, self._max_packet
        m.submodules.pattern = pattern = LbaPattern(width=width)

        cbw_beats = -(-CBW_SIZE // width)
        cbw = Signal(8 * width * cbw_beats)
        received = Signal(range(CBW_SIZE + width + 2))
        tag, host_length, residue = Signal(32), Signal(32), Signal(32)
        host_in, status = Signal(), Signal(8)
        decode = ScsiDecode(replies=replies, capacity_blocks=self._capacity)
        kind, fail, word = decode.kind, decode.fail, decode.word
        device_length, lba, blocks = decode.device_length, decode.lba, decode.blocks
        remaining, data_left, excess = Signal(32), Signal(32), Signal(32)
        position = Signal(range(replies.longest + width + 1))
        packet_bytes = Signal(range(max_packet + width + 1))
        csw_beats = -(-CSW_SIZE // width)
        csw_index = Signal(range(csw_beats))
        word_bad, seen = Signal(), Signal()

        def field(name, width=32):
            return cbw[8 * CBW_OFFSETS[name]:][:width]

        def cb(first, count=1):
            """Bytes ``first..first+count`` of the command block, big-endian."""
            base = CBW_OFFSETS["cb"]
            return Cat(*(cbw.word_select(base + first + count - 1 - i, 8) for i in range(count)))

        take = inp.valid & inp.ready
        # The replies RAM is read a word ahead of the beat on the IN stream.
        ahead = Mux(take & (kind == Kind.TABLE), width, 0)
        m.d.comb += [
            self.read_address.eq(word + ((position + ahead) >> 2)),
            self.waiting.eq(seen & (received == 0)),
        ]
        sync += [self.command.eq(0), self.read.eq(0), self.write.eq(0), self.check.eq(0),
                 self.phase_error.eq(0), self.mismatch.eq(0)]

        with m.FSM(domain="usb"):
            with m.State("CBW"):
                m.d.comb += out.ready.eq(1)
                with m.If(out.valid):
                    # Whole beats from the packet's start: a CBW's bytes are its first 31.
                    for beat in range(cbw_beats):
                        with m.If(received == beat * width):
                            sync += cbw.word_select(beat, 8 * width).eq(out.payload.data)
                    with m.If(received <= CBW_SIZE):
                        sync += received.eq(received + self._beat_bytes(out))
                    with m.If(out.payload.last):
                        m.next = "DECODE"

            with m.State("DECODE"):
                sync += [tag.eq(field("tag")), host_length.eq(field("data_transfer_length")),
                         host_in.eq(field("flags", 8)[7]), seen.eq(1)]
                with m.If((received == CBW_SIZE) & (field("signature") == CBW_SIGNATURE)):
                    sync += self.command.eq(1)
                    m.next = "PLAN"
                with m.Else():
                    sync += [residue.eq(field("data_transfer_length")),
                             status.eq(CswStatus.PHASE_ERROR)]
                    m.next = "CSW"

            with m.State("PLAN"):
                decode.plan(m, cb=cb, cdb_length=field("cb_length", 8), lun=field("lun", 8),
                            capture=self.capture)
                m.next = "PHASE"

            with m.State("PHASE"):
                self._phase(m, kind, fail, device_length, host_length, host_in, status, residue,
                            remaining, data_left, excess, lba, blocks, pattern)

            with m.State("LOAD"):
                # The replies RAM reads the answer's first word (or the telemetry snapshot is
                # still being written): the data start a cycle after the address.
                with m.If(self.snapshot_ready):
                    m.next = "DATA_IN"

            with m.State("DATA_IN"):
                # A beat is all data or all padding: padding starts on a packet boundary.
                from_data = data_left != 0
                ending = self._small(remaining, width, equal=True)
                beat = Mux(self._small(remaining, width, equal=False), remaining, width)
                table = (self.read_data.word_select(position[:2], 8) if width == 1
                         else self.read_data)
                m.d.comb += [
                    inp.valid.eq(1),
                    inp.payload.data.eq(Mux(from_data, Mux(kind == Kind.READ, pattern.data,
                                                            table), 0)),
                    inp.payload.last.eq(ending),
                    pattern.advance.eq(take & from_data),
                    *self._keep(inp, remaining),
                ]
                with m.If(take):
                    sync += [position.eq(position + width), remaining.eq(remaining - beat)]
                    with m.If(from_data):
                        sync += data_left.eq(data_left - beat)
                    with m.If(ending):
                        m.next = "CSW"

            with m.State("DATA_OUT"):
                checking = data_left != 0
                count = self._beat_bytes(out)
                over = self._small(remaining, count, equal=False)  # bytes past the host's H
                reached = self._small(remaining, count, equal=True)
                left = remaining - count
                packet_end = packet_bytes + count
                short_end = out.payload.last & (packet_end < max_packet)
                if width == 1:
                    bad = out.payload.data != pattern.data
                else:
                    # Only the bytes of the beat that are data of the command are checked.
                    enable = Cat(*((out.payload.keep[i]
                                    & ~self._small(data_left, i, equal=True)).replicate(8)
                                   for i in range(width)))
                    bad = ((out.payload.data ^ pattern.data) & enable) != 0
                m.d.comb += [out.ready.eq(1), pattern.advance.eq(out.valid & checking)]
                with m.If(out.valid):
                    sync += [remaining.eq(Mux(over, 0, left)), packet_bytes.eq(packet_end)]
                    with m.If(checking):
                        short = self._small(data_left, count, equal=False)
                        sync += [data_left.eq(Mux(short, 0, data_left - count)),
                                 word_bad.eq(word_bad | bad)]
                        with m.If(pattern.word_end):
                            sync += [self.mismatch.eq(word_bad | bad), word_bad.eq(0)]
                    with m.If(out.payload.last):
                        sync += packet_bytes.eq(0)
                    with m.If(over):
                        sync += status.eq(CswStatus.PHASE_ERROR)
                    with m.If(reached & ~out.payload.last):
                        m.next = "DRAIN"
                    with m.Elif(reached | short_end):
                        m.next = "RESIDUE"

            with m.State("RESIDUE"):
                # What the host's length left over (0 once it was reached), or the excess of
                # its length over the device's, whichever is more: a cycle after the data, so
                # the compare is not behind the OUT endpoint's valid.
                sync += residue.eq(Mux(remaining > excess, remaining, excess))
                m.next = "CSW"

            with m.State("DRAIN"):
                # The host sent more than its CBW said: the rest of the packet goes nowhere.
                m.d.comb += out.ready.eq(1)
                with m.If(out.valid):
                    sync += status.eq(CswStatus.PHASE_ERROR)
                    with m.If(out.payload.last):
                        sync += packet_bytes.eq(0)
                        m.next = "CSW"

            with m.State("CSW"):
                csw = Cat(Const(CSW_SIGNATURE, 32), tag, residue, status)
                final = csw_index == csw_beats - 1
                m.d.comb += [
                    inp.valid.eq(1),
                    inp.payload.data.eq(csw.word_select(csw_index, 8 * width)),
                    inp.payload.last.eq(final),
                    *self._keep(inp, Mux(final, CSW_SIZE - (csw_beats - 1) * width, width)),
                ]
                with m.If(inp.ready):
                    sync += csw_index.eq(csw_index + 1)
                    with m.If(csw_index == 0):
                        sync += self.phase_error.eq(status == CswStatus.PHASE_ERROR)
                    with m.If(final):
                        sync += [csw_index.eq(0), cbw.eq(0), received.eq(0), position.eq(0),
                                 kind.eq(Kind.NONE), word_bad.eq(0)]
                        m.next = "CBW"

    def _phase(self, m, kind, fail, device_length, host_length, host_in, status, residue,
               remaining, data_left, excess, lba, blocks, pattern):
        """Match the command's data phase to the host's (BOT §6.7) and start it."""
        sync = m.d.usb
        device_in = (kind == Kind.TABLE) | (kind == Kind.READ)
        no_data = device_length == 0
        agree = no_data | (host_in == device_in)
        moved = Mux(agree & (device_length < host_length), device_length[:32],
                    Mux(agree, host_length, 0))
        phase = ~agree | (device_length > host_length)
        command_status = Mux(fail != 0, CswStatus.FAILED, CswStatus.PASSED)
        sync += [
            status.eq(Mux(phase, CswStatus.PHASE_ERROR, command_status)),
            residue.eq(host_length - moved), excess.eq(host_length - moved),
            data_left.eq(moved), self.check.eq(fail != 0), self.blocks.eq(blocks),
            self.read.eq(kind == Kind.READ), self.write.eq(kind == Kind.WRITE),
        ]
        m.d.comb += [pattern.start.eq(1), pattern.lba.eq(lba)]
        with m.If(host_length == 0):
            sync += residue.eq(0)
            m.next = "CSW"
        with m.Elif(host_in):
            # Data ending on a packet boundary short of H are padded with zeros to H: a short
            # packet cannot end them.
            packet_shift = (self._max_packet - 1).bit_length()
            pad = (moved < host_length) & (moved[:packet_shift] == 0)
            sync += remaining.eq(Mux(pad, host_length, moved))
            m.next = "LOAD"
        with m.Else():
            sync += remaining.eq(host_length)
            m.next = "DATA_OUT"
