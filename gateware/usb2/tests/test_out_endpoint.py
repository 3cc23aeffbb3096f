"""The OUT sink endpoint, driven through LUNA's endpoint interface (Amaranth simulation)."""

from amaranth.sim import Simulator
from busprobe.gateware.usb2.out_endpoint import StreamOutEndpoint
from busprobe.protocol import usb2

OUT_PID = 0b0001


async def strobe(ctx, signal):
    ctx.set(signal, 1)
    await ctx.tick("usb")
    ctx.set(signal, 0)


async def out_transaction(ctx, dut, payload, toggle):
    """Token, data packet and handshake slot; returns (handshake, counted length or None, bytes
    that came out of the endpoint's stream)."""
    interface = dut.interface
    tokenizer, rx = interface.tokenizer, interface.rx
    ctx.set(tokenizer.endpoint, usb2.EP_OUT)
    ctx.set(tokenizer.is_out, 1)
    ctx.set(tokenizer.pid, OUT_PID)
    await strobe(ctx, tokenizer.new_token)
    ctx.set(interface.rx_pid_toggle, toggle)
    streamed = bytearray()
    ctx.set(dut.stream.ready, 1)

    async def tick():
        await ctx.tick("usb")
        if ctx.get(dut.stream.valid):
            streamed.append(ctx.get(dut.stream.p.data))
            # `last` marks the final byte of the packet, and only that one.
            assert ctx.get(dut.stream.p.last) == (len(streamed) == len(payload))

    for byte in payload:
        ctx.set(rx.valid, 1)
        ctx.set(rx.next, 1)
        ctx.set(rx.payload, byte)
        await tick()
    ctx.set(rx.valid, 0)
    ctx.set(rx.next, 0)
    ctx.set(interface.rx_complete, 1)
    await tick()
    ctx.set(interface.rx_complete, 0)
    for _ in range(4):
        await tick()
    ctx.set(interface.rx_ready_for_response, 1)
    handshake = ("ACK" if ctx.get(interface.handshakes_out.ack) else
                 "NAK" if ctx.get(interface.handshakes_out.nak) else None)
    counted = ctx.get(dut.acked_length) if ctx.get(dut.acked) else None
    await tick()
    ctx.set(interface.rx_ready_for_response, 0)
    for _ in range(len(payload) + 8):  # the buffer drains one byte per clock
        await tick()
    return handshake, counted, bytes(streamed)


def test_out_endpoint_acks_drops_duplicates_and_restarts_toggles_on_reset():
    dut = StreamOutEndpoint()

    async def testbench(ctx):
        first, second = bytes(range(200, 240)), bytes(range(7))
        assert await out_transaction(ctx, dut, first, toggle=0) == ("ACK", 40, first)
        # Same toggle again: the host missed our ACK and resent; ACK it, deliver nothing.
        assert await out_transaction(ctx, dut, first, toggle=0) == ("ACK", None, b"")
        assert await out_transaction(ctx, dut, second, toggle=1) == ("ACK", 7, second)
        assert await out_transaction(ctx, dut, first, toggle=0) == ("ACK", 40, first)
        # DATA1 expected now; after a bus reset / SET_CONFIGURATION the host starts at DATA0.
        await strobe(ctx, dut.reset_toggle)
        assert await out_transaction(ctx, dut, second, toggle=0) == ("ACK", 7, second)
        assert ctx.get(dut.nyet) == 0

    sim = Simulator(dut)
    sim.add_clock(1 / 60e6, domain="usb")
    sim.add_testbench(testbench)
    sim.run()


def test_out_endpoint_refuses_a_buffer_smaller_than_two_packets():
    import pytest

    with pytest.raises(ValueError, match="two full packets"):
        StreamOutEndpoint(buffer_packets=1)
