"""The partner's credits counted down before a TLP is sent (Amaranth simulation): TLPs built by
cocotbext-pcie's ``Tlp``, UpdateFCs packed by the reference ``fc_dllp``."""

import pytest
from busprobe.gateware.pcie.soft.tx_credits import TxCredits
from busprobe.gateware.pcie.soft.word_framer import TLP_BYTE, TLP_DW
from busprobe.protocol.pcie_dll import DllpType, fc_dllp
from busprobe.sim.pcie.symbol.amaranth_bench import send_tlps, simulate
from busprobe.sim.pcie.symbol.requests import ENDPOINT, memory_read, memory_write

#: Every behaviour below holds for TLPs moved as bytes and as DWs.
UNITS = pytest.mark.parametrize("unit_bytes", [1, 4])


def write(nbytes: int) -> bytes:
    return bytes(memory_write(0x1000, bytes(nbytes), requester=ENDPOINT).pack())


def read() -> bytes:
    return bytes(memory_read(0x1000, 64, requester=ENDPOINT).pack())


def run(bodies, *, posted=(2, 8), non_posted=(0, 0), updates=(), span=400, unit_bytes=1):
    """The TLPs out and the clock each started; ``updates``: (clock, DLLP bytes)."""
    dut = TxCredits(unit=TLP_DW if unit_bytes == 4 else TLP_BYTE)
    started: list[tuple[int, bytes]] = []

    async def main(ctx):
        ctx.set(dut.partner_posted, {"header": posted[0], "data": posted[1]})
        ctx.set(dut.partner_non_posted, {"header": non_posted[0], "data": non_posted[1]})
        await ctx.tick()
        ctx.set(dut.dl_active, 1)
        await send_tlps(ctx, dut.sink, bodies, unit_bytes=unit_bytes)

    async def dllps(ctx):
        clock = 0
        for at, dllp in updates:
            await ctx.tick().repeat(at - clock)
            clock = at
            ctx.set(dut.rx_dllp.valid, 1)
            ctx.set(dut.rx_dllp.payload, int.from_bytes(dllp, "little"))
            await ctx.tick()
            clock += 1
            ctx.set(dut.rx_dllp.valid, 0)

    async def collect(ctx):
        current = bytearray()
        clock = first = 0
        ctx.set(dut.source.ready, 1)
        while True:
            _, _, valid, byte, last = await ctx.tick().sample(
                dut.source.valid, dut.source.payload.data, dut.source.payload.last)
            if current:
                assert valid, "a TLP paused between its first and last byte"
            if valid:
                first = first if current else clock
                current.extend(byte.to_bytes(unit_bytes, "little"))
                if last:
                    started.append((first, bytes(current)))
                    current = bytearray()
            clock += 1

    async def watch(ctx):
        await ctx.tick().repeat(span)

    simulate(dut, watch, main, dllps, collect)
    return started


@UNITS
def test_posted_writes_stop_at_the_partners_header_credits_and_resume_on_its_update_fc(
        unit_bytes):
    bodies = [write(16)] * 4
    started = run(bodies, updates=[(300, fc_dllp(DllpType.UPDATE_FC_P, 4, 8))],
                  unit_bytes=unit_bytes)
    assert [body for _, body in started] == bodies
    assert [clock < 300 for clock, _ in started] == [True, True, False, False]


@UNITS
def test_posted_writes_stop_at_the_partners_data_credits(unit_bytes):
    bodies = [write(64), write(64), write(4)]  # 4 data credits each; 8 advertised
    started = run(bodies, posted=(32, 8), updates=[(300, fc_dllp(DllpType.UPDATE_FC_P, 32, 9))],
                  unit_bytes=unit_bytes)
    assert [clock < 300 for clock, _ in started] == [True, True, False]


@UNITS
def test_infinite_credits_never_hold_a_tlp(unit_bytes):
    bodies = [read()] * 40 + [write(256)] * 20
    started = run(bodies, posted=(0, 0), span=7000, unit_bytes=unit_bytes)
    assert [body for _, body in started] == bodies
