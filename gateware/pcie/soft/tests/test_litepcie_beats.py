"""The soft endpoint's TLP bytes to and from LitePCIe's 64-bit beats (Amaranth simulation).
The expected beats are :func:`busprobe.sim.pcie.tlp_stream.tlp_to_beats`'s, the packing that
drives busprobe's LitePCIe core through ``SimPCIEPHY`` in every sim:pcie test; TLPs are
cocotbext-pcie's."""

import random

import pytest
from busprobe.gateware.pcie.soft.litepcie_beats import BeatsToBytes, BytesToBeats
from busprobe.gateware.pcie.soft.tlp_router import APP_TLP_BYTE, APP_TLP_DW
from busprobe.gateware.pcie.soft.word_framer import TLP_BYTE, TLP_DW
from busprobe.sim.pcie.symbol.amaranth_bench import collect_tlps, simulate
from busprobe.sim.pcie.tlp_stream import tlp_to_beats
from cocotbext.pcie.core.tlp import Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId

#: Beats are the same packed from and unpacked to bytes and DWs.
UNITS = pytest.mark.parametrize("unit_bytes", [1, 4])


def units_of(body: bytes, unit_bytes: int) -> list[int]:
    """A TLP's bytes or DWs (byte 0 in bits 7:0), as the endpoint's streams move them."""
    return [int.from_bytes(body[i:i + unit_bytes], "little")
            for i in range(0, len(body), unit_bytes)]


def beats_of(body: bytes) -> list[tuple[int, int, bool]]:
    """(dat, be, last) of each beat of a TLP, as the sim PHY's other side packs it."""
    beats = tlp_to_beats(Tlp.unpack(body))
    return [(dat, be, i == len(beats) - 1) for i, (dat, be) in enumerate(beats)]


def bodies() -> list[bytes]:
    """MWr, MRd and CplD of several sizes (odd and even DW counts)."""
    rng = random.Random(3)
    out = []
    for n in range(12):
        tlp = Tlp()
        tlp.requester_id = PcieId(1, 0, 0)
        size = 4 * rng.choice((1, 2, 5, 16))
        if n % 3 == 0:
            tlp.fmt_type = TlpType.MEM_WRITE if n % 2 else TlpType.MEM_WRITE_64
            tlp.set_addr_be_data((1 << 32 if n % 2 == 0 else 0) | 0x100, rng.randbytes(size))
        elif n % 3 == 1:
            tlp.fmt_type = TlpType.MEM_READ
            tlp.set_addr_be(0x2000, size)
        else:
            request = Tlp()
            request.fmt_type = TlpType.MEM_READ
            request.set_addr_be(0x2000, size)
            tlp = Tlp.create_completion_data_for_tlp(request, PcieId(0, 0, 0))
            tlp.set_data(rng.randbytes(size))
            tlp.byte_count = size
        out.append(bytes(tlp.pack()))
    return out


@UNITS
def test_received_tlp_bytes_become_litepcie_beats_two_big_endian_dwords_each(unit_bytes):
    dut = BytesToBeats(unit=APP_TLP_DW if unit_bytes == 4 else APP_TLP_BYTE)
    tlps = bodies()
    got: list[tuple[int, int, bool]] = []

    async def feed(ctx):
        for body in tlps:
            units = units_of(body, unit_bytes)
            for i, unit in enumerate(units):
                ctx.set(dut.sink.valid, 1)
                ctx.set(dut.sink.payload, {"data": unit, "last": i == len(units) - 1})
                await ctx.tick().until(dut.sink.ready)
        ctx.set(dut.sink.valid, 0)
        await ctx.tick().repeat(20)

    async def collect(ctx):
        cycle = 0
        while True:
            ctx.set(dut.source.ready, cycle % 3 != 0)
            _, _, valid, ready, beat = await ctx.tick().sample(
                dut.source.valid, dut.source.ready, dut.source.payload)
            cycle += 1
            if valid and ready:
                got.append((beat.dat, beat.be, bool(beat.last)))

    simulate(dut, feed, collect)
    assert got == [beat for body in tlps for beat in beats_of(body)]


@UNITS
def test_received_bytes_are_taken_one_every_clock_while_litepcie_takes_every_beat(unit_bytes):
    dut = BytesToBeats(unit=APP_TLP_DW if unit_bytes == 4 else APP_TLP_BYTE)
    body = bodies()[0] * 4
    units = units_of(body, unit_bytes)
    stalls = []

    async def feed(ctx):
        for i, unit in enumerate(units):
            ctx.set(dut.sink.valid, 1)
            ctx.set(dut.sink.payload, {"data": unit, "last": i == len(units) - 1})
            _, _, ready = await ctx.tick().sample(dut.sink.ready)
            if not ready:
                stalls.append(i)
                await ctx.tick().until(dut.sink.ready)
        ctx.set(dut.sink.valid, 0)

    async def drain(ctx):
        ctx.set(dut.source.ready, 1)
        await ctx.tick().repeat(len(body) + 10)

    simulate(dut, feed, drain)
    assert stalls == []


@UNITS
def test_litepcie_beats_to_send_become_tlp_bytes_without_a_gap_inside_a_tlp(unit_bytes):
    dut = BeatsToBytes(unit=TLP_DW if unit_bytes == 4 else TLP_BYTE)
    tlps = bodies()
    got: list[bytes] = []

    async def feed(ctx):
        for body in tlps:
            for dat, be, last in beats_of(body):
                ctx.set(dut.sink.valid, 1)
                ctx.set(dut.sink.payload, {"dat": dat, "be": be, "last": last})
                await ctx.tick().until(dut.sink.ready)
            ctx.set(dut.sink.valid, 0)
            await ctx.tick().repeat(5)
        await ctx.tick().repeat(40)

    async def collect(ctx):
        await collect_tlps(ctx, dut.source, got, unit_bytes=unit_bytes)

    simulate(dut, feed, collect)
    assert got == tlps
