"""The raw packet transmitter whose header CRC-16 reads the header's words sends, cycle for
cycle, what LUNA's does: header packets alone and with a data payload, random stops."""

import random

from amaranth import Module
from amaranth.sim import Simulator
from busprobe.gateware.usb3.header_crc import _WordCrcRawTransmitter
from luna.gateware.usb.usb3.link.transmitter import RawPacketTransmitter


def test_same_words_as_luna_with_random_headers_payloads_and_stops():
    rng = random.Random(44)
    luna, ours = RawPacketTransmitter(), _WordCrcRawTransmitter()
    m = Module()
    m.submodules.luna, m.submodules.ours = luna, ours
    sent = {"luna": [], "ours": []}

    async def testbench(ctx):
        payload, headers = [], 0
        for _ in range(3000):
            ready = rng.random() < 0.8
            for dut in (luna, ours):
                ctx.set(dut.source.ready, ready)
            if rng.random() < 0.1:
                for word, bits in (("dw0", 32), ("dw1", 32), ("dw2", 32), ("sequence_number", 3),
                                   ("hub_depth", 3), ("delayed", 1), ("deferred", 1)):
                    value = rng.getrandbits(bits)
                    if word == "dw0" and rng.random() < 0.5:
                        value = (value & ~0x1F) | 0x8  # a data packet header
                    for dut in (luna, ours):
                        ctx.set(getattr(dut.header, word), value)
                payload = [rng.getrandbits(32) for _ in range(rng.randint(0, 5))]
            generate = rng.random() < 0.3
            for dut in (luna, ours):
                ctx.set(dut.generate, generate)
                ctx.set(dut.data_sink.valid, 0b1111 if payload else 0)
                ctx.set(dut.data_sink.data, payload[0] if payload else 0)
                ctx.set(dut.data_sink.last, len(payload) == 1)
            taken = ctx.get(luna.data_sink.ready) and payload
            assert ctx.get(ours.data_sink.ready) == ctx.get(luna.data_sink.ready)
            for name, dut in (("luna", luna), ("ours", ours)):
                sent[name].append((ctx.get(dut.source.valid), ctx.get(dut.source.data),
                                   ctx.get(dut.source.ctrl)))
            headers += ctx.get(luna.done)
            await ctx.tick("ss")
            if taken:
                payload = payload[1:]
        assert headers > 50

    sim = Simulator(m)
    sim.add_clock(8e-9, domain="ss")
    sim.add_testbench(testbench)
    sim.run()
    assert sent["ours"] == sent["luna"]
