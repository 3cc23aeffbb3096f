"""The bulk TPs wait for a data-in train only behind a quick host with another stream primed, and
the COMMAND IU's ACK for any train (Amaranth simulation of :class:`.held_handshakes.HeldHandshakes`
and the handshake generator)."""

from amaranth.sim import Simulator
from busprobe.gateware.usb3.held_handshakes import QUICK_ANSWER_CYCLES, HeldHandshakes
from busprobe.gateware.usb3.transaction import BulkHandshakeGenerator, HandshakeKind
from busprobe.protocol.streams import StreamState


def _simulate(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(8e-9, domain="ss")
    sim.add_testbench(testbench)
    sim.run()


def run_train(*, answer_cycles, others_primed, output="hold"):
    """A stream selected and answered after ``answer_cycles``, then a train of two packets (the
    second the transfer's last) with a cycle between them; returns ``output`` per phase."""
    dut = HeldHandshakes()
    seen = {"first": [], "between": [], "last": [], "after": []}

    async def testbench(ctx):
        ctx.set(dut.others_primed, others_primed)
        ctx.set(dut.state, StreamState.START_STREAM)
        await ctx.tick("ss").repeat(answer_cycles)
        ctx.set(dut.state, StreamState.MOVE_DATA)
        await ctx.tick("ss").repeat(2)
        for phase, sending, last, cycles in (("first", 1, 0, 6), ("between", 0, 0, 2),
                                             ("last", 1, 1, 6), ("after", 0, 0, 4)):
            ctx.set(dut.sending, sending)
            ctx.set(dut.end_of_burst, last)
            for _ in range(cycles):  # each cycle's ``hold``, before its edge
                seen[phase].append(ctx.get(getattr(dut, output)))
                await ctx.tick("ss")

    _simulate(dut, testbench)
    return seen


def test_behind_a_quick_host_with_another_stream_primed_the_tps_wait_for_the_whole_train():
    seen = run_train(answer_cycles=30, others_primed=1)
    assert all(seen["first"]) and all(seen["between"]) and all(seen["last"])
    assert not any(seen["after"])


def test_behind_a_host_slower_than_the_threshold_nothing_waits():
    seen = run_train(answer_cycles=QUICK_ANSWER_CYCLES + 70, others_primed=1)
    assert not any(v for phase in seen.values() for v in phase)


def test_with_no_other_stream_primed_nothing_waits_however_quick_the_host():
    seen = run_train(answer_cycles=30, others_primed=0)
    assert not any(v for phase in seen.values() for v in phase)


def test_the_train_spans_every_packet_and_the_cycles_between_whatever_the_host():
    for answer_cycles, others_primed in ((30, 1), (QUICK_ANSWER_CYCLES + 70, 0)):
        seen = run_train(answer_cycles=answer_cycles, others_primed=others_primed,
                         output="train")
        assert all(seen["first"]) and all(seen["between"]) and all(seen["last"])
        assert not any(seen["after"])


def test_a_deferred_port_waits_while_the_others_are_served():
    dut = BulkHandshakeGenerator(ports=2)
    queue = dut.header_source
    done = []

    async def testbench(ctx):
        ctx.set(queue.ready, 1)
        ctx.set(dut.defer, 0b01)  # port 0 (it wins a tie) deferred
        for port, kind in zip(dut.requests, (HandshakeKind.ACK, HandshakeKind.ERDY), strict=True):
            ctx.set(port.request.kind, kind)
            ctx.set(port.valid, 1)
        for cycle in range(10):
            if cycle == 6:
                ctx.set(dut.defer, 0)
            await ctx.tick("ss")
            served = [ctx.get(port.done) for port in dut.requests]
            if served[1]:
                ctx.set(dut.requests[1].valid, 0)
            done.append(served)

    _simulate(dut, testbench)
    first = [cycle for cycle, served in enumerate(done) if served[0]]
    assert any(served[1] for served in done[:6])
    assert first and first[0] >= 6


def test_the_generator_offers_a_request_only_once_the_hold_drops():
    dut = BulkHandshakeGenerator(ports=1)
    queue, port = dut.header_source, dut.requests[0]
    offered = []

    async def testbench(ctx):
        ctx.set(queue.ready, 1)
        ctx.set(dut.hold, 1)
        ctx.set(port.request.kind, HandshakeKind.ACK)
        ctx.set(port.valid, 1)
        for _ in range(8):
            await ctx.tick("ss")
            offered.append((ctx.get(queue.valid), ctx.get(port.done)))
        ctx.set(dut.hold, 0)
        await ctx.delay(1e-9)
        offered.append((ctx.get(queue.valid), ctx.get(port.done)))

    _simulate(dut, testbench)
    assert offered[:8] == [(0, 0)] * 8
    assert offered[8] == (1, 1)
