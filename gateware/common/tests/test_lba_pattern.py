"""The LBA pattern's byte and word sources against the protocol's definition (Amaranth
simulation)."""

import pytest
from amaranth.sim import Simulator
from busprobe.gateware.common.lba_pattern import LbaPattern
from busprobe.protocol.storage import lba_bytes


@pytest.mark.parametrize("width", [1, 4])
@pytest.mark.parametrize("lba", [0, 1, (1 << 25) - 1, (1 << 32) - 2])
def test_the_beats_from_an_lba_on_are_what_the_blocks_hold(lba, width):
    # Two blocks, across the alias boundary of 2**25 blocks and the 32-bit word address.
    dut = LbaPattern(width=width)
    expected = lba_bytes(lba, 2)
    got = bytearray()

    async def testbench(ctx):
        ctx.set(dut.lba, lba)
        ctx.set(dut.start, 1)
        await ctx.tick("usb")
        ctx.set(dut.start, 0)
        cycle = 0
        while len(got) < len(expected):
            advance = cycle % 5 != 2  # the consumer pauses now and then: the beat must hold
            ctx.set(dut.advance, advance)
            if advance:
                got.extend(ctx.get(dut.data).to_bytes(width, "little"))
                assert ctx.get(dut.word_end) == (len(got) % 4 == 0)
            await ctx.tick("usb")
            cycle += 1

    sim = Simulator(dut)
    sim.add_clock(1 / 60e6, domain="usb")
    sim.add_testbench(testbench)
    sim.run()
    assert bytes(got) == expected
