"""The null disk's USB Attached SCSI engine: alternate 1's four pipes (:mod:`busprobe.protocol.
uas`), a byte a beat at high speed (READ READY / WRITE READY, no streams) or a word a beat at
SuperSpeed (bulk streams: no READY IUs).

The command pipe feeds the task set (:class:`~busprobe.gateware.common.uas_queue.UasTaskSet`):
up to :data:`~busprobe.protocol.uas.TASK_SET_DEPTH` commands outstanding, task management
carried out as it arrives, TASK SET FULL and OVERLAPPED TAG ATTEMPTED answered there. The engine
executes one command at a time, the one the task set chooses, and between commands sends the
task set's replies. Per command: the shared SCSI decode (:class:`~.scsi_decode.ScsiDecode`, the
BOT engine's), then for a data phase READ READY or WRITE READY with the tag on the status pipe,
the data on the data pipes, then the SENSE IU, once the host has ACKed every data byte
(``in_acked`` / ``out_acked``): on a read not while the data's last packets still wait in the IN
endpoint's ring (UAS orders the SENSE after the data, and the host's status poll would otherwise
carry it ahead of them); on a write as soon as the last OUT packet is ACKed, while the check
still reads that packet out of the OUT endpoint's buffer beside the status (a write's status
does not depend on the check: mismatches are counted, not reported), so the buffer's drain adds
nothing to the command.
"""

from amaranth import Cat, Const, Mux, Signal
from amaranth.lib.wiring import In, Out
from busprobe.protocol import scsi, uas, usb2
from busprobe.protocol.storage import DEFAULT_CAPACITY_BLOCKS

from .bot_framing import at_most, less_than
from .lba_pattern import LbaPattern
from .packet_stream import PacketStreamSignature
from .scsi_decode import Kind, ScsiDecode
from .storage_engine import StorageEngine, address_ahead
from .uas_queue import UasTaskSet

__all__ = ["UasEngine"]


class UasEngine(StorageEngine):
    """A SCSI null disk behind UAS on the bulk endpoints' packet streams, ``width`` bytes a beat.

    Attributes
    ----------
    reset: Signal(), input
        Strobe: forget the commands (SET_INTERFACE, a restart).
    command_packets: PacketStreamSignature(width), input
        From the command pipe's OUT endpoint.
    status_packets: PacketStreamSignature(width), output
        To the status pipe's IN endpoint: one IU per packet.
    in_packets: PacketStreamSignature(width), output
        To the data-in pipe.
    out_packets: PacketStreamSignature(width), input
        From the data-out pipe.
    read_address, read_data, capture, snapshot_ready, command, read, write, check, blocks,
    mismatch, waiting:
        As :class:`~.scsi_engine.ScsiBotEngine`'s (``waiting``: no command in the engine).
    tag: Signal(16), output
        The tag of the command executing or of the reply being sent (with bulk streams, the
        stream its status and data pipes select).
    data_in, data_out, status: Signal(), output
        The engine has data for the data-in pipe, takes data from the data-out pipe, sends an
        IU on the status pipe (for ``tag``).
    outstanding: Signal(range(TASK_SET_DEPTH + 1)), output
        Commands in the task set, queued or executing.
    task_set_full, overlapped, aborted, bad_tag: Signal(), output
        The task set's strobes (:class:`~.uas_queue.UasTaskSet`).
    in_acked, out_acked: Signal(), input
        Strobe (with ``acked``): the data-in (data-out) pipe had a packet ACKed (its
        endpoint's ``acked``), of ``in_acked_length`` (``out_acked_length``) bytes.
    in_acked_length, out_acked_length: Signal(range(max_packet_size + 1)), input
    out_started: Signal(), input
        Strobe: a data packet for the data-out pipe began to arrive (taken, in sequence).
    status_soon: Signal(), output
        A write's last data packet is arriving (its SENSE follows that packet's ACK): the
        status pipe may select the tag's stream now, and hold the host's ACK TP asking for
        the SENSE until it is there. (With ``out_acked`` only: it is what the SENSE waits for.)

    Parameters
    ----------
    replies: StorageReplies
    capacity_blocks: int
    width: int
        Bytes a beat of every packet stream: 1 (high speed) or 4 (SuperSpeed).
    max_packet_size: int
    ready_ius: bool
        Announce each command's data with READ READY / WRITE READY (high speed); without them
        (bulk streams) the data pipe's stream of the tag is the announcement.
    acked: tuple of "in", "out"
        The directions whose SENSE waits for the host's ACK of every data byte (``in_acked``/
        ``out_acked``); in the others, for the last data beat handed to the data-in pipe's
        endpoint (read) or taken by the check from the data-out pipe's (write). SuperSpeed
        takes ``("out",)``: a read's SENSE goes on its own stream, and the host completes the
        command when both its transfers are in, so only a write has a reason to wait (the check
        reading the last packet out of the OUT buffer is 256 cycles the host would see).
    max_tag: int or None
        With bulk streams, the streams the host can allocate: the task set drops IUs whose tag
        names none (:class:`~.uas_queue.UasTaskSet`); None without streams.
    """

    def __init__(self, *, replies=None, capacity_blocks=DEFAULT_CAPACITY_BLOCKS, width=1,
                 max_packet_size=usb2.MAX_PACKET_SIZE, ready_ius=True, acked=("in", "out"),
                 max_tag=None):
        if width not in (1, 4):
            raise ValueError(f"the UAS engine moves 1 or 4 bytes a beat, not {width}")
        if not set(acked) <= {"in", "out"}:
            raise ValueError(f"acked names directions 'in' and 'out', not {acked!r}")
        if max_packet_size & (max_packet_size - 1):
            raise ValueError(f"a bulk packet is a power of two bytes, not {max_packet_size}")
        self._width, self._ready_ius, self._max_tag = width, ready_ius, max_tag
        self._packet_bits = max_packet_size.bit_length() - 1
        self._acked_in, self._acked_out = "in" in acked, "out" in acked
        super().__init__({
            "command_packets": In(PacketStreamSignature(width)),
            "status_packets": Out(PacketStreamSignature(width)),
            "in_packets": Out(PacketStreamSignature(width)),
            "out_packets": In(PacketStreamSignature(width)),
            "tag": Out(16), "data_in": Out(1), "data_out": Out(1), "status": Out(1),
            "outstanding": Out(range(uas.TASK_SET_DEPTH + 1)),
            "task_set_full": Out(1), "overlapped": Out(1), "aborted": Out(1),
            "bad_tag": Out(1), "in_acked": In(1),
            "in_acked_length": In(range(max_packet_size + 1)),
            "out_acked": In(1),
            "out_acked_length": In(range(max_packet_size + 1)),
            "out_started": In(1), "status_soon": Out(1),
        }, replies=replies, capacity_blocks=capacity_blocks)

    def _keep(self, stream, count):
        """``stream``'s ``keep`` for a beat of ``min(count, width)`` bytes (none at a byte a
        beat)."""
        if self._width == 1:
            return []
        keep = (1 << self._width) - 1
        for n in range(self._width - 1, 0, -1):
            keep = Mux(count == n, (1 << n) - 1, keep)
        return [stream.payload.keep.eq(keep)]

    def _beat_bytes(self, stream):
        if self._width == 1:
            return 1
        return sum(stream.payload.keep[i] for i in range(self._width))

    def _engine(self, m):
        sync, width = m.d.usb, self._width
        status_out, inp, out = self.status_packets, self.in_packets, self.out_packets
        replies = self._replies
        m.submodules.pattern = pattern = LbaPattern(width=width)
        # The write check has a pattern of its own: it may still read a write's last packet
        # out of the OUT buffer (LUNA's endpoint gives it up late) while the next command's
        # data already move, and a read must never wait for it.
        m.submodules.check_pattern = check_pattern = LbaPattern(width=width)
        m.submodules.tasks = tasks = UasTaskSet(width=width, max_tag=self._max_tag)
        m.d.comb += [tasks.packets.valid.eq(self.command_packets.valid),
                     tasks.packets.payload.eq(self.command_packets.payload),
                     self.command_packets.ready.eq(tasks.packets.ready),
                     self.outstanding.eq(tasks.outstanding),
                     self.task_set_full.eq(tasks.task_set_full),
                     self.overlapped.eq(tasks.overlapped), self.aborted.eq(tasks.aborted),
                     self.bad_tag.eq(tasks.bad_tag)]
        decode = ScsiDecode(replies=replies, capacity_blocks=self._capacity)
        kind, word = decode.kind, decode.word

        tag = Signal(16)
        m.d.comb += self.tag.eq(tag)
        # The IU being sent is a reply of the task set's, not a command's status.
        replying = Signal()
        # The status IU being sent: its bytes, how many, which beat; then (SENSE of a CHECK
        # CONDITION) the sense block from the replies RAM.
        head, head_length = Signal(8 * uas.SENSE_HEADER_SIZE), Signal(5)
        head_beat = Signal(range(uas.SENSE_HEADER_SIZE // width + 1))
        then_data, then_sense = Signal(), Signal()
        remaining = Signal(42)
        # Data bytes the host has still to ACK, and (a write) bytes still to check.
        unacked, unchecked = Signal(42), Signal(42)
        # A write's bytes whose data packet has not begun to arrive; and (``status_soon``) its
        # last packet's has.
        unstarted, last_arriving = Signal(42), Signal()
        m.d.comb += self.status_soon.eq(last_arriving)
        position = Signal(range(max(replies.longest, scsi.SENSE_SIZE) + width + 1))
        word_bad = Signal()

        def cb(first, count=1):
            """Bytes of the command block, big-endian."""
            return Cat(*(tasks.cdb.word_select(first + count - 1 - i, 8) for i in range(count)))

        def byte(value):
            if isinstance(value, int):
                return Const(value, 8)
            wide = Signal(8)
            m.d.comb += wide.eq(value)
            return wide

        def send_head(raw_bytes, length):
            """Load the status IU ``raw_bytes`` (byte values, first first) to send."""
            m.d.usb += [head.eq(Cat(*(byte(b) for b in raw_bytes))), head_length.eq(length),
                        head_beat.eq(0)]

        def table_word():
            """The answer's beat from the replies RAM."""
            if width == 1:
                return self.read_data.word_select(position[:2], 8)
            return self.read_data

        take = inp.valid & inp.ready
        m.d.comb += self.read_address.eq(address_ahead(word, position, width,
                                                        take & (kind == Kind.TABLE)))
        sync += [self.command.eq(0), self.read.eq(0), self.write.eq(0), self.check.eq(0),
                 self.mismatch.eq(0)]
        tag_bytes = [tag[8:16], tag[0:8]]

        writing = kind == Kind.WRITE
        if self._acked_in or self._acked_out:
            acked = Mux(writing, self.out_acked if self._acked_out else 0,
                        self.in_acked if self._acked_in else 0)
            acked_length = Mux(writing, self.out_acked_length, self.in_acked_length)
            with m.If(acked & (unacked != 0)):
                # Saturating: a host that sends more than the command's length ends it all
                # the same.
                sync += unacked.eq(Mux(acked_length >= unacked, 0, unacked - acked_length))
            if self._acked_out:
                # The host's answer to the status stream's ERDY overlaps the last packet and
                # its ACK, instead of following that ACK (and a prime the host queued then).
                with m.If(self.out_started & writing & (unstarted != 0)):
                    k = self._packet_bits  # unstarted <= 2**k, without a wide compare
                    last = (unstarted[k + 1:] == 0) & ~(unstarted[k] & (unstarted[:k] != 0))
                    sync += unstarted.eq(Mux(last, 0, unstarted - (1 << k)))
                    with m.If(last):
                        sync += last_arriving.eq(1)
        # The check of a write's data runs beside the FSM, so the SENSE need not wait for it.
        with m.If(unchecked != 0):
            if width == 1:
                bad = out.payload.data != check_pattern.data
            else:
                # Only the bytes of the beat that are the command's data are checked.
                enable = Cat(*((out.payload.keep[i] & ~at_most(unchecked, i)).replicate(8)
                               for i in range(width)))
                bad = ((out.payload.data ^ check_pattern.data) & enable) != 0
            count = self._beat_bytes(out)
            m.d.comb += [out.ready.eq(1), check_pattern.advance.eq(out.valid)]
            with m.If(out.valid):
                sync += [unchecked.eq(Mux(less_than(unchecked, count), 0, unchecked - count)),
                         word_bad.eq(word_bad | bad)]
                with m.If(check_pattern.word_end):
                    sync += [self.mismatch.eq(word_bad | bad), word_bad.eq(0)]

        with m.FSM(domain="usb") as fsm:
            with m.State("IDLE"):
                with m.If(tasks.reply_valid):
                    reply_tag = [tasks.reply_tag[8:16], tasks.reply_tag[0:8]]
                    m.d.comb += tasks.reply_taken.eq(1)
                    sync += [tag.eq(tasks.reply_tag), replying.eq(1), then_data.eq(0),
                             then_sense.eq(0)]
                    with m.If(tasks.reply_full):
                        send_head([uas.IuId.SENSE, 0, *reply_tag, 0, 0,
                                   uas.Status.TASK_SET_FULL, *([0] * 9)],
                                  uas.SENSE_HEADER_SIZE)
                    with m.Else():
                        send_head([uas.IuId.RESPONSE, 0, *reply_tag, 0, 0, 0,
                                   tasks.reply_code], uas.RESPONSE_SIZE)
                    m.next = "STATUS"
                with m.Elif(tasks.command_valid):
                    m.d.comb += tasks.take.eq(1)
                    sync += [tag.eq(tasks.tag), then_data.eq(0), then_sense.eq(0),
                             position.eq(0), self.command.eq(1)]
                    m.next = "DECODE"

            with m.State("DECODE"):
                decode.plan(m, cb=cb, cdb_length=16, lun=tasks.lun_bad, capture=self.capture)
                m.next = "SETTLE"
            with m.State("SETTLE"):
                decode.settle(m)
                m.next = "PLAN"

            with m.State("PLAN"):
                has_data = decode.device_length != 0
                device_in = (kind == Kind.TABLE) | (kind == Kind.READ)
                failed = decode.fail != 0
                sync += [self.check.eq(failed), self.blocks.eq(decode.blocks),
                         self.read.eq(kind == Kind.READ), self.write.eq(kind == Kind.WRITE),
                         remaining.eq(decode.device_length), then_data.eq(has_data),
                         unacked.eq(Mux(kind == Kind.WRITE,
                                         decode.device_length if self._acked_out else 0,
                                         decode.device_length if self._acked_in else 0)),
                         unstarted.eq(Mux(kind == Kind.WRITE, decode.device_length, 0))]
                m.d.comb += [pattern.start.eq(1), pattern.lba.eq(decode.lba)]
                with m.If(has_data & self._ready_ius):
                    ready = Mux(device_in, uas.IuId.READ_READY, uas.IuId.WRITE_READY)
                    send_head([ready, 0, *tag_bytes], uas.READY_SIZE)
                    m.next = "STATUS"
                with m.Elif(has_data & device_in):
                    m.next = "LOAD"
                with m.Elif(has_data):
                    m.next = "OUT_START"
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
                left = head_length - head_beat * width
                head_end = left <= width
                m.d.comb += [self.status.eq(1), status_out.valid.eq(1),
                             status_out.payload.data.eq(head.word_select(head_beat, 8 * width)),
                             status_out.payload.last.eq(head_end & ~then_sense),
                             *self._keep(status_out, left)]
                with m.If(status_out.ready):
                    sync += head_beat.eq(head_beat + 1)
                    with m.If(head_end):
                        with m.If(then_sense):
                            m.next = "SENSE_LOAD"
                        with m.Elif(then_data & (kind == Kind.WRITE)):
                            m.next = "OUT_START"
                        with m.Elif(then_data):
                            m.next = "LOAD"
                        with m.Else():
                            m.next = "DONE"

            with m.State("SENSE_LOAD"):
                m.d.comb += self.status.eq(1)
                m.next = "SENSE_DATA"

            with m.State("SENSE_DATA"):
                sense_end = at_most(remaining, width)
                m.d.comb += [self.status.eq(1), status_out.valid.eq(1),
                             status_out.payload.data.eq(table_word()),
                             status_out.payload.last.eq(sense_end),
                             *self._keep(status_out, remaining),
                             self.read_address.eq(
                                 address_ahead(word, position, width, status_out.ready))]
                with m.If(status_out.ready):
                    sync += [position.eq(position + width), remaining.eq(remaining - width)]
                    with m.If(sense_end):
                        m.next = "DONE"

            with m.State("LOAD"):
                with m.If(self.snapshot_ready):
                    m.next = "DATA_IN"

            with m.State("DATA_IN"):
                data_end = at_most(remaining, width)
                m.d.comb += [
                    self.data_in.eq(1), inp.valid.eq(1),
                    inp.payload.data.eq(Mux(kind == Kind.READ, pattern.data, table_word())),
                    inp.payload.last.eq(data_end), *self._keep(inp, remaining),
                    pattern.advance.eq(take),
                ]
                with m.If(take):
                    sync += [position.eq(position + width), remaining.eq(remaining - width)]
                    with m.If(data_end):
                        sync += remaining.eq(0)
                        m.next = "DATA_ACKED"

            with m.State("DATA_ACKED"):
                with m.If(unacked == 0):
                    m.next = "SENSE"

            with m.State("OUT_START"):
                # The check takes this command's data once it has read the last write's (the
                # OUT buffer keeps them in order).
                m.d.comb += self.data_out.eq(1)
                with m.If(unchecked == 0):
                    m.d.comb += [check_pattern.start.eq(1), check_pattern.lba.eq(decode.lba)]
                    sync += [unchecked.eq(remaining), word_bad.eq(0)]
                    m.next = "DATA_OUT"

            with m.State("DATA_OUT"):
                # Every OUT byte ACKed (or, without ACKs, taken): the SENSE goes while the
                # check may still read them.
                m.d.comb += self.data_out.eq(1)
                with m.If((unacked == 0) if self._acked_out else (unchecked == 0)):
                    m.next = "SENSE"

            with m.State("DONE"):
                # (word_bad is the check's, which may still be running: OUT_START clears it.)
                m.d.comb += tasks.done.eq(~replying)
                sync += [kind.eq(Kind.NONE), last_arriving.eq(0), unstarted.eq(0),
                         then_data.eq(0), then_sense.eq(0), position.eq(0),
                         replying.eq(0)]
                m.next = "IDLE"

        m.d.comb += self.waiting.eq(fsm.ongoing("IDLE"))
        # After the FSM: a LOGICAL UNIT RESET's clear wins over a decode's setting.
        with m.If(tasks.clear_sense):
            sync += decode.sense.eq(0)
