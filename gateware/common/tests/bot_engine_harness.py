"""The BOT engine alone in Amaranth simulation: OUT packets in, IN packets out, the replies RAM
beside it, the IN endpoint pausing now and then (beats must hold). Shared by the engine's tests:
``test_scsi_engine_words.py`` (framing a word a beat) and ``test_scsi_answers.py`` (what each
command answers, at both widths)."""

from __future__ import annotations

from amaranth.sim import Simulator
from busprobe.gateware.common.scsi_engine import ScsiBotEngine
from busprobe.gateware.common.storage_replies import StorageReplies
from busprobe.protocol import bot

__all__ = ["run_engine", "run_commands", "cbw"]


def cbw(tag: int, length: int, direction: str, cb: bytes) -> bytes:
    return bot.Cbw(tag, length, direction, cb=cb).pack()


def _beats(packet: bytes, width: int) -> list[tuple[int, int, bool]]:
    """``(data, keep, last)`` beats of one packet."""
    out = []
    for at in range(0, len(packet), width):
        chunk = packet[at:at + width]
        out.append((int.from_bytes(chunk.ljust(width, b"\0"), "little"),
                    (1 << len(chunk)) - 1, at + width >= len(packet)))
    return out


def _is_csw(packet: bytes) -> bool:
    return len(packet) == bot.CSW_SIZE and packet[:4] == bot.CSW_SIGNATURE.to_bytes(4, "little")


def run_engine(packets: list[bytes], expect_in: int, *, width: int = 4,
               max_packet_size: int = 1024) -> tuple[list[bytes], int]:
    """Feed OUT ``packets`` (each a packet of at most ``max_packet_size`` bytes), collect IN
    packets until ``expect_in`` have ended; return them and the mismatch strobes counted."""
    return _simulate(packets, lambda received: len(received) >= expect_in, width=width,
                     max_packet_size=max_packet_size)


def run_commands(commands: list[tuple[bytes, int]], *, width: int = 4,
                 max_packet_size: int = 1024) -> list[tuple[bytes, bot.Csw]]:
    """Data-in commands ``(cb, host_length)``, tags 1, 2, ..., one after another in one
    simulation: each one's data and CSW."""
    packets = [cbw(tag, length, "in", cb) for tag, (cb, length) in enumerate(commands, 1)]
    received, _ = _simulate(packets, lambda got: sum(map(_is_csw, got)) == len(commands),
                            width=width, max_packet_size=max_packet_size)
    answers, data = [], b""
    for packet in received:
        if _is_csw(packet):
            answers.append((data, bot.Csw.unpack(packet)))
            data = b""
        else:
            data += packet
    return answers


def _simulate(packets, done, *, width, max_packet_size):
    replies = StorageReplies()
    dut = ScsiBotEngine(replies=replies, width=width, max_packet_size=max_packet_size)
    received: list[bytes] = []
    mismatches = 0

    async def ram(ctx):
        async for _, _, address in ctx.tick("usb").sample(dut.read_address):
            # Padding beats run the address past the answers; what is read there goes nowhere.
            ctx.set(dut.read_data, replies.words[address] if address < replies.depth else 0)

    async def host(ctx):
        nonlocal mismatches
        ctx.set(dut.snapshot_ready, 1)
        beats = [beat for packet in packets for beat in _beats(packet, width)]
        current = bytearray()
        cycle = 0
        while not done(received):
            cycle += 1
            assert cycle < 20_000 * width + 200 * len(packets), "the engine stopped"
            if beats:
                data, keep, last = beats[0]
                ctx.set(dut.out_packets.valid, 1)
                payload = {"data": data, "last": last}
                ctx.set(dut.out_packets.payload, payload | ({"keep": keep} if width > 1 else {}))
            else:
                ctx.set(dut.out_packets.valid, 0)
            ready = cycle % 7 != 3
            ctx.set(dut.in_packets.ready, ready)
            await ctx.delay(1e-9)
            taken_out = beats and ctx.get(dut.out_packets.ready)
            if ready and ctx.get(dut.in_packets.valid):
                payload = ctx.get(dut.in_packets.payload)
                count = width
                if width > 1:
                    keep = payload["keep"]
                    count = bin(keep).count("1")
                    assert keep == (1 << count) - 1
                current += payload["data"].to_bytes(width, "little")[:count]
                if payload["last"] or len(current) == max_packet_size:
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

