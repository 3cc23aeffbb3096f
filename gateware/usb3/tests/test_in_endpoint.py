"""Bulk IN endpoint: bursts within the host's NumP window, cumulative ACKs, retries, transfer
framing with EOB, NRDY/ERDY; the data is the pattern stream, unbroken."""

import random

from amaranth import Module
from amaranth.sim import Simulator
from busprobe.gateware.common.pattern import PatternGenerator
from busprobe.gateware.usb3.in_endpoint import BurstInEndpoint
from busprobe.gateware.usb3.transaction import HandshakeKind


class SourcedEndpoint(BurstInEndpoint):
    """The endpoint fed by the pattern generator, as the device wires it."""

    def elaborate(self, platform):
        m = Module()
        m.submodules.endpoint = super().elaborate(platform)
        m.submodules.pattern = pattern = PatternGenerator(domain="ss")
        m.d.comb += [self.stream.valid.eq(1), self.stream.payload.data.eq(pattern.word),
                     self.stream.payload.keep.eq(0b1111),
                     pattern.advance.eq(self.stream.valid & self.stream.ready),
                     pattern.restart.eq(self.flush)]
        return m


class Host:
    """Records what the endpoint sends and answers with ACK TPs when told."""

    def __init__(self, dut, ready_probability=1.0):
        self.dut = dut
        self._ready = random.Random(7)
        self._ready_probability = ready_probability
        self.packets = []  # (sequence, payload, eob)
        self.handshakes = []  # "NRDY" / "ERDY"
        self._current = None

    async def cycle(self, ctx, *, ack=None):
        """One clock; ``ack`` = (sequence, nump, retry) puts an ACK TP on the interface."""
        iface = self.dut.interface
        hs = iface.handshakes_in
        if ack is not None:
            sequence, nump, retry = ack
            ctx.set(hs.endpoint_number, 1)
            ctx.set(hs.direction, 1)
            ctx.set(hs.next_sequence, sequence)
            ctx.set(hs.number_of_packets, nump)
            ctx.set(hs.retry_required, retry)
            ctx.set(hs.ack_received, 1)
        ready = self._ready.random() < self._ready_probability
        ctx.set(iface.tx.ready, ready)
        valid = ctx.get(iface.tx.valid) if ready else 0
        if ctx.get(iface.tx_zlp):
            self.packets.append((ctx.get(iface.tx_sequence_number), b"",
                                 ctx.get(self.dut.end_of_burst)))
        if valid:
            if ctx.get(iface.tx.first):
                self._current = bytearray()
                self._length = ctx.get(iface.tx_length)
            word = ctx.get(iface.tx.data).to_bytes(4, "little")
            self._current += word[:bin(valid).count("1")]
            if ctx.get(iface.tx.last):
                assert len(self._current) == self._length
                self.packets.append((ctx.get(iface.tx_sequence_number), bytes(self._current),
                                     ctx.get(self.dut.end_of_burst)))
        if ctx.get(self.dut.handshake.valid):
            kind = ctx.get(self.dut.handshake.request.kind)
            self.handshakes.append(HandshakeKind(kind).name)
            ctx.set(self.dut.handshake.done, 1)
        await ctx.tick("ss")
        ctx.set(hs.ack_received, 0)
        ctx.set(self.dut.handshake.done, 0)

    async def run_until(self, ctx, packets, limit=20000):
        for _ in range(limit):
            if len(self.packets) >= packets:
                return
            await self.cycle(ctx)
        raise AssertionError(f"only {len(self.packets)} of {packets} packets in {limit} cycles")

    async def idle(self, ctx, cycles):
        for _ in range(cycles):
            await self.cycle(ctx)

    async def strobe(self, ctx, signal):
        """``signal`` high for one clock."""
        ctx.set(signal, 1)
        await self.cycle(ctx)
        ctx.set(signal, 0)


def simulate(body, ready_probability=1.0, **kwargs):
    dut = SourcedEndpoint(**kwargs)
    host = Host(dut, ready_probability)
    sim = Simulator(dut)
    sim.add_clock(8e-9, domain="ss")

    async def testbench(ctx):
        await body(ctx, dut, host)

    sim.add_testbench(testbench)
    sim.run()
    return host


def expected_stream(total):
    """The first ``total`` bytes of the COUNTER pattern."""
    return b"".join(i.to_bytes(4, "little") for i in range((total + 3) // 4))[:total]


def test_sends_the_window_then_stops_and_continues_on_the_next_ack():
    async def body(ctx, dut, host):
        await host.idle(ctx, 600)  # the ring fills
        await host.cycle(ctx, ack=(0, 4, 0))
        await host.run_until(ctx, 4)
        await host.idle(ctx, 600)
        assert len(host.packets) == 4, "sent past the NumP window"
        await host.cycle(ctx, ack=(4, 3, 0))
        await host.run_until(ctx, 7)

    host = simulate(body)
    assert [seq for seq, _, _ in host.packets] == list(range(7))
    data = b"".join(payload for _, payload, _ in host.packets)
    assert all(len(payload) == 1024 for _, payload, _ in host.packets)
    assert data == expected_stream(len(data))
    assert not any(eob for _, _, eob in host.packets) and host.handshakes == []


def test_retry_rewinds_to_the_first_unacknowledged_packet():
    async def body(ctx, dut, host):
        await host.idle(ctx, 600)
        await host.cycle(ctx, ack=(0, 4, 0))
        await host.run_until(ctx, 4)
        await host.cycle(ctx, ack=(1, 4, 1))  # packet 1 arrived corrupted
        await host.run_until(ctx, 8)

    host = simulate(body)
    sequences = [seq for seq, _, _ in host.packets]
    assert sequences == [0, 1, 2, 3, 1, 2, 3, 4]
    first = {seq: payload for seq, payload, _ in host.packets[:4]}
    assert [payload for _, payload, _ in host.packets[4:7]] == [first[1], first[2], first[3]]
    assert host.packets[7][1] == expected_stream(5 * 1024)[4096:]


def test_transfer_ends_with_a_short_eob_packet_then_erdy_and_the_stream_continues():
    async def body(ctx, dut, host):
        ctx.set(dut.transfer_length, 2500)
        await host.idle(ctx, 600)
        await host.cycle(ctx, ack=(0, 8, 0))
        await host.run_until(ctx, 3)
        await host.idle(ctx, 50)
        assert len(host.packets) == 3 and host.handshakes == []
        await host.cycle(ctx, ack=(3, 8, 0))  # acknowledges the EOB packet
        await host.idle(ctx, 20)
        assert host.handshakes == ["ERDY"]
        await host.cycle(ctx, ack=(3, 8, 0))
        await host.run_until(ctx, 6)

    host = simulate(body)
    assert [len(p) for _, p, _ in host.packets] == [1024, 1024, 452, 1024, 1024, 452]
    assert [eob for _, _, eob in host.packets] == [0, 0, 1, 0, 0, 1]
    data = b"".join(payload for _, payload, _ in host.packets)
    assert data == expected_stream(len(data))


def test_exact_multiple_with_zlp_flag_ends_with_a_zero_length_eob_packet():
    async def body(ctx, dut, host):
        ctx.set(dut.transfer_length, 2048)
        ctx.set(dut.zlp, 1)
        await host.idle(ctx, 600)
        await host.cycle(ctx, ack=(0, 8, 0))
        await host.run_until(ctx, 3)

    host = simulate(body)
    assert [(len(p), eob) for _, p, eob in host.packets] == [(1024, 0), (1024, 0), (0, 1)]


async def _cycles_to_first_beat(ctx, dut, host, ack):
    """Cycles from the one the ACK TP is decoded in to the packet's first word at LUNA."""
    await host.cycle(ctx, ack=ack)
    cycles = 0
    while not ctx.get(dut.interface.tx.valid):
        await host.cycle(ctx)
        cycles += 1
    return cycles


def test_a_staged_packet_answers_the_ack_tp_that_opens_the_window_two_cycles_sooner():
    """The next new packet's first words are read while the window is shut: the ACK TP's
    fields registered, the window's compare registered, then the first word (6 cycles, with
    START and PRIME after the ACK TP, before staging). After an EOB packet, the next is
    staged again while the host has not asked for it."""
    answers = []

    async def body(ctx, dut, host):
        ctx.set(dut.transfer_length, 1500)
        await host.idle(ctx, 600)
        answers.append(await _cycles_to_first_beat(ctx, dut, host, (0, 2, 0)))
        await host.run_until(ctx, 2)
        await host.cycle(ctx, ack=(2, 2, 0))  # all acknowledged: ERDY
        await host.idle(ctx, 30)
        answers.append(await _cycles_to_first_beat(ctx, dut, host, (2, 2, 0)))
        await host.run_until(ctx, 4)

    host = simulate(body)
    assert answers == [4, 4]
    assert host.handshakes == ["ERDY"]
    assert [(len(p), eob) for _, p, eob in host.packets] == [(1024, 0), (476, 1)] * 2
    data = b"".join(payload for _, payload, _ in host.packets)
    assert data == expected_stream(len(data))


def test_a_transfer_request_or_a_flush_while_a_packet_is_staged_stages_the_new_one():
    """What is staged is dropped when what it would send changes: the new transfer's length,
    the pattern restarted at the next word."""
    async def body(ctx, dut, host):
        await host.idle(ctx, 600)  # a full packet of the endless stream staged
        ctx.set(dut.transfer_length, 3)  # one beat: the staged packet had 256
        await host.strobe(ctx, dut.new_transfer)
        await host.idle(ctx, 20)
        await host.cycle(ctx, ack=(0, 1, 0))
        await host.run_until(ctx, 1)
        await host.cycle(ctx, ack=(1, 1, 0))  # acknowledges the EOB packet: ERDY
        await host.idle(ctx, 20)
        await host.strobe(ctx, dut.flush)
        await host.idle(ctx, 600)
        await host.cycle(ctx, ack=(1, 1, 0))
        await host.run_until(ctx, 2)

    host = simulate(body)
    assert host.handshakes == ["ERDY"]
    assert [(len(p), eob) for _, p, eob in host.packets] == [(3, 1), (3, 1)]
    assert host.packets[0][1] == expected_stream(3)
    assert host.packets[1][1] == expected_stream(3), "the flush restarted the pattern"


def test_a_request_with_nothing_buffered_gets_nrdy_then_erdy():
    async def body(ctx, dut, host):
        await host.cycle(ctx, ack=(0, 4, 0))  # at reset: the ring is still empty
        await host.idle(ctx, 400)
        assert host.packets == []
        assert host.handshakes == ["NRDY", "ERDY"]
        await host.cycle(ctx, ack=(0, 2, 0))
        await host.run_until(ctx, 2)

    host = simulate(body)
    assert [seq for seq, _, _ in host.packets] == [0, 1]


def test_the_data_survives_a_link_that_stalls_the_stream():
    """LUNA's transmitter takes a beat, then holds ``ready`` low while it sends the header."""
    async def body(ctx, dut, host):
        ctx.set(dut.transfer_length, 2500)
        await host.idle(ctx, 600)
        await host.cycle(ctx, ack=(0, 8, 0))
        await host.run_until(ctx, 3)

    host = simulate(body, ready_probability=0.6)
    data = b"".join(payload for _, payload, _ in host.packets)
    assert [len(p) for _, p, _ in host.packets] == [1024, 1024, 452]
    assert data == expected_stream(len(data))


def test_halted_it_answers_stall_and_a_restart_sends_from_sequence_0_after_a_flush():
    """SET_FEATURE(ENDPOINT_HALT): an ACK TP asking for data gets a STALL TP and nothing is
    sent; CLEAR_FEATURE restarts the sequence (``restart``), and after a pattern restart
    (``flush``) the packets from sequence 0 carry the pattern from its start."""
    async def body(ctx, dut, host):
        await host.idle(ctx, 600)
        await host.cycle(ctx, ack=(0, 2, 0))
        await host.run_until(ctx, 2)
        ctx.set(dut.halt, 1)
        await host.cycle(ctx, ack=(2, 2, 0))
        await host.idle(ctx, 300)
        assert len(host.packets) == 2 and host.handshakes == ["STALL"]
        ctx.set(dut.restart, 1)     # as the request handler does it: the strobe, then the
        await host.cycle(ctx)       # halt is cleared
        ctx.set(dut.restart, 0)
        ctx.set(dut.halt, 0)
        await host.idle(ctx, 50)
        ctx.set(dut.flush, 1)
        await host.cycle(ctx)
        ctx.set(dut.flush, 0)
        await host.idle(ctx, 600)
        del host.packets[:]
        await host.cycle(ctx, ack=(0, 2, 0))
        await host.run_until(ctx, 2)

    host = simulate(body)
    assert [seq for seq, _, _ in host.packets] == [0, 1]
    assert b"".join(payload for _, payload, _ in host.packets) == expected_stream(2048)


def simulate_framed(packets, body, ready_probability=1.0):
    """The endpoint in framed mode (loopback) fed ``packets`` (bytes each) through its stream,
    as the OUT endpoint drains them: one beat a cycle, ``last`` on each packet's final beat."""
    dut = BurstInEndpoint()
    host = Host(dut, ready_probability)
    sim = Simulator(dut)
    sim.add_clock(8e-9, domain="ss")
    beats = []
    for payload in packets:
        words = [payload[i:i + 4] for i in range(0, len(payload), 4)]
        beats += [(int.from_bytes(word, "little"), (1 << len(word)) - 1, i == len(words) - 1)
                  for i, word in enumerate(words)]

    async def feed(ctx):
        ctx.set(dut.framed, 1)
        for data, keep, last in beats:
            ctx.set(dut.stream.valid, 1)
            ctx.set(dut.stream.payload.data, data)
            ctx.set(dut.stream.payload.keep, keep)
            ctx.set(dut.stream.payload.last, last)
            await ctx.tick("ss").until(dut.stream.ready)
        ctx.set(dut.stream.valid, 0)

    async def testbench(ctx):
        await body(ctx, dut, host)

    sim.add_process(feed)
    sim.add_testbench(testbench)
    sim.run()
    return host


def framed_packets():
    rng = random.Random(3)
    sizes = [1024, 1024, 1, 1024, 1025 - 1024, 4097 % 1024, 1024, 1024, 1024, 1023, 2, 3, 1024]
    return [bytes(rng.randrange(256) for _ in range(size)) for size in sizes]


def test_framed_packets_go_out_as_they_came_short_ones_ending_the_transfer():
    packets = framed_packets()

    async def body(ctx, dut, host):
        # As the host model does: an ACK TP for every packet received (the window re-stated),
        # and a new one after each ERDY (an EOB packet, or the NRDY of the first, empty ask).
        acked, erdys = -1, 0
        for _ in range(20_000):
            if len(host.packets) == len(packets):
                break
            fresh = len(host.packets) != acked or host.handshakes.count("ERDY") != erdys
            acked, erdys = len(host.packets), host.handshakes.count("ERDY")
            await host.cycle(ctx, ack=(acked % 32, 16, 0) if fresh else None)

    host = simulate_framed(packets, body, ready_probability=0.8)
    assert [payload for _, payload, _ in host.packets] == packets
    assert [eob for _, _, eob in host.packets] == [len(p) < 1024 for p in packets]
    assert [seq for seq, _, _ in host.packets] == list(range(len(packets)))


def test_framed_retry_resends_the_same_packets():
    packets = framed_packets()[:6]

    async def body(ctx, dut, host):
        await host.idle(ctx, 2000)  # every packet in the ring
        await host.cycle(ctx, ack=(0, 16, 0))
        await host.run_until(ctx, 3)  # 1024, 1024, then the 1-byte EOB packet
        await host.cycle(ctx, ack=(1, 16, 1))  # packet 1 arrived corrupted
        await host.run_until(ctx, 5)

    host = simulate_framed(packets, body)
    assert [(seq, len(p)) for seq, p, _ in host.packets] == [
        (0, 1024), (1, 1024), (2, 1), (1, 1024), (2, 1)]
    assert [p for _, p, _ in host.packets[3:]] == packets[1:3]
