"""The null disk's command engine: Bulk-Only Transport with the command block interpreted.

:class:`~busprobe.gateware.common.bot.BotFramer` moves pattern bytes for any CBW and never reads
the command block; a disk must: the data-in length is the answer's (or the READ's), a command
can fail, and the data come from a table or the LBA pattern. The framing here is the same BOT
(:mod:`busprobe.protocol.bot`), one command at a time, with the SCSI decode between CBW and data.
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

from ..common.lba_pattern import LbaPatternBytes
from ..common.packet_stream import PacketStreamSignature
from .scsi_decode import Kind, ScsiDecode
from .storage_engine import StorageEngine

__all__ = ["ScsiBotEngine"]

_PACKET_SHIFT = (MAX_PACKET_SIZE - 1).bit_length()


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

    Attributes
    ----------
    reset: Signal(), input
        Strobe: Bulk-Only Mass Storage Reset: wait for a CBW, forgetting the command.
    out_packets: PacketStreamSignature(1), input
        From the bulk OUT endpoint.
    in_packets: PacketStreamSignature(1), output
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
    """

    def __init__(self, *, replies=None, capacity_blocks=DEFAULT_CAPACITY_BLOCKS):
        super().__init__({
            "out_packets": In(PacketStreamSignature(1)),
            "in_packets": Out(PacketStreamSignature(1)),
            "phase_error": Out(1),
        }, replies=replies, capacity_blocks=capacity_blocks)

    def _engine(self, m):
        sync = m.d.usb
        out, inp = self.out_packets, self.in_packets
        replies = self._replies
        m.submodules.pattern = pattern = LbaPatternBytes()

        cbw = Signal(8 * CBW_SIZE)
        received = Signal(range(CBW_SIZE + 2))
        tag, host_length, residue = Signal(32), Signal(32), Signal(32)
        host_in, status = Signal(), Signal(8)
        decode = ScsiDecode(replies=replies, capacity_blocks=self._capacity)
        kind, fail, word = decode.kind, decode.fail, decode.word
        device_length, lba, blocks = decode.device_length, decode.lba, decode.blocks
        remaining, data_left, excess = Signal(32), Signal(32), Signal(32)
        position = Signal(range(replies.longest + 1))
        packet_bytes = Signal(range(MAX_PACKET_SIZE + 2))
        csw_index = Signal(range(CSW_SIZE))
        word_bad, seen = Signal(), Signal()

        def field(name, width=32):
            return cbw[8 * CBW_OFFSETS[name]:][:width]

        def cb(first, count=1):
            """Bytes ``first..first+count`` of the command block, big-endian."""
            base = CBW_OFFSETS["cb"]
            return Cat(*(cbw.word_select(base + first + count - 1 - i, 8) for i in range(count)))

        take = inp.valid & inp.ready
        m.d.comb += [
            self.read_address.eq(word + ((position + (take & (kind == Kind.TABLE))) >> 2)),
            self.waiting.eq(seen & (received == 0)),
        ]
        sync += [self.command.eq(0), self.read.eq(0), self.write.eq(0), self.check.eq(0),
                 self.phase_error.eq(0), self.mismatch.eq(0)]

        with m.FSM(domain="usb"):
            with m.State("CBW"):
                m.d.comb += out.ready.eq(1)
                with m.If(out.valid):
                    for offset in range(CBW_SIZE):
                        with m.If(received == offset):
                            sync += cbw.word_select(offset, 8).eq(out.payload.data)
                    with m.If(received <= CBW_SIZE):
                        sync += received.eq(received + 1)
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
                from_data = data_left != 0
                table_byte = self.read_data.word_select(position[:2], 8)
                m.d.comb += [
                    inp.valid.eq(1),
                    inp.payload.data.eq(Mux(from_data, Mux(kind == Kind.READ, pattern.byte,
                                                            table_byte), 0)),
                    inp.payload.last.eq(remaining == 1),
                    pattern.advance.eq(take & from_data),
                ]
                with m.If(take):
                    sync += [position.eq(position + 1), remaining.eq(remaining - 1)]
                    with m.If(from_data):
                        sync += data_left.eq(data_left - 1)
                    with m.If(remaining == 1):
                        m.next = "CSW"

            with m.State("DATA_OUT"):
                checking = data_left != 0
                left = remaining - 1
                packet_end = packet_bytes + 1
                short_end = out.payload.last & (packet_end < MAX_PACKET_SIZE)
                bad = out.payload.data != pattern.byte
                m.d.comb += [out.ready.eq(1), pattern.advance.eq(out.valid & checking)]
                with m.If(out.valid):
                    sync += [remaining.eq(left), packet_bytes.eq(packet_end)]
                    with m.If(checking):
                        sync += [data_left.eq(data_left - 1), word_bad.eq(word_bad | bad)]
                        with m.If(pattern.word_end):
                            sync += [self.mismatch.eq(word_bad | bad), word_bad.eq(0)]
                    with m.If(out.payload.last):
                        sync += packet_bytes.eq(0)
                    with m.If((left == 0) & ~out.payload.last):
                        m.next = "DRAIN"
                    with m.Elif((left == 0) | short_end):
                        sync += residue.eq(Mux(left > excess, left, excess))
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
                final = csw_index == CSW_SIZE - 1
                m.d.comb += [inp.valid.eq(1), inp.payload.data.eq(csw.word_select(csw_index, 8)),
                             inp.payload.last.eq(final)]
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
            pad = (moved < host_length) & (moved[:_PACKET_SHIFT] == 0)
            sync += remaining.eq(Mux(pad, host_length, moved))
            m.next = "LOAD"
        with m.Else():
            sync += remaining.eq(host_length)
            m.next = "DATA_OUT"
