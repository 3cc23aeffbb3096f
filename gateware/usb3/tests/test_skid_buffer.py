"""The registered-ready buffer in front of the SuperSpeed reply: every word once, in order, with
no hole inside a packet, through any pattern of consumer stops."""

import random

from amaranth.sim import Simulator
from busprobe.gateware.usb3.skid_buffer import RegisteredReadyBuffer

WORDS = 40


def run(stops: list[int], flush_at: int | None = None) -> list[tuple[int, int, int]]:
    """Offer WORDS words as one packet; ``stops[i]`` is the consumer's ready in cycle i."""
    dut = RegisteredReadyBuffer(domain="sync")
    seen: list[tuple[int, int, int]] = []

    async def testbench(ctx):
        offered = 0
        for cycle, ready in enumerate(stops):
            ctx.set(dut.flush, cycle == flush_at)
            if cycle == flush_at:
                offered = 0
            ctx.set(dut.source.ready, ready)
            if offered < WORDS:
                ctx.set(dut.sink.data, 0x1000 + offered)
                ctx.set(dut.sink.valid, 0b1111)
                ctx.set(dut.sink.first, offered == 0)
                ctx.set(dut.sink.last, offered == WORDS - 1)
            else:
                ctx.set(dut.sink.valid, 0)
            taken_in = ctx.get(dut.sink.ready) and offered < WORDS and cycle != flush_at
            if ctx.get(dut.source.valid) and ready:
                seen.append((ctx.get(dut.source.data), ctx.get(dut.source.first),
                             ctx.get(dut.source.last)))
            elif seen and not seen[-1][2] and ready and cycle != flush_at:
                seen.append((-1, 0, 0))  # a hole inside the packet
            await ctx.tick()
            if taken_in:
                offered += 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return seen


def expected() -> list[tuple[int, int, int]]:
    return [(0x1000 + i, int(i == 0), int(i == WORDS - 1)) for i in range(WORDS)]


def test_every_word_passes_once_in_order_with_the_consumer_always_ready():
    assert run([1] * (WORDS + 4)) == expected()


def test_random_consumer_stops_lose_repeat_or_hole_nothing():
    rng = random.Random(5)
    for _ in range(5):
        stops = [0] * rng.randrange(0, 6) + [rng.random() < 0.6 for _ in range(6 * WORDS)]
        got = run(stops)
        assert got == expected(), got[:8]


def test_a_flush_drops_what_the_buffer_holds_and_the_packet_restarts():
    got = run([0] * 4 + [1] * 3 + [0] * 3 + [1] * (2 * WORDS), flush_at=8)
    restart = max(i for i, (_, first, _) in enumerate(got) if first)
    assert got[restart:] == expected()
