"""What the driver did to the null disk, counted in block RAM (:data:`busprobe.protocol.scsi.
STORAGE_TELEMETRY`), on the same :class:`~busprobe.gateware.common.counter_ram.CounterRam` as the
USB telemetry."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import scsi

from .counter_ram import CounterRam, Kind
from .storage_replies import StorageReplies

__all__ = ["StorageTelemetry", "ENGINE_EVENTS"]

#: The ports a storage engine (BOT or UAS) drives and the telemetry takes as they are.
ENGINE_EVENTS = ("command", "read", "write", "check", "mismatch", "waiting", "blocks")

#: Bits of a pending count: an event comes at most once a command (tens of cycles apart at the
#: least), the gap's once a cycle for at most a round.
_EVENT_BITS = 2


class StorageTelemetry(wiring.Component):
    """Counters of the SCSI engine's events, their snapshot, and the constant answers after it.

    Each event keeps a pending count the counter RAM's round takes (a round is one operation a
    word, 43 cycles); the maxima and the write check's mismatch count are registers the round
    copies. The histogram has a word per direction and power-of-two bucket of blocks
    (:func:`~busprobe.protocol.scsi.histogram_bucket`): one bucket decoder, one pending count
    per bucket. Gaps are cycles of the ``usb`` domain (60 MHz; the SuperSpeed disk renames it
    ``ss``, 125 MHz) from a CSW to the next CBW;
    ``cycles`` counts every cycle since the clear, so the host has commands per second.

    Attributes
    ----------
    clear: Signal(), input
        Strobe: zero every counter (CLEAR_TELEMETRY).
    command, read, write, check, phase_error, mismatch, waiting: Signal(), input
    blocks: Signal(32), input
        The engine's events (:class:`~.scsi_engine.ScsiBotEngine`).
    capture: Signal(), input
    ready: Signal(), output
    read_address: Signal(range(replies.depth)), input
    read_data: Signal(32), output
        The snapshot RAM (telemetry, then the answers), as :class:`CounterRam` has it.
    mismatches: Signal(32), output
        Written words that were not the LBA pattern since the last clear.
    tags: Signal(8), input
        UAS commands outstanding now (the word ``uas_tags_max`` keeps the most since the clear).
    task_set_full, overlapped, aborted, bad_tag: Signal(), input
        UAS's task set refused a command (no slot; a tag outstanding), removed queued ones,
        dropped an IU whose tag names no stream.

    Parameters
    ----------
    replies: StorageReplies
    """

    def __init__(self, *, replies: StorageReplies):
        self._replies = replies
        super().__init__({
            "clear": In(1), "command": In(1), "read": In(1), "write": In(1), "check": In(1),
            "phase_error": In(1), "mismatch": In(1), "waiting": In(1), "blocks": In(32),
            "capture": In(1), "ready": Out(1),
            "read_address": In(range(replies.depth)), "read_data": Out(32),
            "mismatches": Out(32), "tags": In(8),
            "task_set_full": In(1), "overlapped": In(1), "aborted": In(1), "bad_tag": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.ram = ram = CounterRam(words=1 + scsi.STORAGE_TELEMETRY_WORDS,
                                            snapshot_init=self._replies.words, domain="usb")
        m.d.comb += [ram.clear.eq(self.clear), ram.capture.eq(self.capture),
                     self.ready.eq(ram.ready), ram.read_address.eq(self.read_address),
                     self.read_data.eq(ram.read_data)]
        words = {name: 1 + index for index, name in enumerate(scsi.STORAGE_TELEMETRY)}
        rounds = len(words)

        def pending(name, event, width=_EVENT_BITS):
            count = Signal(width, name=f"{name}_pending")
            op = ram.add(words[name], Kind.ADD, operand=count)
            with m.If(self.clear | op.taken):
                m.d.usb += count.eq(event)
            with m.Else():
                m.d.usb += count.eq(count + event)

        def register(name, value):
            ram.add(words[name], Kind.INPUT, value=value)

        # The highest bit set, from bits alone (a priority encoder, not 16 comparators); any
        # bit past the last bucket's lands in it.
        bucket = Signal(range(scsi.HISTOGRAM_BUCKETS))
        top = scsi.HISTOGRAM_BUCKETS - 1
        for b in range(top):
            with m.If(self.blocks[b]):
                m.d.comb += bucket.eq(b)
        with m.If(self.blocks[top:].any()):
            m.d.comb += bucket.eq(top)
        read_max, write_max, gap, gap_max = (Signal(32, name=n) for n in (
            "read_max", "write_max", "gap", "gap_max"))
        tags_max = Signal(8)
        with m.If(self.tags > tags_max):
            m.d.usb += tags_max.eq(self.tags)
        with m.If(self.mismatch):
            m.d.usb += self.mismatches.eq(self.mismatches + 1)
        with m.If(self.read & (self.blocks > read_max)):
            m.d.usb += read_max.eq(self.blocks)
        with m.If(self.write & (self.blocks > write_max)):
            m.d.usb += write_max.eq(self.blocks)
        with m.If(self.waiting):
            m.d.usb += gap.eq(gap + 1)
        with m.Elif(gap != 0):
            m.d.usb += [gap.eq(0), gap_max.eq(Mux(gap > gap_max, gap, gap_max))]
        with m.If(self.clear):
            m.d.usb += [self.mismatches.eq(0), read_max.eq(0), write_max.eq(0), gap_max.eq(0),
                        tags_max.eq(self.tags)]

        pending("commands", self.command)
        pending("reads", self.read)
        pending("writes", self.write)
        pending("check_conditions", self.check)
        pending("phase_errors", self.phase_error)
        register("write_mismatches", self.mismatches)
        register("read_blocks_max", read_max)
        register("write_blocks_max", write_max)
        pending("gap_cycles", self.waiting, width=(rounds + 1).bit_length() + 1)
        register("gap_cycles_max", gap_max)
        for direction, event in (("read", self.read), ("write", self.write)):
            for b in range(scsi.HISTOGRAM_BUCKETS):
                pending(f"{direction}_hist_{b}", event & (self.blocks != 0) & (bucket == b))
        pending("cycles", 1, width=(rounds + 1).bit_length() + 1)
        register("uas_tags_max", tags_max)
        pending("uas_task_set_full", self.task_set_full)
        pending("uas_overlapped_tags", self.overlapped)
        pending("uas_aborted_tasks", self.aborted)
        pending("uas_bad_tags", self.bad_tag)
        return m
