"""Bulk OUT endpoint into the word checker: NumP from free buffers, sequence checks, retries,
the drained stream continuous across short packets."""

import random

from amaranth import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator
from busprobe.gateware.common.word_checker import PatternWordChecker
from busprobe.gateware.usb3.out_endpoint import BurstOutEndpoint
from busprobe.gateware.usb3.transaction import HandshakeKind
from busprobe.protocol.patterns import NO_ERROR_OFFSET


def counter_bytes(start, length):
    words = b"".join(i.to_bytes(4, "little") for i in range(start // 4, (start + length) // 4 + 2))
    return words[start % 4:start % 4 + length]


class CheckedEndpoint(BurstOutEndpoint):
    def elaborate(self, platform):
        m = Module()
        m.submodules.endpoint = super().elaborate(platform)
        m.submodules.checker = self.checker = PatternWordChecker()
        wiring.connect(m, self.stream, self.checker.stream)
        return m


class Host:
    """Sends DPs through the endpoint interface as LUNA's link layer delivers them."""

    def __init__(self, dut):
        self.dut = dut
        self.handshakes = []  # (kind, sequence, nump, retry)

    async def tick(self, ctx):
        hs = self.dut.handshake
        if ctx.get(hs.valid):
            request = hs.request
            self.handshakes.append((HandshakeKind(ctx.get(request.kind)).name,
                                    ctx.get(request.sequence), ctx.get(request.number_of_packets),
                                    ctx.get(request.retry)))
            ctx.set(hs.done, 1)
        await ctx.tick("ss")
        ctx.set(hs.done, 0)

    async def send(self, ctx, sequence, payload, *, corrupt=False, endpoint=2):
        iface = self.dut.interface
        header, rx = iface.rx_header, iface.rx
        ctx.set(header.endpoint_number, endpoint)
        ctx.set(header.data_sequence, sequence)
        ctx.set(header.data_length, len(payload))
        words = [payload[i:i + 4] for i in range(0, len(payload), 4)]
        for index, word in enumerate(words):
            ctx.set(rx.valid, (1 << len(word)) - 1)
            ctx.set(rx.first, index == 0)
            ctx.set(rx.last, index == len(words) - 1)
            ctx.set(rx.data, int.from_bytes(word, "little"))
            await self.tick(ctx)
        ctx.set(rx.valid, 0)
        ctx.set(iface.rx_invalid if corrupt else iface.rx_complete, 1)
        await self.tick(ctx)
        ctx.set(iface.rx_invalid, 0)
        ctx.set(iface.rx_complete, 0)
        for _ in range(8):  # inter-packet gap on the link
            await self.tick(ctx)

    async def idle(self, ctx, cycles):
        for _ in range(cycles):
            await self.tick(ctx)


def simulate(body, *, checked=True):
    dut = CheckedEndpoint() if checked else BurstOutEndpoint()
    host = Host(dut)
    sim = Simulator(dut)
    sim.add_clock(8e-9, domain="ss")
    results = {}

    async def testbench(ctx):
        await body(ctx, dut, host, results)
        if checked:
            await host.idle(ctx, 600)  # drain
            results["errors"] = ctx.get(dut.checker.errors)
            results["offset"] = ctx.get(dut.checker.offset)
            results["first_error"] = ctx.get(dut.checker.first_error_offset)

    sim.add_testbench(testbench)
    sim.run()
    return host, results


def test_a_burst_of_any_lengths_is_acked_with_numps_from_free_buffers_and_checks_clean():
    lengths = [1024, 1024, 1001, 3, 1024, 0, 517]

    async def body(ctx, dut, host, results):
        offset = 0
        for sequence, length in enumerate(lengths):
            await host.send(ctx, sequence, counter_bytes(offset, length))
            offset += length

    host, results = simulate(body)
    acks = [h for h in host.handshakes if h[0] == "ACK"]
    assert [h[1] for h in acks] == list(range(1, len(lengths) + 1))
    # A full packet drains (258 cycles) before the next arrives (265): 15 buffers free again;
    # the short ones arrive while a full one drains, and wait behind it in order.
    assert [h[2] for h in acks] == [15, 15, 15, 14, 15, 14, 13]
    assert not any(h[3] for h in acks)
    assert results == {"errors": 0, "offset": sum(lengths), "first_error": NO_ERROR_OFFSET}


def test_corrupted_and_out_of_sequence_packets_get_a_retry_and_never_reach_the_stream():
    async def body(ctx, dut, host, results):
        await host.send(ctx, 0, counter_bytes(0, 1024))
        await host.send(ctx, 1, bytes(1024), corrupt=True)  # CRC-32 failed
        await host.send(ctx, 2, counter_bytes(2048, 1024))  # the host had sent ahead
        await host.send(ctx, 1, counter_bytes(1024, 1024))
        await host.send(ctx, 0, counter_bytes(0, 1024))  # a duplicate (lost ACK)

    host, results = simulate(body)
    assert [(kind, seq, retry) for kind, seq, _, retry in host.handshakes] == [
        ("ACK", 1, 0), ("ACK", 1, 1), ("ACK", 1, 1), ("ACK", 2, 0), ("ACK", 2, 1)]
    assert results["errors"] == 0 and results["offset"] == 2048


def test_wrong_data_is_counted_per_pattern_word_with_the_first_offset():
    async def body(ctx, dut, host, results):
        good = bytearray(counter_bytes(0, 1001) + counter_bytes(1001, 1024))
        for position in (1500, 1501, 1700):  # two bytes of one word, one of another
            good[position] ^= 0xFF
        await host.send(ctx, 0, bytes(good[:1001]))
        await host.send(ctx, 1, bytes(good[1001:]))

    _, results = simulate(body)
    assert results["errors"] == 2 and results["first_error"] == 1500


def test_a_full_set_of_buffers_advertises_fewer_packets_and_erdy_follows_numP_zero():
    rng = random.Random(3)

    async def body(ctx, dut, host, results):
        ctx.set(dut.stream.ready, 0)  # nothing drains: every DP takes a buffer
        offset = 0
        for sequence in range(16):
            length = rng.choice([1024, 4, 999])
            await host.send(ctx, sequence, counter_bytes(offset, length))
            offset += length
        await host.send(ctx, 16, counter_bytes(offset, 8))  # beyond the window: NRDY
        results["before_drain"] = list(host.handshakes)
        ctx.set(dut.stream.ready, 1)
        await host.idle(ctx, 600)

    host, results = simulate(body, checked=False)
    acks = [h for h in host.handshakes if h[0] == "ACK"]
    assert [h[2] for h in acks] == list(range(15, -1, -1))
    assert [h[0] for h in results["before_drain"]][-1] == "NRDY"
    assert host.handshakes[len(results["before_drain"])][0] == "ERDY"


def test_a_pattern_restart_while_a_packet_drains_drops_it_and_the_next_packets_check_clean():
    async def body(ctx, dut, host, results):
        await host.send(ctx, 0, counter_bytes(0, 1024))
        await host.send(ctx, 1, counter_bytes(1024, 1))
        await host.idle(ctx, 40)  # the first packet is draining
        ctx.set(dut.flush, 1)
        ctx.set(dut.checker.restart, 1)
        await host.tick(ctx)
        ctx.set(dut.flush, 0)
        ctx.set(dut.checker.restart, 0)
        await host.idle(ctx, 5)
        await host.send(ctx, 2, counter_bytes(0, 1024))
        await host.send(ctx, 3, counter_bytes(1024, 1))

    host, results = simulate(body)
    assert results == {"errors": 0, "offset": 1025, "first_error": NO_ERROR_OFFSET}
    assert all(nump <= 16 for _, _, nump, _ in host.handshakes)
