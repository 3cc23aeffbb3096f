"""A tagged IN endpoint told a packet is coming before its first beat (``announce``): the UAS
engine's SENSE for a write whose last data packet is arriving. Its ERDY goes at once, the host's
ACK TP waits for the packet, and behind streams the announced stream is selected as soon as the
last one is acknowledged."""

from amaranth.sim import Simulator
from busprobe.gateware.usb3.in_endpoint import BurstInEndpoint
from busprobe.gateware.usb3.stream_in_endpoint import StreamInEndpoint
from busprobe.gateware.usb3.tests.test_in_endpoint import Host
from busprobe.gateware.usb3.tests.test_stream_endpoints import simulate


def test_an_announced_packet_gets_erdy_before_its_first_beat_and_the_ack_tp_waits_for_it():
    """Tagged, a writer may announce a packet before its first beat (the UAS engine's SENSE for
    a write whose last data packet is arriving): the endpoint's ERDY goes and names the
    announced stream, and the host's ACK TP asking for it waits for the packet instead of
    getting an NRDY."""
    dut = BurstInEndpoint(tagged=True)
    host = Host(dut)
    payload = bytes(range(16))

    async def body(ctx):
        ctx.set(dut.framed, 1)
        ctx.set(dut.last_ends, 1)
        ctx.set(dut.packet_stream_id, 5)
        await host.cycle(ctx, ack=(0, 1, 0))  # nothing buffered nor announced: NRDY
        await host.idle(ctx, 40)
        assert host.handshakes == ["NRDY"]
        ctx.set(dut.announce, 1)
        await host.idle(ctx, 10)
        assert host.handshakes == ["NRDY", "ERDY"]
        assert ctx.get(dut.next_stream_id) == 5
        await host.cycle(ctx, ack=(0, 1, 0))  # the host's answer, before any beat
        await host.idle(ctx, 40)
        assert host.handshakes == ["NRDY", "ERDY"] and host.packets == []
        for i in range(0, len(payload), 4):  # the packet comes; the announcement ends
            ctx.set(dut.stream.valid, 1)
            ctx.set(dut.stream.payload.data, int.from_bytes(payload[i:i + 4], "little"))
            ctx.set(dut.stream.payload.keep, 0b1111)
            ctx.set(dut.stream.payload.last, i + 4 == len(payload))
            ctx.set(dut.announce, 0)
            while not ctx.get(dut.stream.ready):
                await host.cycle(ctx)
            await host.cycle(ctx)
        ctx.set(dut.stream.valid, 0)
        await host.run_until(ctx, 1, limit=200)

    sim = Simulator(dut)
    sim.add_clock(8e-9, domain="ss")
    sim.add_testbench(body)
    sim.run()
    assert host.handshakes == ["NRDY", "ERDY"]
    assert host.packets == [(0, payload, 1)]


def test_in_tagged_an_announced_sense_is_selected_once_the_last_stream_is_acknowledged():
    """UAS's status pipe during a write: the SENSE of stream 1 has gone, the host has not yet
    ACKed it, and the engine announces stream 2's (its write's last data packet is arriving):
    the ERDY naming 2 goes as soon as the host's ACK of 1's packet comes, before 2's SENSE is
    written."""
    dut = StreamInEndpoint(endpoint_number=1, slots=2, max_streams=8, tagged=True,
                           by_want=True)

    async def body(ctx, dut, host):
        ctx.set(dut.framed, 1)
        await host.ack(ctx, 0, 1, 1, 1)  # the host primes both status streams
        await host.ack(ctx, 0, 1, 2, 1)
        for word in range(4):  # stream 1's SENSE
            ctx.set(dut.stream.valid, 1)
            ctx.set(dut.stream.payload, {"data": word, "last": word == 3, "keep": 0b1111})
            ctx.set(dut.packet_stream_id, 1)
            await host.tick(ctx)
        ctx.set(dut.stream.valid, 0)
        await host.idle(ctx, 30)
        assert host.handshakes == [("NRDY", 0), ("NRDY", 0), ("ERDY", 1)], host.handshakes
        await host.ack(ctx, 0, 1, 1, 1)  # Start Stream on 1: its SENSE goes
        await host.idle(ctx, 40)
        assert host.packets == [(0, 1, 1)], host.packets
        ctx.set(dut.packet_stream_id, 2)
        ctx.set(dut.announce, 1)
        await host.idle(ctx, 20)
        assert host.handshakes[-1] == ("ERDY", 1)  # 1's packet is not acknowledged yet
        await host.ack(ctx, 1, 0, 1, 0)
        await host.idle(ctx, 8)
        assert host.handshakes[-1] == ("ERDY", 2), host.handshakes

    host = simulate(dut, body)
    assert host.errors == 0
