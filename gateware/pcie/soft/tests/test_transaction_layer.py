"""The transaction layer's one wiring (Amaranth simulation): configuration space and the router
behind a data link layer's received TLPs, as bytes and as DWs (the link's unit passed through);
requests built and completions parsed by cocotbext-pcie's ``Tlp``."""

from types import SimpleNamespace

import pytest
from amaranth import Module, Signal
from amaranth.lib import stream
from busprobe.gateware.pcie.soft.config_space import ConfigSpace
from busprobe.gateware.pcie.soft.ltssm import LINK_STATUS
from busprobe.gateware.pcie.soft.tlp_router import TlpRouter
from busprobe.gateware.pcie.soft.transaction_layer import connect_transaction_layer
from busprobe.gateware.pcie.soft.word_deframer import RX_TLP_BYTE, RX_TLP_DW
from busprobe.sim.pcie.symbol.amaranth_bench import collect_tlps, receive_tlps, simulate
from cocotbext.pcie.core.tlp import Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId

#: The wiring is the same for TLPs received as bytes and as DWs.
UNITS = pytest.mark.parametrize("unit_bytes", [1, 4])
ROOT = PcieId(0, 0, 0)
BAR0 = 0xF000_0000
STROBES = ("np_held", "np_released", "p_held", "p_released")


def data_link(unit):
    """What ``connect_transaction_layer`` uses of a data link layer, as bare signals."""
    return SimpleNamespace(
        rx_tlp=stream.Signature(unit, always_ready=True).create(), rx_accept=Signal(),
        status=Signal(LINK_STATUS), np_held=Signal(), np_released=Signal(2), p_held=Signal(),
        p_released=Signal(), max_payload_size=Signal(16))


def config_write(offset: int, value: int, tag: int) -> Tlp:
    tlp = Tlp()
    tlp.fmt_type = TlpType.CFG_WRITE_0
    tlp.requester_id, tlp.completer_id, tlp.tag = ROOT, PcieId(1, 0, 0), tag
    tlp.set_addr_be_data(offset, value.to_bytes(4, "little"))
    return tlp


@UNITS
def test_bar0_set_up_by_configuration_writes_routes_the_next_write_and_credits_balance(
        unit_bytes):
    unit = RX_TLP_DW if unit_bytes == 4 else RX_TLP_BYTE
    m = Module()
    link = data_link(unit)
    m.submodules.config = config = ConfigSpace(unit=unit)
    m.submodules.router = router = TlpRouter(unit=unit)
    connect_transaction_layer(m, link, config, router)
    write = Tlp()
    write.fmt_type = TlpType.MEM_WRITE
    write.requester_id = ROOT
    write.set_addr_be_data(BAR0 + 0x40, bytes(range(16)))
    tlps = [config_write(0x10, BAR0, 1), config_write(0x04, 0x6, 2), write]
    routed: list[bytes] = []
    completions: list[bytes] = []
    strobes = dict.fromkeys(STROBES, 0)

    async def main(ctx):
        await receive_tlps(ctx, link, [bytes(tlp.pack()) for tlp in tlps],
                           unit_bytes=unit_bytes)
        await ctx.tick().repeat(100)

    async def count(ctx):
        async for _, _, *values in ctx.tick().sample(*(getattr(link, n) for n in STROBES)):
            for name, value in zip(STROBES, values, strict=True):
                strobes[name] += value

    async def collect_routed(ctx):
        await collect_tlps(ctx, router.source, routed, unit_bytes=unit_bytes)

    async def collect_completions(ctx):
        await collect_tlps(ctx, config.tlp, completions, unit_bytes=unit_bytes)

    simulate(m, main, count, collect_routed, collect_completions)
    assert routed == [bytes(write.pack())]
    assert [Tlp.unpack(c).tag for c in completions] == [1, 2]
    # Two configuration writes answered (non-posted), one posted write taken by the application.
    assert strobes == {"np_held": 2, "np_released": 2, "p_held": 1, "p_released": 1}


def test_a_router_of_another_unit_than_the_link_is_refused():
    m, config, router = Module(), ConfigSpace(unit=RX_TLP_DW), TlpRouter()
    with pytest.raises(TypeError, match="unit="):
        connect_transaction_layer(m, data_link(RX_TLP_DW), config, router)
    for block in (m, config, router):  # refused before use: never elaborated, on purpose
        block._MustUse__silence = True
