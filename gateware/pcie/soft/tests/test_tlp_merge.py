"""Whole TLPs from several sources onto one stream (Amaranth simulation)."""

import random

import pytest
from busprobe.gateware.pcie.soft.tlp_merge import TlpMerge
from busprobe.gateware.pcie.soft.word_framer import TLP_BYTE, TLP_DW
from busprobe.sim.pcie.symbol.amaranth_bench import collect_tlps, send_tlps, simulate

#: TLPs are merged whole as bytes and as DWs.
UNITS = pytest.mark.parametrize("unit_bytes", [1, 4])


@UNITS
def test_tlps_from_three_sources_come_out_whole_never_interleaved_none_lost(unit_bytes):
    rng = random.Random(7)
    dut = TlpMerge(3, unit=TLP_DW if unit_bytes == 4 else TLP_BYTE)
    # Each source's TLPs start with its number, so whose each output TLP is can be told.
    bodies = [[bytes([source, n]) + rng.randbytes(rng.choice((10, 14, 62)))
               for n in range(12)] for source in range(3)]
    out: list[bytes] = []

    def sender(source: int):
        async def send(ctx):
            # Random pauses between TLPs, so that a source with priority often becomes ready
            # in the middle of another's TLP.
            for body in bodies[source]:
                await ctx.tick().repeat(1 + rng.randrange(40))
                await send_tlps(ctx, dut.sinks[source], [body], unit_bytes=unit_bytes)
        return send

    async def collect(ctx):
        await collect_tlps(ctx, dut.source, out, unit_bytes=unit_bytes)

    async def main(ctx):
        await ctx.tick().repeat(3000)

    simulate(dut, main, sender(0), sender(1), sender(2), collect)
    for source in range(3):
        assert [body for body in out if body[0] == source] == bodies[source]
    assert len(out) == 36
