"""The soft endpoint's MSI as a memory write (Amaranth simulation; TLPs parsed by
cocotbext-pcie's ``Tlp.unpack``)."""

import pytest
from busprobe.gateware.pcie.soft.msi_request import MsiRequester
from busprobe.gateware.pcie.soft.word_framer import TLP_BYTE, TLP_DW
from busprobe.sim.pcie.symbol.amaranth_bench import collect_tlps, simulate
from cocotbext.pcie.core.tlp import Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId

REQUESTER = PcieId(1, 0, 0)
#: The MWr is the same sent as bytes and as DWs.
UNITS = pytest.mark.parametrize("unit_bytes", [1, 4])


def run(address: int, data: int, vectors: list[int], *, enabled: bool = True,
        unit_bytes: int = 1):
    """The TLPs sent for ``vectors`` requested one after another, and the ``dropped`` count."""
    dut = MsiRequester(unit=TLP_DW if unit_bytes == 4 else TLP_BYTE)
    got: list[bytes] = []
    dropped = []

    async def main(ctx):
        ctx.set(dut.msi_enable, enabled)
        ctx.set(dut.bus_master, 1)
        ctx.set(dut.msi_address, address)
        ctx.set(dut.msi_data, data)
        ctx.set(dut.requester_id, int(REQUESTER))
        for vector in vectors:
            ctx.set(dut.request.valid, 1)
            ctx.set(dut.request.payload, vector)
            await ctx.tick().until(dut.request.ready)
        ctx.set(dut.request.valid, 0)
        await ctx.tick().repeat(60)
        dropped.append(ctx.get(dut.dropped))

    async def collect(ctx):
        await collect_tlps(ctx, dut.tlp, got, unit_bytes=unit_bytes)

    simulate(dut, main, collect)
    return [Tlp.unpack(body) for body in got], dropped[0]


@UNITS
def test_msi_is_a_one_dword_memory_write_of_the_message_data_to_the_message_address(
        unit_bytes):
    tlps, dropped = run(0xFEE0_1000, 0x4120, [0, 3], unit_bytes=unit_bytes)
    assert dropped == 0
    assert [t.fmt_type for t in tlps] == [TlpType.MEM_WRITE] * 2
    for tlp, vector in zip(tlps, [0, 3], strict=True):
        assert tlp.address == 0xFEE0_1000 and tlp.length == 1
        assert tlp.first_be == 0xF and tlp.last_be == 0
        assert tlp.requester_id == REQUESTER
        assert tlp.get_data() == (0x4120 | vector).to_bytes(4, "little")


@UNITS
def test_msi_above_4_gib_uses_a_four_dword_header(unit_bytes):
    tlps, _ = run(0x1_2345_6780, 0x0042, [1], unit_bytes=unit_bytes)
    assert [t.fmt_type for t in tlps] == [TlpType.MEM_WRITE_64]
    assert tlps[0].address == 0x1_2345_6780
    assert tlps[0].get_data() == (0x43).to_bytes(4, "little")


@UNITS
def test_msi_requests_while_msi_is_disabled_are_taken_and_dropped(unit_bytes):
    tlps, dropped = run(0xFEE0_1000, 0x4120, [0, 0], enabled=False, unit_bytes=unit_bytes)
    assert tlps == [] and dropped == 2
