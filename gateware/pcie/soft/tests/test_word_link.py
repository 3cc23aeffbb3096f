"""The soft endpoint's link at four symbols a clock (``SoftLink(lanes=4)``) against the same
symbol-level root port as the one-symbol link (Amaranth simulation): training from Detect to
L0 at both paces, and packets both ways in L0 with SKP ordered sets on the link."""

import random

import pytest
from busprobe.gateware.pcie.soft.deframer import TlpStatus
from busprobe.gateware.pcie.soft.soft_link import SoftLink
from busprobe.protocol.pcie_dll import DllpType, ack_dllp, fc_dllp, frame_tlp
from busprobe.protocol.pcie_ltssm import LinkSpeed, LinkStatus, LtssmState, unpack_link_status
from busprobe.sim.pcie.symbol.amaranth_bench import SIM_TIMING, send_dllp, send_tlps, simulate
from busprobe.sim.pcie.symbol.partner import PartnerState, RootPortPartner
from busprobe.sim.pcie.symbol.word_exchange import GEN1_PACE, SPARSE_PACE, WordExchange

TRAINED = [LtssmState.DETECT_QUIET, LtssmState.DETECT_ACTIVE, LtssmState.POLLING_ACTIVE,
           LtssmState.POLLING_CONFIGURATION, LtssmState.CONFIG_LINKWIDTH_START,
           LtssmState.CONFIG_LINKWIDTH_ACCEPT, LtssmState.CONFIG_LANENUM_WAIT,
           LtssmState.CONFIG_COMPLETE, LtssmState.CONFIG_IDLE, LtssmState.L0]


class Bench:
    """The word link, the partner and what the link reported, cycle by cycle."""

    def __init__(self, *, pace: int):
        self.link = SoftLink(timing=SIM_TIMING, lanes=4)
        self.partner = RootPortPartner(link=5, lane=0, data_link=False)
        self.exchange = WordExchange(self.link, self.partner, pace=pace)
        self.states: list[LtssmState] = []
        self.events = dict.fromkeys(("bad_dllp", "bad_symbol", "skp_inserted", "skp_removed"),
                                    0)
        self.tlps: list[tuple[str, int, bytes]] = []
        self.dllps: list[bytes] = []
        self._body = bytearray()
        self.ctx = None

    def sample(self, _cycle: int) -> None:
        ctx, link = self.ctx, self.link
        state = LtssmState(ctx.get(link.status.state))
        if not self.states or self.states[-1] != state:
            self.states.append(state)
        for name in self.events:
            self.events[name] += ctx.get(getattr(link, name))
        if ctx.get(link.rx_tlp.valid):
            if ctx.get(link.rx_tlp.p.first):
                self._body = bytearray()
            self._body.extend(ctx.get(link.rx_tlp.p.data).to_bytes(4, "little"))
        if ctx.get(link.rx_tlp_end):
            status = TlpStatus(ctx.get(link.rx_tlp_status)).name
            self.tlps.append((status, ctx.get(link.rx_tlp_seq), bytes(self._body)))
            self._body = bytearray()
        if ctx.get(link.rx_dllp.valid):
            self.dllps.append(ctx.get(link.rx_dllp.payload).to_bytes(4, "little"))

    def l0(self) -> bool:
        return bool(self.ctx.get(self.link.status.link_up)) and \
            self.partner.state == PartnerState.L0

    async def run(self, cycles: int, until=None) -> int:
        return await self.exchange.run(self.ctx, cycles=cycles, until=until, each=self.sample)

    def simulate(self, script, *, endpoint_sends=None) -> None:
        async def testbench(ctx):
            self.ctx = ctx
            await script(self)

        async def sender(ctx):
            await endpoint_sends(ctx, self.link)

        simulate(self.link, testbench, *([sender] if endpoint_sends is not None else []))


@pytest.mark.parametrize("pace", [GEN1_PACE, SPARSE_PACE])
def test_the_word_link_trains_from_detect_to_l0_with_the_root_ports_link_number(pace):
    result = {}

    async def script(bench):
        result["cycles"] = await bench.run(8000, until=bench.l0)
        await bench.run(50)
        result["status"] = unpack_link_status(bench.ctx.get(bench.link.status.as_value()))

    bench = Bench(pace=pace)
    bench.simulate(script)
    assert bench.states == TRAINED
    assert result["status"] == LinkStatus(LtssmState.L0, link_up=True, width=1,
                                          speed=LinkSpeed.GEN1, link_number=5, lane_number=0)
    assert result["cycles"] < 8000 and bench.events["bad_symbol"] == 0


def test_packets_cross_l0_both_ways_on_the_word_link_with_skp_ordered_sets():
    rng = random.Random(12)
    to_endpoint: list[tuple[str, int, bytes | None]] = []
    to_endpoint_dllps: list[bytes] = []
    from_endpoint = [(seq, rng.randbytes(rng.choice((12, 16, 64, 256)))) for seq in range(10)]
    from_endpoint_dllps = [ack_dllp(i) for i in range(6)]

    async def endpoint_sends(ctx, link):
        await ctx.tick().until(link.status.link_up)
        for seq, body in from_endpoint:
            ctx.set(link.tlp_seq, seq)
            await send_tlps(ctx, link.tlp, [body], unit_bytes=4)
            await send_dllp(ctx, link.dllp, from_endpoint_dllps[seq % 6])
            for _ in range(rng.randrange(200)):
                await ctx.tick()

    async def script(bench):
        await bench.run(8000, until=bench.l0)
        partner = bench.partner
        for seq in range(16):
            body = rng.randbytes(rng.choice((12, 16, 140)))
            fault = seq % 4
            if fault == 0:
                partner.send_tlp(seq, body)
                to_endpoint.append(("GOOD", seq, body))
            elif fault == 1:  # one bit of the TLP flipped on the wire
                wire = frame_tlp(seq, body)
                wire[3 + rng.randrange(len(body))] ^= 1 << rng.randrange(8)
                partner.send_symbols(wire)
                to_endpoint.append(("BAD_LCRC", seq, None))
            elif fault == 2:
                partner.send_tlp(seq, body, nullified=True)
                to_endpoint.append(("NULLIFIED", seq, body))
            else:
                dllp = fc_dllp(DllpType.UPDATE_FC_P, seq, 64 * seq)
                partner.send_dllp(dllp)
                to_endpoint_dllps.append(dllp)
            # Odd runs of idle between the partner's packets: the aligner's work.
            partner.send_symbols([0] * rng.randrange(1, 4))
        await bench.run(16_000)

    bench = Bench(pace=GEN1_PACE)
    bench.simulate(script, endpoint_sends=endpoint_sends)
    got = [(status, seq, body if expected is not None else None)
           for (status, seq, body), (_, _, expected) in zip(bench.tlps, to_endpoint, strict=False)]
    assert got == to_endpoint
    assert bench.dllps == to_endpoint_dllps
    assert bench.events["bad_dllp"] == 0 and bench.events["bad_symbol"] == 0
    received = bench.partner.received
    assert [(p.status, p.seq, p.payload) for p in received if p.kind == "tlp"] == \
        [("good", seq, body) for seq, body in from_endpoint]
    assert [p.payload for p in received if p.kind == "dllp"] == \
        [from_endpoint_dllps[seq % 6] for seq, _ in from_endpoint]
    assert bench.events["skp_inserted"] >= 10
    assert bench.partner.skp_received in (bench.events["skp_inserted"],
                                          bench.events["skp_inserted"] - 1)
    assert bench.events["skp_removed"] >= bench.partner.skp_sent - 1
    assert bench.states == TRAINED
