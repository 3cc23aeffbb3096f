"""GET_DESCRIPTOR at SuperSpeed from the descriptor ROM (``DescriptorRomHandler``): every
descriptor at every wLength boundary through the control endpoint, and the handler alone under
a consumer that stops at random."""

import random

import pytest
from busprobe.gateware.usb3.descriptor_rom import DescriptorRomHandler, descriptor_rom_layout
from busprobe.gateware.usb3.descriptors import build_descriptors
from busprobe.gateware.usb3.tests.control_driver import (
    ControlEndpointUnderTest,
    control_in,
    control_out,
    run_ss,
    setup_packet,
)
from busprobe.protocol import usb3

FROM_DEVICE, GET_DESCRIPTOR = 0x80, 6
DESCRIPTORS = {(kind, index): bytes(raw) for kind, index, raw in build_descriptors()}


def _lengths(size):
    """wLength's boundaries for a descriptor of ``size`` bytes: none, one byte, one short of it,
    exactly it, one more, and multiples of EP0's 512-byte packet up to the largest wLength."""
    packet = usb3.CONTROL_MAX_PACKET_SIZE
    return sorted({0, 1, size - 1, size, size + 1, packet, 2 * packet, 0xFFFF})


def run(body, dut):
    return run_ss(dut, body)


def test_every_descriptor_is_its_first_wlength_bytes_at_every_length_boundary():
    cases = [(key, length) for key, raw in DESCRIPTORS.items() for length in _lengths(len(raw))]

    async def body(ctx, dut, results):
        for (kind, index), length in cases:
            packet = setup_packet(FROM_DEVICE, GET_DESCRIPTOR, kind << 8 | index, 0x0409,
                                  length)
            if length == 0:   # no data stage: SETUP, then STATUS
                results[kind, index, length] = (b"", await control_out(ctx, dut.interface,
                                                                         packet))
            else:
                results[kind, index, length] = await control_in(ctx, dut.interface, packet)

    got = run(body, ControlEndpointUnderTest())
    expected = {(kind, index, length): (raw[:length], "ack")
                for (kind, index), raw in DESCRIPTORS.items() for length in _lengths(len(raw))}
    wrong = {case: got[case] for case in expected if got[case] != expected[case]}
    assert not wrong, f"{len(wrong)} of {len(expected)} replies wrong: {wrong}"


@pytest.mark.parametrize("value", [0x0100 | 1, 0x0200 | 1, 0x0300 | 4, 0x0600, 0x0000, 0xFFFF])
def test_a_descriptor_the_device_does_not_have_stalls(value):
    async def body(ctx, dut, results):
        results["answer"] = await control_in(ctx, dut.interface, setup_packet(
            FROM_DEVICE, GET_DESCRIPTOR, value, length=64))
        # and the next request is answered as usual
        results["device"] = await control_in(ctx, dut.interface, setup_packet(
            FROM_DEVICE, GET_DESCRIPTOR, 0x0100, length=18))

    got = run(body, ControlEndpointUnderTest())
    assert got == {"answer": (None, "stall"), "device": (DESCRIPTORS[1, 0], "ack")}


def test_the_reply_never_has_a_hole_under_random_stops_and_restarts_on_a_new_start():
    """The handler alone: its consumer stops at random; from ``first`` to ``last`` ``valid``
    stays up (LUNA's transmitter would end the packet), and a second ``start`` in the middle of a
    reply sends the whole reply again."""
    dut = DescriptorRomHandler(build_descriptors())
    rng = random.Random(27)

    async def receive(ctx, results, *, abandon_after=None):
        words, started = [], False
        for _ in range(400):
            ready = rng.random() < 0.6
            ctx.set(dut.tx.ready, ready)
            await ctx.delay(1e-9)   # the handler's combinational outputs settle
            valid = ctx.get(dut.tx.valid)
            if started and not valid:
                results["holes"] += 1
            if valid and ready:
                started = True
                if ctx.get(dut.tx.first):
                    words = []
                words.append(ctx.get(dut.tx.data).to_bytes(4, "little")[:bin(valid).count("1")])
                if ctx.get(dut.tx.last):
                    await ctx.tick("ss")
                    return b"".join(words), ctx.get(dut.tx_length)
                if abandon_after is not None and len(words) == abandon_after:
                    await ctx.tick("ss")
                    return None, None
            await ctx.tick("ss")
        return None, None

    async def body(ctx, _, results):
        results["holes"] = 0
        for (kind, index), raw in DESCRIPTORS.items():
            for length in (len(raw), 7):
                ctx.set(dut.value, kind << 8 | index)
                ctx.set(dut.length, length)
                await ctx.tick("ss").repeat(4)
                ctx.set(dut.start, 1)
                await ctx.tick("ss")
                ctx.set(dut.start, 0)
                if len(raw) > 8:   # abandoned after a word, then started again
                    await receive(ctx, results, abandon_after=1)
                    results["holes"] = 0
                    ctx.set(dut.start, 1)
                    await ctx.tick("ss")
                    ctx.set(dut.start, 0)
                results[kind, index, length] = await receive(ctx, results)

    got = run(body, dut)
    assert got.pop("holes") == 0
    assert got == {(kind, index, length): (raw[:length], min(length, len(raw)))
                   for (kind, index), raw in DESCRIPTORS.items() for length in (len(raw), 7)}


def test_a_descriptor_longer_than_one_control_packet_is_refused_with_one_line():
    with pytest.raises(ValueError, match="is 600 bytes; EP0 sends at most 512"):
        descriptor_rom_layout([(2, 0, bytes(600))])
