"""Pattern generator and checker against the protocol's PatternStream (Amaranth simulation)."""

import pytest
from amaranth.sim import Simulator
from busprobe.gateware.common.checker import PatternChecker
from busprobe.gateware.common.pattern import PatternByteSource
from busprobe.protocol.patterns import NO_ERROR_OFFSET, Pattern, PatternStream


def run(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(1 / 60e6, domain="usb")
    sim.add_testbench(testbench)
    sim.run()


@pytest.mark.parametrize("pattern", list(Pattern))
def test_byte_source_streams_exactly_the_protocol_pattern(pattern):
    dut = PatternByteSource()
    expected = PatternStream(pattern).take(1200)  # 300 words
    got = bytearray()

    async def testbench(ctx):
        ctx.set(dut.pattern, pattern)
        ctx.set(dut.restart, 1)
        await ctx.tick("usb")
        ctx.set(dut.restart, 0)
        cycle = 0
        while len(got) < len(expected):
            ready = cycle % 7 != 3  # stall now and then: the stream must hold its byte
            ctx.set(dut.stream.ready, ready)
            if ready:
                got.append(ctx.get(dut.stream.payload))
            await ctx.tick("usb")
            cycle += 1
        assert ctx.get(dut.offset) == len(expected)

    run(dut, testbench)
    assert bytes(got) == expected


def check_with_gateware(pattern, data, *, gaps=True):
    dut = PatternChecker()
    result = {}

    async def testbench(ctx):
        ctx.set(dut.pattern, pattern)
        ctx.set(dut.restart, 1)
        await ctx.tick("usb")
        ctx.set(dut.restart, 0)
        for index, byte in enumerate(data):
            if gaps and index % 5 == 0:
                ctx.set(dut.stream.valid, 0)
                await ctx.tick("usb")
            ctx.set(dut.stream.valid, 1)
            ctx.set(dut.stream.payload, byte)
            await ctx.tick("usb")
        ctx.set(dut.stream.valid, 0)
        await ctx.tick("usb").repeat(3)
        result.update(errors=ctx.get(dut.errors), first=ctx.get(dut.first_error_offset),
                      offset=ctx.get(dut.offset))

    run(dut, testbench)
    return result


@pytest.mark.parametrize("pattern", list(Pattern))
def test_checker_finds_no_error_in_good_data(pattern):
    data = PatternStream(pattern).take(1030)  # ends mid-word
    result = check_with_gateware(pattern, data)
    assert result == {"errors": 0, "first": NO_ERROR_OFFSET, "offset": 1030}


@pytest.mark.parametrize("pattern", list(Pattern))
def test_checker_counts_a_corrupted_word_once_and_reports_its_first_bad_byte(pattern):
    data = bytearray(PatternStream(pattern).take(600))
    for offset in (201, 202, 203):  # three bytes of word 50
        data[offset] ^= 0x5A
    data[517] ^= 0x01  # and one byte of word 129
    reference = PatternStream(pattern).check(data)
    result = check_with_gateware(pattern, data)
    assert (result["errors"], result["first"]) == (reference.errors, reference.first_error_offset)
    assert (result["errors"], result["first"]) == (2, 201)


def test_checker_counts_a_word_cut_short_by_the_end_of_the_data():
    data = bytearray(PatternStream(Pattern.COUNTER).take(402))
    data[401] ^= 0xFF
    result = check_with_gateware(Pattern.COUNTER, data, gaps=False)
    assert (result["errors"], result["first"]) == (1, 401)


def test_checker_clear_keeps_the_stream_position():
    dut = PatternChecker()
    stream = PatternStream(Pattern.PRBS31)
    bad = bytearray(stream.take(8))
    bad[0] ^= 1
    good = stream.take(8)

    async def testbench(ctx):
        ctx.set(dut.pattern, Pattern.PRBS31)
        ctx.set(dut.restart, 1)
        await ctx.tick("usb")
        ctx.set(dut.restart, 0)
        for chunk, clear_after in ((bad, True), (good, False)):
            for byte in chunk:
                ctx.set(dut.stream.valid, 1)
                ctx.set(dut.stream.payload, byte)
                await ctx.tick("usb")
            ctx.set(dut.stream.valid, 0)
            await ctx.tick("usb").repeat(2)
            if clear_after:
                assert (ctx.get(dut.errors), ctx.get(dut.first_error_offset)) == (1, 0)
                ctx.set(dut.clear, 1)
                await ctx.tick("usb")
                ctx.set(dut.clear, 0)
        assert (ctx.get(dut.errors), ctx.get(dut.first_error_offset)) == (0, NO_ERROR_OFFSET)
        assert ctx.get(dut.offset) == 16

    run(dut, testbench)
