"""Telemetry counters: packed in exactly the order of protocol.usb2.TELEMETRY."""

from amaranth.sim import Simulator
from busprobe.gateware.usb2.telemetry import Usb2Telemetry
from busprobe.protocol import usb2


async def pulse(ctx, *assignments):
    for signal, value in assignments:
        ctx.set(signal, value)
    await ctx.tick("usb")
    for signal, _ in assignments:
        ctx.set(signal, 0)


def test_telemetry_words_decode_by_protocol_layout_to_the_events_counted():
    dut = Usb2Telemetry()
    seen = {}

    async def testbench(ctx):
        await ctx.tick("usb").repeat(10)
        await pulse(ctx, (dut.ep_in.packet_start, 1))
        for length in (512, 512, 100, 0):
            await pulse(ctx, (dut.ep_in.token, 1))
            await pulse(ctx, (dut.ep_in.acked, 1), (dut.ep_in.acked_length, length))
        await pulse(ctx, (dut.sof, 1))                       # microframe 1 ends: 4 IN tokens
        await pulse(ctx, (dut.ep_in.token, 1))
        await pulse(ctx, (dut.ep_in.nak, 1))
        await pulse(ctx, (dut.ep_out.token, 1))
        await pulse(ctx, (dut.ep_out.packet_start, 1))
        await pulse(ctx, (dut.ep_out.acked, 1), (dut.ep_out.acked_length, 512))
        await pulse(ctx, (dut.ep_out.token, 1))
        await pulse(ctx, (dut.ep_out.acked, 1), (dut.ep_out.acked_length, 3))
        await pulse(ctx, (dut.ep_out.nak, 1))
        await pulse(ctx, (dut.ping, 1))
        await pulse(ctx, (dut.sof, 1))                       # microframe 2 ends
        await pulse(ctx, (dut.sof, 1))                       # microframe 3: no data
        ctx.set(dut.pattern_errors, 7)
        ctx.set(dut.first_error_offset, 1234)
        words = [ctx.get(dut.words[i]) for i in range(usb2.TELEMETRY_WORDS)]
        seen.update(usb2.unpack_telemetry(usb2.pack_telemetry(
            dict(zip((name for name, _ in usb2.TELEMETRY), words, strict=True)))))
        seen["cycle"] = ctx.get(dut.cycle)
        await pulse(ctx, (dut.clear, 1))
        seen["after_clear"] = [ctx.get(dut.words[i]) for i in range(usb2.TELEMETRY_WORDS)]

    sim = Simulator(dut)
    sim.add_clock(1 / 60e6, domain="usb")
    sim.add_testbench(testbench)
    sim.run()

    assert seen["magic"] == usb2.MAGIC and seen["version"] == usb2.PROTOCOL_VERSION
    assert (seen["in_bytes"], seen["in_packets"], seen["in_short"], seen["in_zlps"]) == \
        (1124, 3, 1, 1)
    assert (seen["in_tokens"], seen["in_tokens_max_uframe"], seen["in_naks"]) == (5, 4, 1)
    assert (seen["out_bytes"], seen["out_packets"], seen["out_short"], seen["out_zlps"]) == \
        (515, 2, 1, 0)
    assert (seen["out_tokens"], seen["out_tokens_max_uframe"], seen["out_naks"]) == (2, 2, 1)
    assert (seen["pings"], seen["out_nyets"], seen["sofs"], seen["data_uframes"]) == (1, 0, 3, 2)
    assert (seen["pattern_errors"], seen["first_error_offset"]) == (7, 1234)
    assert 10 <= seen["in_first_cycle"] < seen["in_last_cycle"] < seen["out_first_cycle"] \
        < seen["out_last_cycle"] < seen["cycle"]
    names = [name for name, _ in usb2.TELEMETRY]
    cleared = dict(zip(names, seen["after_clear"], strict=True))
    assert cleared.pop("magic") == usb2.MAGIC and cleared.pop("version") == usb2.PROTOCOL_VERSION
    # The checker's values are inputs (cleared by the checker itself); everything else is zero.
    assert {k: v for k, v in cleared.items() if k not in ("pattern_errors",
                                                          "first_error_offset")} == \
        dict.fromkeys(set(cleared) - {"pattern_errors", "first_error_offset"}, 0)


def test_timing_window_spans_whole_microframes_without_the_first_and_last_data_ones():
    dut = Usb2Telemetry()
    seen = {}

    async def testbench(ctx):
        await ctx.tick("usb").repeat(4)
        for packets in (2, 3, 1, 0, 1):  # IN packets of 512 B per microframe, then its SOF
            for _ in range(packets):
                await pulse(ctx, (dut.ep_in.acked, 1), (dut.ep_in.acked_length, 512))
            await pulse(ctx, (dut.ep_out.acked, 1), (dut.ep_out.acked_length, 8))
            await pulse(ctx, (dut.sof, 1))
        words = [ctx.get(dut.words[i]) for i in range(usb2.TELEMETRY_WORDS)]
        seen.update(zip((name for name, _ in usb2.TELEMETRY), words, strict=True))

    sim = Simulator(dut)
    sim.add_clock(1 / 60e6, domain="usb")
    sim.add_testbench(testbench)
    sim.run()

    # IN moved data in microframes 0, 1, 2 and 4 (SOF counts 0..4 at their ends): the window runs
    # from the end of microframe 0 to the end of microframe 2, the second-to-last with data.
    assert (seen["in_window_start_bytes"], seen["in_window_start_uframe"]) == (1024, 0)
    assert (seen["in_window_end_bytes"], seen["in_window_end_uframe"]) == (3072, 2)
    # OUT moved 8 bytes in every one of the five microframes.
    assert (seen["out_window_start_bytes"], seen["out_window_start_uframe"]) == (8, 0)
    assert (seen["out_window_end_bytes"], seen["out_window_end_uframe"]) == (32, 3)
