"""The null disk's USB Attached SCSI engine: alternate 1's four pipes, at high speed without
streams (:mod:`busprobe.protocol.uas`).

One command at a time (queue depth 1 inside the engine; the command endpoint's buffer holds
the IUs the host queues behind it, and they are taken in order). Per COMMAND IU: the shared
SCSI decode (:class:`~.scsi_decode.ScsiDecode`, the BOT engine's), then for a data phase READ
READY or WRITE READY with the tag on the status pipe, the data on the data pipes, then the SENSE
IU, once the host has ACKed every data byte (``in_acked`` / ``out_acked``): on a read not while
the data's last packets still wait in the IN endpoint's ring (UAS orders the SENSE after the
data, and the host's status poll would otherwise carry it ahead of them); on a write as soon as
the last OUT packet is ACKed, while the check still reads that packet out of the OUT endpoint's
buffer beside the status (a write's status does not depend on the check: mismatches are
counted, not reported), so the buffer's drain adds nothing to the command. A TASK MANAGEMENT IU
is answered with a RESPONSE IU; anything else on the command pipe with a RESPONSE IU of INVALID
INFORMATION UNIT.
"""

from amaranth import Cat, Const, Mux, Signal
from amaranth.lib.wiring import In, Out
from busprobe.protocol import scsi, uas, usb2
from busprobe.protocol.storage import DEFAULT_CAPACITY_BLOCKS

from ..common.lba_pattern import LbaPatternBytes
from ..common.packet_stream import PacketStreamSignature
from ..common.scsi_decode import Kind, ScsiDecode
from ..common.storage_engine import StorageEngine

__all__ = ["UasEngine"]


class UasEngine(StorageEngine):
    """A SCSI null disk behind UAS on the bulk endpoints' packet streams.

    Attributes
    ----------
    reset: Signal(), input
        Strobe: forget the command (SET_INTERFACE, a restart).
    command_packets: PacketStreamSignature(1), input
        From the command pipe's OUT endpoint.
    status_packets: PacketStreamSignature(1), output
        To the status pipe's IN endpoint: one IU per packet.
    in_packets: PacketStreamSignature(1), output
        To the data-in pipe.
    out_packets: PacketStreamSignature(1), input
        From the data-out pipe.
    read_address, read_data, capture, snapshot_ready, command, read, write, check, blocks,
    mismatch, waiting:
        As :class:`~.scsi_engine.ScsiBotEngine`'s (``waiting``: no command in the engine).
    task: Signal(), output
        Strobe: a TASK MANAGEMENT IU was answered.
    answered: Signal(), output
        Strobe: the engine is done with an IU (its SENSE or RESPONSE IU is sent).
    in_acked, out_acked: Signal(), input
        Strobe: the data-in (data-out) pipe had a packet ACKed (its endpoint's ``acked``),
        of ``in_acked_length`` (``out_acked_length``) bytes.
    in_acked_length, out_acked_length: Signal(range(MAX_PACKET_SIZE + 1)), input

    Parameters
    ----------
    replies: StorageReplies
    capacity_blocks: int
    """

    def __init__(self, *, replies=None, capacity_blocks=DEFAULT_CAPACITY_BLOCKS):
        super().__init__({
            "command_packets": In(PacketStreamSignature(1)),
            "status_packets": Out(PacketStreamSignature(1)),
            "in_packets": Out(PacketStreamSignature(1)),
            "out_packets": In(PacketStreamSignature(1)),
            "task": Out(1),
            "answered": Out(1),
            "in_acked": In(1),
            "in_acked_length": In(range(usb2.MAX_PACKET_SIZE + 1)),
            "out_acked": In(1),
            "out_acked_length": In(range(usb2.MAX_PACKET_SIZE + 1)),
        }, replies=replies, capacity_blocks=capacity_blocks)

    def _engine(self, m):
        sync = m.d.usb
        cmd, status_out, inp, out = (self.command_packets, self.status_packets, self.in_packets,
                                     self.out_packets)
        replies = self._replies
        m.submodules.pattern = pattern = LbaPatternBytes()
        # The write check has a pattern of its own: it may still read a write's last packet
        # out of the OUT buffer (LUNA's endpoint gives it up late) while the next command's
        # data already move, and a read must never wait for it.
        m.submodules.check_pattern = check_pattern = LbaPatternBytes()
        decode = ScsiDecode(replies=replies, capacity_blocks=self._capacity)
        kind, word = decode.kind, decode.word

        iu = Signal(8 * uas.COMMAND_SIZE)
        received = Signal(range(uas.COMMAND_SIZE + 2))
        tag, response = Signal(16), Signal(8)
        # The status IU being sent: its bytes, how many, which byte; then (SENSE of a CHECK
        # CONDITION) the sense block from the replies RAM.
        head, head_length, index = Signal(8 * uas.SENSE_HEADER_SIZE), Signal(5), Signal(5)
        then_data, then_sense = Signal(), Signal()
        remaining = Signal(42)
        # Data bytes the host has still to ACK, and (a write) bytes still to check.
        unacked, unchecked = Signal(42), Signal(42)
        position = Signal(range(max(replies.longest, scsi.SENSE_SIZE) + 1))
        word_bad = Signal()

        def iu_bytes(first, count=1):
            """Bytes of the IU received, big-endian."""
            return Cat(*(iu.word_select(first + count - 1 - i, 8) for i in range(count)))

        def cb(first, count=1):
            return iu_bytes(uas.COMMAND_OFFSETS["cdb"] + first, count)

        def byte(value):
            if isinstance(value, int):
                return Const(value, 8)
            wide = Signal(8)
            m.d.comb += wide.eq(value)
            return wide

        def send_head(raw_bytes, length):
            """Load the status IU ``raw_bytes`` (byte values, first first) to send."""
            m.d.usb += [head.eq(Cat(*(byte(b) for b in raw_bytes))), head_length.eq(length),
                        index.eq(0)]

        take = inp.valid & inp.ready
        m.d.comb += [
            self.read_address.eq(word + ((position + (take & (kind == Kind.TABLE))) >> 2)),
            self.waiting.eq(received == 0),
        ]
        sync += [self.command.eq(0), self.read.eq(0), self.write.eq(0), self.check.eq(0),
                 self.mismatch.eq(0), self.task.eq(0), self.answered.eq(0)]
        tag_bytes = [tag[8:16], tag[0:8]]

        writing = kind == Kind.WRITE
        acked = Mux(writing, self.out_acked, self.in_acked)
        acked_length = Mux(writing, self.out_acked_length, self.in_acked_length)
        with m.If(acked & (unacked != 0)):
            # Saturating: a host that sends more than the command's length ends it all the same.
            sync += unacked.eq(Mux(acked_length >= unacked, 0, unacked - acked_length))
        # The check of a write's data runs beside the FSM, so the SENSE need not wait for it.
        with m.If(unchecked != 0):
            bad = out.payload.data != check_pattern.byte
            m.d.comb += [out.ready.eq(1), check_pattern.advance.eq(out.valid)]
            with m.If(out.valid):
                sync += [unchecked.eq(unchecked - 1), word_bad.eq(word_bad | bad)]
                with m.If(check_pattern.word_end):
                    sync += [self.mismatch.eq(word_bad | bad), word_bad.eq(0)]

        with m.FSM(domain="usb"):
            with m.State("IU"):
                m.d.comb += cmd.ready.eq(1)
                with m.If(cmd.valid):
                    for offset in range(uas.COMMAND_SIZE):
                        with m.If(received == offset):
                            sync += iu.word_select(offset, 8).eq(cmd.payload.data)
                    with m.If(received <= uas.COMMAND_SIZE):
                        sync += received.eq(received + 1)
                    with m.If(cmd.payload.last):
                        m.next = "DECODE"

            with m.State("DECODE"):
                sync += [tag.eq(iu_bytes(2, 2)), then_data.eq(0), then_sense.eq(0),
                         position.eq(0)]
                iu_id, lun = iu_bytes(0), iu_bytes(uas.COMMAND_OFFSETS["lun"], 8)
                with m.If((iu_id == uas.IuId.COMMAND) & (received == uas.COMMAND_SIZE)):
                    decode.plan(m, cb=cb, cdb_length=16, lun=lun, capture=self.capture)
                    sync += self.command.eq(1)
                    m.next = "PLAN"
                with m.Elif((iu_id == uas.IuId.TASK_MANAGEMENT)
                            & (received == uas.TASK_SIZE)):
                    function = iu_bytes(uas.TASK_OFFSETS["function"])
                    # One command at a time: by the time its IU is read, the task an ABORT
                    # TASK names has completed or is still behind it in the command pipe; a
                    # LOGICAL UNIT RESET clears the sense held for REQUEST SENSE.
                    code = Mux(lun != 0, uas.ResponseCode.INCORRECT_LUN,
                               Mux((function == uas.TaskFunction.ABORT_TASK)
                                   | (function == uas.TaskFunction.LOGICAL_UNIT_RESET),
                                   uas.ResponseCode.TMF_COMPLETE,
                                   uas.ResponseCode.TMF_NOT_SUPPORTED))
                    sync += [response.eq(code), self.task.eq(1)]
                    with m.If((lun == 0) & (function == uas.TaskFunction.LOGICAL_UNIT_RESET)):
                        sync += decode.sense.eq(0)
                    m.next = "RESPONSE"
                with m.Else():
                    sync += response.eq(uas.ResponseCode.INVALID_INFO_UNIT)
                    m.next = "RESPONSE"

            with m.State("RESPONSE"):
                send_head([uas.IuId.RESPONSE, 0, *tag_bytes, 0, 0, 0, response],
                          uas.RESPONSE_SIZE)
                m.next = "STATUS"

            with m.State("PLAN"):
                has_data = decode.device_length != 0
                device_in = (kind == Kind.TABLE) | (kind == Kind.READ)
                failed = decode.fail != 0
                sync += [self.check.eq(failed), self.blocks.eq(decode.blocks),
                         self.read.eq(kind == Kind.READ), self.write.eq(kind == Kind.WRITE),
                         remaining.eq(decode.device_length), then_data.eq(has_data),
                         unacked.eq(decode.device_length)]
                m.d.comb += [pattern.start.eq(1), pattern.lba.eq(decode.lba)]
                with m.If(has_data):
                    ready = Mux(device_in, uas.IuId.READ_READY, uas.IuId.WRITE_READY)
                    send_head([ready, 0, *tag_bytes], uas.READY_SIZE)
                    m.next = "STATUS"
                with m.Else():
                    m.next = "SENSE"

            with m.State("SENSE"):
                failed = decode.fail != 0
                status = Mux(failed, uas.Status.CHECK_CONDITION, uas.Status.GOOD)
                length = Mux(failed, scsi.SENSE_SIZE, 0)
                send_head([uas.IuId.SENSE, 0, *tag_bytes, 0, 0, status, 0, 0, 0, 0, 0, 0, 0,
                           0, length], uas.SENSE_HEADER_SIZE)
                # The sense block REQUEST SENSE would return (5 words apart, as the decode's).
                sync += [then_sense.eq(failed), then_data.eq(0), position.eq(0),
                         word.eq(replies.sense[0].word + (decode.fail << 2) + decode.fail),
                         remaining.eq(scsi.SENSE_SIZE)]
                m.next = "STATUS"

            with m.State("STATUS"):
                final = (index == head_length - 1) & ~then_sense
                m.d.comb += [status_out.valid.eq(1),
                             status_out.payload.data.eq(head.word_select(index, 8)),
                             status_out.payload.last.eq(final)]
                with m.If(status_out.ready):
                    sync += index.eq(index + 1)
                    with m.If(index == head_length - 1):
                        with m.If(then_sense):
                            m.next = "SENSE_LOAD"
                        with m.Elif(then_data & (kind == Kind.WRITE)):
                            m.next = "OUT_START"
                        with m.Elif(then_data):
                            m.next = "LOAD"
                        with m.Else():
                            m.next = "DONE"

            with m.State("SENSE_LOAD"):
                m.next = "SENSE_DATA"

            with m.State("SENSE_DATA"):
                m.d.comb += [status_out.valid.eq(1),
                             status_out.payload.data.eq(
                                 self.read_data.word_select(position[:2], 8)),
                             status_out.payload.last.eq(remaining == 1),
                             self.read_address.eq(
                                 word + ((position + status_out.ready) >> 2))]
                with m.If(status_out.ready):
                    sync += [position.eq(position + 1), remaining.eq(remaining - 1)]
                    with m.If(remaining == 1):
                        m.next = "DONE"

            with m.State("LOAD"):
                with m.If(self.snapshot_ready):
                    m.next = "DATA_IN"

            with m.State("DATA_IN"):
                table_byte = self.read_data.word_select(position[:2], 8)
                m.d.comb += [
                    inp.valid.eq(1),
                    inp.payload.data.eq(Mux(kind == Kind.READ, pattern.byte, table_byte)),
                    inp.payload.last.eq(remaining == 1),
                    pattern.advance.eq(take),
                ]
                with m.If(take):
                    sync += [position.eq(position + 1), remaining.eq(remaining - 1)]
                    with m.If(remaining == 1):
                        m.next = "DATA_ACKED"

            with m.State("DATA_ACKED"):
                with m.If(unacked == 0):
                    m.next = "SENSE"

            with m.State("OUT_START"):
                # WRITE READY is out; the check takes this command's data once it has read
                # the last write's (the OUT buffer keeps them in order).
                with m.If(unchecked == 0):
                    m.d.comb += [check_pattern.start.eq(1), check_pattern.lba.eq(decode.lba)]
                    sync += [unchecked.eq(remaining), word_bad.eq(0)]
                    m.next = "DATA_OUT"

            with m.State("DATA_OUT"):
                # Every OUT byte ACKed: the SENSE goes while the check still reads them.
                with m.If(unacked == 0):
                    m.next = "SENSE"

            with m.State("DONE"):
                # (word_bad is the check's, which may still be running: OUT_START clears it.)
                sync += [iu.eq(0), received.eq(0), kind.eq(Kind.NONE), then_data.eq(0),
                         then_sense.eq(0), position.eq(0), self.answered.eq(1)]
                m.next = "IU"

