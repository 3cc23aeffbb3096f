"""The UAS engine alone in Amaranth simulation, at both widths: COMMAND IUs in on the command
pipe, the status pipe's IUs and the data-in pipe's bytes out (the endpoints pausing now and then),
data-out beats in; a byte a beat with READ READY / WRITE READY as at high speed, a word a beat
without them as at SuperSpeed with bulk streams (the data pipe's stream is the announcement)."""

from __future__ import annotations

import struct

import pytest
from amaranth.sim import Simulator
from busprobe.gateware.common.storage_replies import StorageReplies
from busprobe.gateware.common.uas_engine import UasEngine
from busprobe.protocol import scsi, uas
from busprobe.protocol.storage import BLOCK_SIZE, lba_bytes

#: (width, ready_ius, acked): high speed and SuperSpeed.
SPEEDS = {"high": (1, True, ("in", "out")), "super": (4, False, ("out",))}


def _beats(packet: bytes, width: int):
    for at in range(0, len(packet), width):
        chunk = packet[at:at + width]
        payload = {"data": int.from_bytes(chunk.ljust(width, b"\0"), "little"),
                   "last": at + width >= len(packet)}
        if width > 1:
            payload["keep"] = (1 << len(chunk)) - 1
        yield payload


def run(commands, speed, writes=(), events=None):
    """Each command a COMMAND IU (tag 1, 2, ...), ``writes`` the data-out packets offered in
    order whenever the engine takes data (``out_started`` strobed as each packet's first beat
    is taken); returns the status IUs, the data-in bytes and the mismatches counted.
    ``events``, a list, gets ``(cycle, what)`` for each data-out packet started, each change of
    ``status_soon`` and each status IU's first beat."""
    width, ready_ius, acked = SPEEDS[speed]
    replies = StorageReplies()
    dut = UasEngine(replies=replies, width=width, max_packet_size=1024 if width > 1 else 512,
                    ready_ius=ready_ius, acked=acked)
    ius = [uas.command_iu(tag, cdb) for tag, cdb in enumerate(commands, 1)]
    statuses: list[bytes] = []
    data_in = bytearray()
    out_beats = [b for packet in writes for b in _beats(packet, width)]
    starts = {sum(-(-len(p) // width) for p in writes[:k]) for k in range(len(writes))}
    events = [] if events is None else events
    counts = {"mismatch": 0, "sense": 0}

    def ack_lengths(ctx, stream, acked_strobe, acked_length, payload):
        if stream not in acked:
            return
        count = bin(payload["keep"]).count("1") if width > 1 else 1
        ctx.set(acked_strobe, 1)
        ctx.set(acked_length, count)

    async def ram(ctx):
        async for _, _, address in ctx.tick("usb").sample(dut.read_address):
            ctx.set(dut.read_data, replies.words[address] if address < replies.depth else 0)

    async def bench(ctx):
        ctx.set(dut.snapshot_ready, 1)
        beats = [b for iu in ius for b in _beats(iu, width)]
        status = bytearray()
        cycle = taken_out = 0
        soon = 0
        while counts["sense"] < len(commands):
            cycle += 1
            assert cycle < 20_000, "the engine stopped"
            ctx.set(dut.command_packets.valid, bool(beats))
            if beats:
                ctx.set(dut.command_packets.payload, beats[0])
            ctx.set(dut.out_packets.valid, bool(out_beats))
            if out_beats:
                ctx.set(dut.out_packets.payload, out_beats[0])
            ready = cycle % 5 != 2
            ctx.set(dut.status_packets.ready, ready)
            ctx.set(dut.in_packets.ready, ready)
            ctx.set(dut.in_acked, 0)
            ctx.set(dut.out_acked, 0)
            ctx.set(dut.out_started, 0)
            if ctx.get(dut.status_soon) != soon:
                soon ^= 1
                events.append((cycle, f"status_soon {soon}"))
            took_command = beats and ctx.get(dut.command_packets.ready)
            took_out = out_beats and ctx.get(dut.out_packets.ready)
            if took_out:
                ack_lengths(ctx, "out", dut.out_acked, dut.out_acked_length, out_beats[0])
                if taken_out in starts:
                    ctx.set(dut.out_started, 1)
                    events.append((cycle, "out_started"))
                taken_out += 1
            if ready and ctx.get(dut.in_packets.valid):
                payload = ctx.get(dut.in_packets.payload)
                count = bin(payload["keep"]).count("1") if width > 1 else 1
                data_in.extend(payload["data"].to_bytes(width, "little")[:count])
                ack_lengths(ctx, "in", dut.in_acked, dut.in_acked_length,
                            {"keep": (1 << count) - 1})
            if ready and ctx.get(dut.status_packets.valid):
                payload = ctx.get(dut.status_packets.payload)
                count = bin(payload["keep"]).count("1") if width > 1 else 1
                if not status:
                    events.append((cycle, "status"))
                status.extend(payload["data"].to_bytes(width, "little")[:count])
                if payload["last"]:
                    statuses.append(bytes(status))
                    counts["sense"] += status[0] == uas.IuId.SENSE
                    status.clear()
            await ctx.tick("usb")
            counts["mismatch"] += ctx.get(dut.mismatch)
            if took_command:
                beats.pop(0)
            if took_out:
                out_beats.pop(0)
        for _ in range(40):  # the check may still read the last write's beats
            await ctx.tick("usb")
            counts["mismatch"] += ctx.get(dut.mismatch)

    sim = Simulator(dut)
    sim.add_clock(8e-9, domain="usb")
    sim.add_process(ram)
    sim.add_testbench(bench)
    sim.run()
    return [uas.parse_iu(s) for s in statuses], bytes(data_in), counts["mismatch"]


def read_10(lba, blocks):
    return struct.pack(">BBIBHB", scsi.Op.READ_10, 0, lba, 0, blocks, 0)


def write_10(lba, blocks):
    return struct.pack(">BBIBHB", scsi.Op.WRITE_10, 0, lba, 0, blocks, 0)


def inquiry():
    return struct.pack(">BBBHB", scsi.Op.INQUIRY, 0, 0, 36, 0)


@pytest.mark.parametrize("speed", SPEEDS)
def test_reads_and_an_inquiry_answer_their_data_then_a_good_sense(speed):
    statuses, data, _ = run([inquiry(), read_10(12345, 3), read_10(7, 1)], speed)
    senses = [s for s in statuses if s.kind is uas.IuId.SENSE]
    assert [(s.tag, s.status) for s in senses] == [(1, 0), (2, 0), (3, 0)]
    readies = [s for s in statuses if s.kind is uas.IuId.READ_READY]
    # High speed announces each command's data; with streams nothing does.
    assert [r.tag for r in readies] == ([1, 2, 3] if speed == "high" else [])
    assert data == scsi.inquiry_data() + lba_bytes(12345, 3) + lba_bytes(7, 1)


@pytest.mark.parametrize("speed", SPEEDS)
def test_a_write_is_checked_against_the_lba_pattern_and_a_flipped_byte_counted(speed):
    written = bytearray(lba_bytes(77, 2))
    written[601] ^= 0x10
    width = SPEEDS[speed][0]
    packet = 1024 if width > 1 else 512
    packets = [bytes(written[i:i + packet]) for i in range(0, len(written), packet)]
    statuses, _, mismatches = run([write_10(77, 2), read_10(1, 1)], speed, writes=packets)
    senses = [s for s in statuses if s.kind is uas.IuId.SENSE]
    assert [(s.tag, s.status) for s in senses] == [(1, 0), (2, 0)]
    assert mismatches == 1
    assert [s.kind for s in statuses if s.tag == 1][0] is (
        uas.IuId.WRITE_READY if speed == "high" else uas.IuId.SENSE)


def test_a_writes_status_is_announced_once_its_last_data_packet_starts_until_its_sense_goes():
    """At SuperSpeed the status pipe selects a write's stream (ERDY) as its last data packet
    starts to arrive, not at that packet's ACK: the host's answer then overlaps the packet, and
    does not queue behind the next command's prime (small-burst's 1 KiB x QD 4 writes: 70.65
    MB/s before, 73.50 with it)."""
    written = lba_bytes(20, 5)
    events: list[tuple[int, str]] = []
    statuses, _, mismatches = run(
        [write_10(9, 2), write_10(20, 5)], "super", events=events,
        writes=[lba_bytes(9, 2)] + [written[i:i + 1024] for i in range(0, len(written), 1024)])
    assert mismatches == 0
    assert [s.status for s in statuses] == [0, 0]
    what = [w for _, w in events]
    # Each write: its packets start, the announcement rises with the last one's start, the
    # SENSE goes while it stands, and it falls after (the run stops at the last SENSE).
    assert what == ["out_started", "status_soon 1", "status", "status_soon 0",
                    "out_started", "out_started", "out_started", "status_soon 1", "status"]
    rise = [c for c, w in events if w == "status_soon 1"][-1]
    last_start = [c for c, w in events if w == "out_started"][-1]
    assert rise - last_start <= 2


@pytest.mark.parametrize("speed", SPEEDS)
def test_an_unknown_opcode_gets_check_condition_with_illegal_request_sense(speed):
    statuses, data, _ = run([bytes((0xC7,)) + bytes(9), read_10(5, 1)], speed)
    failed, good = [s for s in statuses if s.kind is uas.IuId.SENSE]
    assert failed.tag == 1 and failed.status == uas.Status.CHECK_CONDITION
    assert scsi.parse_sense(failed.sense)[:2] == (scsi.SenseKey.ILLEGAL_REQUEST,
                                                  scsi.Asc.INVALID_COMMAND_OPERATION_CODE)
    assert good.status == uas.Status.GOOD and data == lba_bytes(5, 1)
    assert len(failed.sense) == scsi.SENSE_SIZE and BLOCK_SIZE == 512
