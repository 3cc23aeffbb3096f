"""The registered packet stream (the register slice in front of the SuperSpeed IN endpoints):
every beat once, in order, a beat a cycle, through any pattern of producer and consumer stops."""

import random

from amaranth.sim import Simulator
from busprobe.gateware.common.packet_stream import RegisteredPacketStream

BEATS = 60


def run(valid: list[bool], ready: list[bool], flush_at: int | None = None):
    """The producer offers beats 0.. while ``valid[cycle]``; the consumer takes while
    ``ready[cycle]``. Returns the beats taken (data, last, keep) and the cycle of each."""
    dut = RegisteredPacketStream(width=4)
    taken: list[tuple[int, int, int]] = []
    cycles: list[int] = []

    async def testbench(ctx):
        offered = 0
        for cycle, (v, r) in enumerate(zip(valid, ready, strict=True)):
            ctx.set(dut.flush, cycle == flush_at)
            ctx.set(dut.source.ready, r)
            ctx.set(dut.sink.valid, v and offered < BEATS)
            ctx.set(dut.sink.payload.data, 0x5000 + offered)
            ctx.set(dut.sink.payload.last, offered % 7 == 6)
            ctx.set(dut.sink.payload.keep, 0b1111 if offered % 7 != 6 else 0b0011)
            accepted = v and offered < BEATS and ctx.get(dut.sink.ready)
            if ctx.get(dut.source.valid) and r and cycle != flush_at:
                p = dut.source.payload
                taken.append((ctx.get(p.data), ctx.get(p.last), ctx.get(p.keep)))
                cycles.append(cycle)
            await ctx.tick()
            if accepted:
                offered += 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return taken, cycles


def expected(first=0):
    return [(0x5000 + i, int(i % 7 == 6), 0b1111 if i % 7 != 6 else 0b0011)
            for i in range(first, BEATS)]


def test_a_beat_a_cycle_a_cycle_late():
    taken, cycles = run([True] * (BEATS + 4), [True] * (BEATS + 4))
    assert taken == expected()
    assert cycles == list(range(1, BEATS + 1))


def test_random_stops_on_both_sides_lose_or_repeat_nothing():
    rng = random.Random(44)
    for _ in range(6):
        n = 8 * BEATS
        taken, _ = run([rng.random() < 0.7 for _ in range(n)],
                       [rng.random() < 0.6 for _ in range(n)])
        assert taken == expected()


def test_flush_drops_what_is_held():
    n = BEATS + 10
    # The consumer stops, so both registers fill; the flush drops them and the producer's
    # next beats follow.
    ready = [False] * 6 + [True] * (n - 6)
    taken, _ = run([True] * n, ready, flush_at=4)
    assert taken[0][0] > 0x5000 and taken == expected(taken[0][0] - 0x5000)
