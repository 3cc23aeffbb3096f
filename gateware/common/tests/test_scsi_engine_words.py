"""The BOT engine a word a beat (the SuperSpeed disk's width) against the protocol's framing,
in Amaranth simulation: the CBW from whole beats, the data as 32-bit beats with ``keep``, the
CSW as four beats, writes checked a word at a time. (The byte-wide engine is the USB 2.0 disk's,
tested through its simulation: ``sim/usb2/tests/test_usb2_storage_sim.py``.)"""

import struct

from amaranth.sim import Simulator
from busprobe.gateware.common.scsi_engine import ScsiBotEngine
from busprobe.gateware.common.storage_replies import StorageReplies
from busprobe.protocol import bot, scsi
from busprobe.protocol.storage import BLOCK_SIZE, lba_bytes

WIDTH = 4


def _beats(packet: bytes) -> list[tuple[int, int, bool]]:
    """``(data, keep, last)`` beats of one packet."""
    out = []
    for at in range(0, len(packet), WIDTH):
        chunk = packet[at:at + WIDTH]
        out.append((int.from_bytes(chunk.ljust(WIDTH, b"\0"), "little"),
                    (1 << len(chunk)) - 1, at + WIDTH >= len(packet)))
    return out


def _run(packets: list[bytes], expect_in: int) -> tuple[list[bytes], int]:
    """Feed OUT ``packets`` (each a packet; 1024 bytes at most), collect IN packets until
    ``expect_in`` have ended; return them and the mismatch strobes counted."""
    replies = StorageReplies()
    dut = ScsiBotEngine(replies=replies, width=WIDTH, max_packet_size=1024)
    received: list[bytes] = []
    mismatches = 0

    async def ram(ctx):
        async for _, _, address in ctx.tick("usb").sample(dut.read_address):
            ctx.set(dut.read_data, replies.words[address])

    async def host(ctx):
        nonlocal mismatches
        ctx.set(dut.snapshot_ready, 1)
        beats = [beat for packet in packets for beat in _beats(packet)]
        current = bytearray()
        cycle = 0
        while len(received) < expect_in:
            cycle += 1
            assert cycle < 20_000, "the engine stopped"
            if beats:
                data, keep, last = beats[0]
                ctx.set(dut.out_packets.valid, 1)
                ctx.set(dut.out_packets.payload, {"data": data, "keep": keep, "last": last})
            else:
                ctx.set(dut.out_packets.valid, 0)
            ready = cycle % 7 != 3  # the IN endpoint pauses now and then: beats must hold
            ctx.set(dut.in_packets.ready, ready)
            await ctx.delay(1e-9)
            taken_out = beats and ctx.get(dut.out_packets.ready)
            if ready and ctx.get(dut.in_packets.valid):
                payload = ctx.get(dut.in_packets.payload)
                keep = payload["keep"]
                count = bin(keep).count("1")
                assert keep == (1 << count) - 1
                current += payload["data"].to_bytes(WIDTH, "little")[:count]
                if payload["last"] or len(current) == 1024:
                    received.append(bytes(current))
                    current.clear()
            await ctx.tick("usb")
            mismatches += ctx.get(dut.mismatch)
            if taken_out:
                beats.pop(0)

    sim = Simulator(dut)
    sim.add_clock(8e-9, domain="usb")
    sim.add_process(ram)
    sim.add_testbench(host)
    sim.run()
    return received, mismatches


def _cbw(tag, length, direction, cb):
    return bot.Cbw(tag, length, direction, cb=cb).pack()


def test_a_read_moves_the_lba_pattern_a_word_a_beat_then_the_csw():
    cb = struct.pack(">BBIBHB", scsi.Op.READ_10, 0, 12_345, 0, 3, 0)
    packets, _ = _run([_cbw(7, 3 * BLOCK_SIZE, "in", cb)], expect_in=3)
    assert packets[0] + packets[1] == lba_bytes(12_345, 3)[:2048] and len(packets[0]) == 1024
    # 1536 bytes: a full packet, then 512 and the CSW (13 bytes, a last beat of one byte).
    assert packets[1] == lba_bytes(12_345, 3)[1024:]
    assert bot.Csw.unpack(packets[2]) == bot.Csw(7, 0, bot.CswStatus.PASSED)


def test_a_table_answer_ends_short_at_its_length_with_the_residue():
    cb = struct.pack(">BBBHB", scsi.Op.INQUIRY, 0, 0, 96, 0)
    packets, _ = _run([_cbw(9, 96, "in", cb)], expect_in=2)
    assert packets[0] == scsi.inquiry_data()
    assert bot.Csw.unpack(packets[1]) == bot.Csw(9, 96 - 36, bot.CswStatus.PASSED)


def test_a_write_is_checked_a_word_at_a_time_and_a_bad_cbw_is_a_phase_error():
    data = bytearray(lba_bytes(91, 2))
    for offset in (0, 1, 517, 1023):  # words 0, 129, 255: three words
        data[offset] ^= 0x40
    cb = struct.pack(">BBIBHB", scsi.Op.WRITE_10, 0, 91, 0, 2, 0)
    packets, mismatches = _run([_cbw(3, len(data), "out", cb), bytes(data[:1024]),
                                bytes(data[1024:]), _cbw(4, 0, "in", bytes(6))[:30]],
                               expect_in=2)
    assert bot.Csw.unpack(packets[0]) == bot.Csw(3, 0, bot.CswStatus.PASSED)
    assert mismatches == 3
    assert bot.Csw.unpack(packets[1]).status == bot.CswStatus.PHASE_ERROR  # a 30-byte CBW
