"""Drives a SuperSpeed endpoint interface the way LUNA's protocol layer does (for fast tests)."""

import struct

from amaranth import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In
from amaranth.sim import Simulator
from busprobe.gateware.usb3.descriptors import build_descriptors
from busprobe.gateware.usb3.request_handler import SuperSpeedProbeRequestHandler
from busprobe.gateware.usb3.standard_requests import SuperSpeedStandardRequestHandler
from busprobe.protocol import usb3
from luna.gateware.usb.usb3.endpoints import USB3ControlEndpoint

__all__ = ["ControlEndpointUnderTest", "control_in", "control_out", "setup_packet", "run_ss"]


def run_ss(dut, body):
    """Run ``body(ctx, dut, results)`` as a testbench on ``dut`` clocked in ``ss`` (125 MHz);
    returns what it put in ``results``."""
    sim = Simulator(dut)
    sim.add_clock(8e-9, domain="ss")
    results = {}

    async def testbench(ctx):
        await body(ctx, dut, results)

    sim.add_testbench(testbench)
    sim.run()
    return results


class ControlEndpointUnderTest(wiring.Component):
    """LUNA's SuperSpeed control endpoint with busprobe's standard and vendor handlers, as the
    device builds it (``configuration`` stands for the device's)."""

    telemetry: In(data.ArrayLayout(32, usb3.TELEMETRY_WORDS))
    configuration: In(8)

    def __init__(self):
        super().__init__()
        self.endpoint = USB3ControlEndpoint()
        self.standard = SuperSpeedStandardRequestHandler(build_descriptors())
        self.endpoint.add_request_handler(self.standard)
        self.requests = SuperSpeedProbeRequestHandler()
        self.endpoint.add_request_handler(self.requests)
        self.interface = self.endpoint.interface

    def elaborate(self, platform):
        m = Module()
        m.submodules.endpoint = self.endpoint
        m.d.comb += [self.requests.telemetry.eq(self.telemetry),
                     self.standard.configuration.eq(self.configuration)]
        return m


def setup_packet(request_type, request, value=0, index=0, length=0):
    return struct.pack("<BBHHH", request_type, request, value, index, length)


async def _send_setup(ctx, interface, packet):
    rx = interface.rx
    ctx.set(interface.rx_header.setup, 1)
    ctx.set(interface.rx_header.endpoint_number, 0)
    for index, offset in enumerate((0, 4)):
        ctx.set(rx.valid, 0b1111)
        ctx.set(rx.first, index == 0)
        ctx.set(rx.last, index == 1)
        ctx.set(rx.data, int.from_bytes(packet[offset:offset + 4], "little"))
        await ctx.tick("ss")
    ctx.set(rx.valid, 0)
    ctx.set(rx.last, 0)
    ctx.set(interface.rx_complete, 1)
    await ctx.tick("ss")
    ctx.set(interface.rx_complete, 0)
    ctx.set(interface.rx_header.setup, 0)
    for _ in range(3):
        await ctx.tick("ss")


async def _handshake(ctx, interface, cycles=4):
    """The handshake the endpoint asks for within ``cycles`` (handlers may take a cycle)."""
    for _ in range(cycles):
        if ctx.get(interface.handshakes_out.send_ack):
            return "ack"
        if ctx.get(interface.handshakes_out.send_stall):
            return "stall"
        await ctx.tick("ss")
    return None


async def _status_stage(ctx, interface):
    """Send a STATUS TP; return "ack" or "stall" as the endpoint answers."""
    handshakes = interface.handshakes_in
    ctx.set(handshakes.endpoint_number, 0)
    ctx.set(handshakes.status_received, 1)
    answer = await _handshake(ctx, interface, cycles=1)
    if answer is not None:
        await ctx.tick("ss")
    ctx.set(handshakes.status_received, 0)  # a one-cycle strobe either way
    if answer is None:
        answer = await _handshake(ctx, interface)
    await ctx.tick("ss")
    return answer


async def control_in(ctx, interface, packet, *, max_cycles=200):
    """A control read: SETUP, one IN token (ACK TP, NumP 1), STATUS. Returns (data, status)
    with data None when the endpoint stalled instead of sending."""
    await _send_setup(ctx, interface, packet)
    handshakes = interface.handshakes_in
    ctx.set(handshakes.endpoint_number, 0)
    ctx.set(handshakes.number_of_packets, 1)
    ctx.set(handshakes.ack_received, 1)
    stalled = bool(ctx.get(interface.handshakes_out.send_stall))
    await ctx.tick("ss")
    ctx.set(handshakes.ack_received, 0)
    stalled = stalled or bool(ctx.get(interface.handshakes_out.send_stall))
    ctx.set(interface.tx.ready, 1)
    payload, length = bytearray(), None
    for _ in range(max_cycles):
        if stalled:
            break
        valid = ctx.get(interface.tx.valid)
        if valid:
            length = ctx.get(interface.tx_length)
            word = ctx.get(interface.tx.data).to_bytes(4, "little")
            payload += word[:bin(valid).count("1")]
            if ctx.get(interface.tx.last):
                await ctx.tick("ss")
                break
        await ctx.tick("ss")
    ctx.set(interface.tx.ready, 0)
    status = await _status_stage(ctx, interface)
    if stalled:
        return None, "stall"
    assert length == len(payload), f"tx_length {length} but {len(payload)} bytes sent"
    return bytes(payload), status


async def control_out(ctx, interface, packet):
    """A control write without data: SETUP, STATUS. Returns "ack" or "stall"."""
    await _send_setup(ctx, interface, packet)
    return await _status_stage(ctx, interface)
