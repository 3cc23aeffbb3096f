"""The whole soft endpoint over the PHY's crossing against a root port that scrambles, as a real
one does: training, flow-control initialisation and TLPs both ways, with every data symbol
scrambled on the wire and every TS not (Amaranth simulation, two clocks)."""

import random

import pytest
from amaranth import Module
from amaranth.lib import wiring
from busprobe.gateware.pcie.soft.data_link import SoftDataLink
from busprobe.gateware.pcie.soft.symbol_crossing import SymbolCrossing
from busprobe.protocol.pcie_ltssm import LtssmState
from busprobe.protocol.pcie_symbols import TrainingSet, TsKind, encode_ts
from busprobe.sim.pcie.symbol.amaranth_bench import (
    SIM_TIMING,
    as_completion,
    send_tlps,
    until_dl_active,
)
from busprobe.sim.pcie.symbol.partner import RootPortPartner
from busprobe.sim.pcie.symbol.serdes_bench import WordExchange, simulate_with_serdes

TRAINED = [LtssmState.DETECT_QUIET, LtssmState.DETECT_ACTIVE, LtssmState.POLLING_ACTIVE,
           LtssmState.POLLING_CONFIGURATION, LtssmState.CONFIG_LINKWIDTH_START,
           LtssmState.CONFIG_LINKWIDTH_ACCEPT, LtssmState.CONFIG_LANENUM_WAIT,
           LtssmState.CONFIG_COMPLETE, LtssmState.CONFIG_IDLE, LtssmState.L0]


def endpoint_over_the_serdes():
    m = Module()
    m.submodules.link = link = SoftDataLink(timing=SIM_TIMING, ack_latency=40)
    m.submodules.crossing = crossing = SymbolCrossing()
    wiring.connect(m, link.tx, crossing.tx)
    wiring.connect(m, crossing.rx, link.rx)
    m.d.comb += crossing.tx_electrical_idle.eq(link.tx_electrical_idle)
    return m, link, crossing


@pytest.mark.parametrize("silent", [0, 1], ids=["com-in-half-0", "com-in-half-1"])
def test_the_endpoint_trains_and_exchanges_tlps_through_scrambler_and_descrambler(silent):
    """``silent`` symbol times of electrical idle before the root port trains move every COM it
    sends to the other half of the DCU's words."""
    rng = random.Random(45 + silent)
    top, link, crossing = endpoint_over_the_serdes()
    partner = RootPortPartner(link=3, lane=0, scrambled=True, silent=silent)
    exchange = WordExchange(link, crossing, partner, record=True)
    to_endpoint = [rng.randbytes(rng.choice((12, 16, 128))) for _ in range(5)]
    from_endpoint = [as_completion(rng.randbytes(rng.choice((12, 16, 128)))) for _ in range(5)]
    states: list[LtssmState] = []
    seen = {"accepted": 0}

    async def monitor(ctx):
        """The link's state and strobes, every link clock."""
        while True:
            _, _, state, accepted = await ctx.tick().sample(link.status.state, link.rx_accept)
            if not states or states[-1] != state:
                states.append(LtssmState(state))
            seen["accepted"] += accepted

    async def endpoint_sends(ctx):
        await ctx.tick().until(link.dl_active)
        await send_tlps(ctx, link.tlp, from_endpoint)

    async def testbench(ctx):
        seen["cycles"] = await until_dl_active(ctx, exchange, cycles=6000)
        for seq, body in enumerate(to_endpoint):
            partner.send_tlp(seq, body)
        await exchange.run(ctx, cycles=1500)
        seen["next_rcv_seq"] = ctx.get(link.next_rcv_seq)
        seen["acked_seq"] = ctx.get(link.acked_seq)

    simulate_with_serdes(top, testbench, endpoint_sends, monitor)
    assert states == TRAINED and seen["cycles"] < 6000
    assert seen["next_rcv_seq"] == 5 and seen["accepted"] == 5
    received = [p for p in partner.received if p.kind == "tlp"]
    assert [(p.status, p.seq, p.payload) for p in received] == \
        [("good", seq, body) for seq, body in enumerate(from_endpoint)]
    assert seen["acked_seq"] == 4  # the partner's ACKs came back through the descrambler
    # On the wire: the endpoint's TS1s as they are (TSs are not scrambled)...
    ts1 = encode_ts(TrainingSet(TsKind.TS1))
    wire = exchange.wire
    assert any(wire[i:i + 16] == ts1 for i in range(len(wire) - 16))
    # ...and no long run of the logical idle's 00h (idle is scrambled; it would be all 00h).
    assert max_run(wire, 0) < 8


def max_run(symbols: list[int], value: int) -> int:
    best = run = 0
    for symbol in symbols:
        run = run + 1 if symbol == value else 0
        best = max(best, run)
    return best
