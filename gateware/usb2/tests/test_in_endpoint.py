"""The always-ready IN endpoint, driven through LUNA's endpoint interface (Amaranth simulation)."""

from amaranth import Elaboratable, Module, Signal
from amaranth.sim import Simulator
from busprobe.gateware.common.pattern import PATTERN_SHAPE, PatternByteSource
from busprobe.gateware.usb2.in_endpoint import StreamInEndpoint
from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern, PatternStream

IN_PID = 0b1001


class PatternIn(Elaboratable):
    """The IN endpoint fed by the pattern source, as the device wires it in pattern mode."""

    def __init__(self):
        self.endpoint = StreamInEndpoint()
        self.pattern = Signal(PATTERN_SHAPE)
        self.restart = Signal()
        for name in ("interface", "transfer_length", "zlp", "reframe", "nak", "token",
                     "acked", "acked_length"):
            setattr(self, name, getattr(self.endpoint, name))

    def elaborate(self, platform):
        m = Module()
        m.submodules.endpoint = endpoint = self.endpoint
        m.submodules.source = source = PatternByteSource(domain="usb")
        m.d.comb += [
            source.pattern.eq(self.pattern),
            source.restart.eq(self.restart),
            endpoint.flush.eq(self.restart),
            endpoint.cut_through.eq(1),
            endpoint.stream.valid.eq(1),
            endpoint.stream.p.data.eq(source.stream.payload),
            source.stream.ready.eq(endpoint.stream.ready),
        ]
        return m


def run(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(1 / 60e6, domain="usb")
    sim.add_testbench(testbench)
    sim.run()


async def strobe(ctx, signal):
    ctx.set(signal, 1)
    await ctx.tick("usb")
    ctx.set(signal, 0)


async def in_transaction(ctx, dut, *, ack=True):
    """One IN token to EP1; returns (payload, data toggle, was_zlp)."""
    tokenizer = dut.interface.tokenizer
    ctx.set(tokenizer.endpoint, usb2.EP_IN & 0x7F)
    ctx.set(tokenizer.is_in, 1)
    ctx.set(tokenizer.pid, IN_PID)
    await strobe(ctx, tokenizer.new_token)
    await ctx.tick("usb").repeat(3)
    ctx.set(tokenizer.ready_for_response, 1)
    payload, zlp, toggle = bytearray(), False, None
    tx = dut.interface.tx
    ctx.set(tx.ready, 1)
    for cycle in range(2 * usb2.MAX_PACKET_SIZE):
        if cycle == 1:
            ctx.set(tokenizer.ready_for_response, 0)  # a one-cycle strobe
        if ctx.get(tx.valid):
            toggle = ctx.get(dut.interface.tx_pid_toggle)
            if ctx.get(tx.last) and not ctx.get(tx.first) and not payload:
                zlp = True
            else:
                assert ctx.get(tx.first) == (not payload)
                payload.append(ctx.get(tx.payload))
            if ctx.get(tx.last):
                await ctx.tick("usb")
                break
        await ctx.tick("usb")
    else:
        raise AssertionError("the endpoint did not answer the IN token")
    ctx.set(tx.ready, 0)
    ctx.set(tokenizer.ready_for_response, 0)
    assert ctx.get(dut.nak) == 0
    await ctx.tick("usb").repeat(2)
    if ack:
        await strobe(ctx, dut.interface.handshakes_in.ack)
    return bytes(payload), toggle, zlp


async def configure(ctx, dut, *, pattern=Pattern.COUNTER, length=0, zlp=False):
    ctx.set(dut.pattern, pattern)
    ctx.set(dut.transfer_length, length)
    ctx.set(dut.zlp, zlp)
    await strobe(ctx, dut.restart)
    await ctx.tick("usb").repeat(8)   # the ring fills while the host's token is on its way


def test_in_endpoint_frames_transfers_and_continues_the_pattern_across_them():
    dut = PatternIn()
    stream = PatternStream(Pattern.PRBS31)

    async def testbench(ctx):
        await configure(ctx, dut, pattern=Pattern.PRBS31, length=1000)
        lengths = []
        for _ in range(4):
            payload, _, _ = await in_transaction(ctx, dut)
            lengths.append(len(payload))
            assert payload == stream.take(len(payload))
        assert lengths == [512, 488, 512, 488]

    run(dut, testbench)


def test_in_endpoint_resends_an_unacknowledged_packet_with_the_same_toggle():
    dut = PatternIn()

    async def testbench(ctx):
        await configure(ctx, dut)
        first, toggle0, _ = await in_transaction(ctx, dut, ack=False)
        again, toggle1, _ = await in_transaction(ctx, dut)
        after, toggle2, _ = await in_transaction(ctx, dut)
        assert first == again == PatternStream(Pattern.COUNTER).take(512)
        assert (toggle0, toggle1, toggle2) == (0, 0, 1)
        assert after[:4] == (128).to_bytes(4, "little")

    run(dut, testbench)


def test_in_endpoint_sends_a_zlp_after_a_full_packet_transfer_when_asked():
    dut = PatternIn()

    async def testbench(ctx):
        await configure(ctx, dut, length=1024, zlp=True)
        shapes = [(len(p), z) for p, _, z in [await in_transaction(ctx, dut) for _ in range(4)]]
        assert shapes == [(512, False), (512, False), (0, True), (512, False)]

    run(dut, testbench)


def test_set_in_transfer_reframes_at_the_next_packet_without_restarting_the_stream():
    dut = PatternIn()
    stream = PatternStream(Pattern.COUNTER)

    async def testbench(ctx):
        await configure(ctx, dut, length=0)
        payload, _, _ = await in_transaction(ctx, dut)
        assert payload == stream.take(512)
        ctx.set(dut.transfer_length, 100)
        await strobe(ctx, dut.reframe)
        for _ in range(2):
            payload, _, _ = await in_transaction(ctx, dut)
            assert payload == stream.take(100)

    run(dut, testbench)


async def token_nak(ctx, dut):
    """An IN token the endpoint must NAK."""
    tokenizer = dut.interface.tokenizer
    ctx.set(tokenizer.endpoint, usb2.EP_IN & 0x7F)
    ctx.set(tokenizer.is_in, 1)
    await strobe(ctx, tokenizer.new_token)
    await ctx.tick("usb").repeat(3)
    ctx.set(tokenizer.ready_for_response, 1)
    nak, valid = ctx.get(dut.interface.handshakes_out.nak), ctx.get(dut.interface.tx.valid)
    await ctx.tick("usb")
    ctx.set(tokenizer.ready_for_response, 0)
    return nak and not valid


def test_in_endpoint_sends_packets_the_stream_closes_and_naks_until_one_is_ready():
    dut = StreamInEndpoint()
    data = bytes((7 * i) & 0xFF for i in range(700))

    async def write(ctx, chunk, last):
        for i, byte in enumerate(chunk):
            ctx.set(dut.stream.valid, 1)
            ctx.set(dut.stream.p.data, byte)
            ctx.set(dut.stream.p.last, last and i == len(chunk) - 1)
            await ctx.tick("usb")
        ctx.set(dut.stream.valid, 0)
        await ctx.tick("usb").repeat(3)

    async def testbench(ctx):
        assert await token_nak(ctx, dut)        # nothing written yet
        await write(ctx, data[:30], last=False)
        assert await token_nak(ctx, dut)        # 30 bytes and no `last`: not a packet yet
        await write(ctx, data[30:40], last=True)
        payload, toggle, _ = await in_transaction(ctx, dut)
        assert (payload, toggle) == (data[:40], 0)
        await write(ctx, data[40:700], last=True)
        first, _, _ = await in_transaction(ctx, dut)
        second, toggle, _ = await in_transaction(ctx, dut)
        assert (first, second, toggle) == (data[40:552], data[552:700], 0)
        assert await token_nak(ctx, dut)

    run(dut, testbench)
