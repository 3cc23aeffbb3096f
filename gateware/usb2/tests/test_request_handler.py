"""Vendor request handler, driven through LUNA's request-handler interface, as the lean default
(no optional part) and the full design (every :class:`~busprobe.protocol.usb2.Feature`) build it.
"""

import struct

import pytest
from amaranth import Elaboratable, Module
from amaranth.sim import Simulator
from busprobe.gateware.usb2.descriptors import build_descriptors
from busprobe.gateware.usb2.request_handler import ProbeRequestHandler
from busprobe.gateware.usb2.telemetry import Usb2Telemetry
from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern
from usb_protocol.types import USBRequestRecipient, USBRequestType, USBStandardRequests


class HandlerWithSnapshot(Elaboratable):
    """The request handler reading the telemetry's snapshot RAM, as the device wires them."""

    def __init__(self, features=usb2.NO_FEATURES):
        self.handler = ProbeRequestHandler(features=features)
        self.telemetry = Usb2Telemetry(features=features)
        self.interface = self.handler.interface

    def __getattr__(self, name):
        return getattr(self.handler, name)

    def elaborate(self, platform):
        m = Module()
        m.submodules.handler = handler = self.handler
        m.submodules.telemetry = telemetry = self.telemetry
        m.d.comb += [
            telemetry.capture.eq(handler.capture_telemetry),
            telemetry.read_address.eq(handler.read_address),
            handler.read_data.eq(telemetry.read_data),
            handler.snapshot_ready.eq(telemetry.ready),
        ]
        return m


async def strobe(ctx, signal):
    ctx.set(signal, 1)
    await ctx.tick("usb")
    ctx.set(signal, 0)


async def setup(ctx, dut, request, *, is_in, value=0, index=0, length=0,
                kind=USBRequestType.VENDOR, recipient=USBRequestRecipient.DEVICE):
    """A SETUP packet; the handler must claim it (and a cycle passes, as on a bus, before the
    next token)."""
    s = dut.interface.setup
    ctx.set(s.type, kind)
    ctx.set(s.recipient, recipient)
    ctx.set(s.is_in_request, is_in)
    ctx.set(s.request, request)
    ctx.set(s.value, value)
    ctx.set(s.index, index)
    ctx.set(s.length, length)
    assert ctx.get(dut.interface.claim)
    await strobe(ctx, s.received)
    await ctx.tick("usb")


async def read_packet(ctx, dut):
    """Answer one data-stage IN token; returns the payload and its data toggle."""
    tx = dut.interface.tx
    await strobe(ctx, dut.interface.data_requested)
    ctx.set(tx.ready, 1)
    payload = bytearray()
    for _ in range(200):
        if ctx.get(tx.valid):
            if ctx.get(tx.last) and not ctx.get(tx.first) and not payload:
                break  # ZLP
            payload.append(ctx.get(tx.payload))
            if ctx.get(tx.last):
                break
        await ctx.tick("usb")
    toggle = ctx.get(dut.interface.tx_data_pid)
    await ctx.tick("usb")
    ctx.set(tx.ready, 0)
    await strobe(ctx, dut.interface.handshakes_in.ack)
    return bytes(payload), toggle


def run(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(1 / 60e6, domain="usb")
    sim.add_testbench(testbench)
    sim.run()


BUILDS = pytest.mark.parametrize("features", [usb2.NO_FEATURES, usb2.ALL_FEATURES],
                                 ids=["lean", "full"])


@BUILDS
def test_get_telemetry_sends_a_snapshot_in_protocol_order_over_several_packets(features):
    dut = HandlerWithSnapshot(features)
    telemetry = dut.telemetry
    expected = dict.fromkeys((name for name, _ in usb2.TELEMETRY), 0)
    expected |= {"magic": usb2.MAGIC, "version": usb2.PROTOCOL_VERSION, "in_tokens": 3,
                 "in_tokens_max_uframe": 3, "pattern_errors": 0x0102_0304,
                 "first_error_offset": 0x0A0B_0C0D,
                 # A packet-shape counter: the lean build leaves it at 0.
                 "pings": 2 if features & usb2.Feature.PACKET_SHAPES else 0}

    async def testbench(ctx):
        ctx.set(telemetry.pattern_errors, expected["pattern_errors"])
        ctx.set(telemetry.first_error_offset, expected["first_error_offset"])
        for signal in (telemetry.ep_in.token,) * 3 + (telemetry.ping,) * 2:
            await strobe(ctx, signal)
        await setup(ctx, dut, usb2.Request.GET_TELEMETRY, is_in=True, length=usb2.TELEMETRY_SIZE)
        # An IN token before the snapshot is whole is NAKed, and nothing is sent.
        ctx.set(dut.interface.data_requested, 1)
        assert ctx.get(dut.interface.handshakes_out.nak)
        await ctx.tick("usb")
        ctx.set(dut.interface.data_requested, 0)
        await ctx.tick("usb").repeat(3 * usb2.TELEMETRY_WORDS)
        assert ctx.get(telemetry.ready)
        # What happens after the snapshot does not tear the block.
        ctx.set(telemetry.pattern_errors, 0)
        await strobe(ctx, telemetry.ep_in.token)
        block, toggles = b"", []
        while len(block) < usb2.TELEMETRY_SIZE:
            packet, toggle = await read_packet(ctx, dut)
            assert len(packet) == min(64, usb2.TELEMETRY_SIZE - len(block))
            block, toggles = block + packet, toggles + [toggle]
        assert len(toggles) > 2  # past 128 bytes: every byte of the block is addressed
        assert toggles == [(1 + i) % 2 for i in range(len(toggles))]
        assert usb2.unpack_telemetry(block) == expected
        await strobe(ctx, dut.interface.status_requested)

    run(dut, testbench)


@BUILDS
def test_get_info_names_the_features_and_is_limited_to_the_requested_length(features):
    dut = HandlerWithSnapshot(features)

    async def testbench(ctx):
        await setup(ctx, dut, usb2.Request.GET_INFO, is_in=True, length=64)
        data, _ = await read_packet(ctx, dut)
        assert struct.unpack(usb2.INFO_FORMAT, data) == (
            usb2.MAGIC, usb2.PROTOCOL_VERSION, usb2.MAX_PACKET_SIZE, features)
        assert usb2.unpack_info(data)["features"] == features
        await setup(ctx, dut, usb2.Request.GET_INFO, is_in=True, length=4)
        data, _ = await read_packet(ctx, dut)
        assert data == struct.pack("<I", usb2.MAGIC)

    run(dut, testbench)


async def status_stage(ctx, dut, observe, *, foreign_ack_first=False):
    """The status stage of a no-data request: the answer ("ZLP", "STALL" or None), and what
    ``observe()`` reads in the cycle of the host's ACK (after an ACK for another endpoint's
    packet, if asked)."""
    interface = dut.interface
    if foreign_ack_first:
        await strobe(ctx, interface.handshakes_in.ack)
    ctx.set(interface.status_requested, 1)
    zlp = ctx.get(interface.tx.valid) and ctx.get(interface.tx.last)
    await ctx.tick("usb")
    ctx.set(interface.status_requested, 0)
    stall = ctx.get(interface.handshakes_out.stall)   # a cycle later, from a flip-flop
    ctx.set(interface.handshakes_in.ack, 1)
    seen = observe()
    await ctx.tick("usb")
    ctx.set(interface.handshakes_in.ack, 0)
    return ("ZLP" if zlp else "STALL" if stall else None), seen


async def out_request(ctx, dut, request, **kwargs):
    """SETUP + status stage of a no-data OUT request; returns the strobes seen and the handshake."""
    await setup(ctx, dut, request, is_in=False, **kwargs)
    answer, seen = await status_stage(ctx, dut, lambda: {
        name: ctx.get(getattr(dut, name))
        for name in ("clear_telemetry", "set_pattern", "set_in_transfer", "set_data_mode")})
    return seen, answer


@BUILDS
def test_out_requests_act_after_their_status_stage_and_bad_ones_stall(features):
    dut = HandlerWithSnapshot(features)

    async def testbench(ctx):
        seen, answer = await out_request(ctx, dut, usb2.Request.SET_PATTERN,
                                         value=Pattern.PRBS31)
        assert (answer, seen["set_pattern"], ctx.get(dut.pattern)) == ("ZLP", 1, Pattern.PRBS31)
        w_value, w_index = usb2.encode_in_transfer(4096, zlp=True)
        seen, answer = await out_request(ctx, dut, usb2.Request.SET_IN_TRANSFER,
                                         value=w_value, index=w_index)
        assert (answer, seen["set_in_transfer"]) == ("ZLP", 1)
        assert (ctx.get(dut.in_transfer_length), ctx.get(dut.in_zlp)) == (4096, 1)
        seen, answer = await out_request(ctx, dut, usb2.Request.CLEAR_TELEMETRY)
        assert (answer, seen["clear_telemetry"]) == ("ZLP", 1)
        seen, answer = await out_request(ctx, dut, usb2.Request.SET_PATTERN, value=7)
        assert (answer, seen["set_pattern"], ctx.get(dut.pattern)) == \
            ("STALL", 0, Pattern.PRBS31)
        seen, answer = await out_request(ctx, dut, usb2.Request.SET_DATA_MODE,
                                         value=usb2.DataMode.LOOPBACK)
        assert (answer, seen["set_data_mode"], ctx.get(dut.data_mode)) == \
            ("ZLP", 1, usb2.DataMode.LOOPBACK)
        seen, answer = await out_request(ctx, dut, usb2.Request.SET_DATA_MODE, value=9)
        assert (answer, seen["set_data_mode"], ctx.get(dut.data_mode)) == \
            ("STALL", 0, usb2.DataMode.LOOPBACK)
        # BOT only where the framer was built; the lean build stalls it and keeps its mode.
        seen, answer = await out_request(ctx, dut, usb2.Request.SET_DATA_MODE,
                                         value=usb2.DataMode.BOT)
        assert (answer, seen["set_data_mode"], ctx.get(dut.data_mode)) == (
            ("ZLP", 1, usb2.DataMode.BOT) if features & usb2.Feature.BOT
            else ("STALL", 0, usb2.DataMode.LOOPBACK))
        seen, answer = await out_request(ctx, dut, 0x7F)
        assert answer == "STALL" and not any(seen.values())

    run(dut, testbench)


def test_get_descriptor_sends_each_descriptor_up_to_wlength_and_stalls_an_unknown_one():
    """Every descriptor of the device, read from the snapshot RAM: whole, cut to a short
    ``wLength``; a descriptor the device lacks (a BOS: its bcdUSB is 2.00) is stalled."""
    dut = HandlerWithSnapshot()
    descriptors = {(kind, index): raw for kind, index, raw in build_descriptors()}
    got = {}

    async def get_descriptor(ctx, kind, index, length):
        s = dut.interface.setup
        ctx.set(s.type, USBRequestType.STANDARD)
        ctx.set(s.recipient, USBRequestRecipient.DEVICE)
        ctx.set(s.is_in_request, 1)
        ctx.set(s.request, USBStandardRequests.GET_DESCRIPTOR)
        ctx.set(s.value, (kind << 8) | index)
        ctx.set(s.index, 0x0409 if kind == 3 and index else 0)
        ctx.set(s.length, length)
        assert ctx.get(dut.interface.claim)
        await strobe(ctx, s.received)
        await ctx.tick("usb")

    async def testbench(ctx):
        for (kind, index), raw in descriptors.items():
            for length in (255, 9, 1):
                await get_descriptor(ctx, kind, index, length)
                data = b""
                while len(data) < min(length, len(raw)):
                    data += (await read_packet(ctx, dut))[0]
                await strobe(ctx, dut.interface.status_requested)
                got[kind, index, length] = data
        await get_descriptor(ctx, 15, 0, 5)       # BOS: not among them
        await strobe(ctx, dut.interface.data_requested)
        got["BOS stalled"] = ctx.get(dut.interface.handshakes_out.stall)
        ctx.set(dut.interface.data_requested, 0)

    run(dut, testbench)
    assert got.pop("BOS stalled")
    assert got == {(kind, index, length): raw[:length]
                   for (kind, index), raw in descriptors.items() for length in (255, 9, 1)}
