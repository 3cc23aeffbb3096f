"""The soft endpoint's link (four symbols a clock) against the symbol-level root port (Amaranth
simulation): training from Detect to L0 (at a word every clock, and with clocks between words),
at x1 Gen1 behind a Gen2 x4 root port, an inverted lane found in Polling, Polling.Compliance
when the root port is late or asks for it, Recovery started from either side, no receiver, a
root port that goes away, and packets both ways in L0 with SKP ordered sets and odd idle runs
on the link. The LTSSM's timeouts and Polling.Active's TS1 count are scaled down
(:data:`SIM_TIMING`, in clocks); the state machine and every ordered set are as in the spec."""

import random

import pytest
from busprobe.gateware.pcie.soft.soft_link import SoftLink
from busprobe.gateware.pcie.soft.word_deframer import TlpStatus
from busprobe.protocol.pcie_dll import DllpType, ack_dllp, fc_dllp, frame_tlp
from busprobe.protocol.pcie_ltssm import LinkSpeed, LinkStatus, LtssmState, unpack_link_status
from busprobe.protocol.pcie_symbols import RATE_2_5GT, RATE_5GT, KCode
from busprobe.sim.pcie.symbol.amaranth_bench import SIM_TIMING, send_dllp, send_tlps, simulate
from busprobe.sim.pcie.symbol.partner import PartnerState, RootPortPartner
from busprobe.sim.pcie.symbol.word_exchange import GEN1_PACE, SPARSE_PACE, WordExchange

TRAINED = [LtssmState.DETECT_QUIET, LtssmState.DETECT_ACTIVE, LtssmState.POLLING_ACTIVE,
           LtssmState.POLLING_CONFIGURATION, LtssmState.CONFIG_LINKWIDTH_START,
           LtssmState.CONFIG_LINKWIDTH_ACCEPT, LtssmState.CONFIG_LANENUM_WAIT,
           LtssmState.CONFIG_COMPLETE, LtssmState.CONFIG_IDLE, LtssmState.L0]
RECOVERY = [LtssmState.RECOVERY_RCVRLOCK, LtssmState.RECOVERY_RCVRCFG, LtssmState.RECOVERY_IDLE,
            LtssmState.L0]


class Bench:
    """The word link, the partner and what the link reported, cycle by cycle."""

    def __init__(self, *, pace: int = GEN1_PACE, inverted_lane: bool = False,
                 **partner_options):
        self.link = SoftLink(timing=SIM_TIMING)
        # The link alone: the partner sends only what a test asks for (no InitFC).
        self.partner = RootPortPartner(**{"link": 5, "lane": 0, "data_link": False,
                                          **partner_options})
        self.exchange = WordExchange(self.link, self.partner, pace=pace,
                                     inverted_lane=inverted_lane)
        self.states: list[LtssmState] = []
        self.events = dict.fromkeys(("bad_dllp", "bad_symbol", "skp_inserted", "skp_removed"),
                                    0)
        self.tlps: list[tuple[str, int, bytes]] = []
        self.dllps: list[bytes] = []
        self._body = bytearray()
        self.ctx = None

    def note_state(self) -> None:
        state = LtssmState(self.ctx.get(self.link.status.state))
        if not self.states or self.states[-1] != state:
            self.states.append(state)

    def sample(self, _cycle: int) -> None:
        ctx, link = self.ctx, self.link
        self.note_state()
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

    async def run(self, cycles: int, until=None, **options) -> int:
        ran = await self.exchange.run(self.ctx, cycles=cycles, until=until, each=self.sample,
                                      **options)
        self.note_state()  # the state after the last clock edge
        return ran

    def simulate(self, script, *, endpoint_sends=None) -> None:
        async def testbench(ctx):
            self.ctx = ctx
            await script(self)

        async def sender(ctx):
            await endpoint_sends(ctx, self.link)

        simulate(self.link, testbench, *([sender] if endpoint_sends is not None else []))


def trained(**options) -> tuple[Bench, dict]:
    """A bench (``options``) run from reset to L0 and on a little: its cycles to L0 and the
    link status then."""
    result = {}

    async def script(bench):
        result["cycles"] = await bench.run(8000, until=bench.l0)
        await bench.run(50)
        result["status"] = unpack_link_status(bench.ctx.get(bench.link.status.as_value()))

    bench = Bench(**options)
    bench.simulate(script)
    return bench, result


@pytest.mark.parametrize("pace", [GEN1_PACE, SPARSE_PACE])
def test_the_word_link_trains_from_detect_to_l0_with_the_root_ports_link_number(pace):
    bench, result = trained(pace=pace)
    assert bench.states == TRAINED
    assert result["status"] == LinkStatus(LtssmState.L0, link_up=True, width=1,
                                          speed=LinkSpeed.GEN1, link_number=5, lane_number=0)
    assert result["cycles"] < 8000 and bench.events["bad_symbol"] == 0


@pytest.mark.parametrize("lane", [0, 3])
def test_a_wider_faster_root_port_trains_the_endpoint_at_x1_gen1_which_is_all_it_offers(lane):
    # A Gen2 x4 root port: it offers 2.5 and 5.0 GT/s in every TS, and proposes lane 3 on the
    # endpoint's lane when its lanes are reversed. The endpoint offers 2.5 GT/s only, so the
    # rates in common leave no speed change to ask for, and it reports what it trained.
    bench, result = trained(rates=RATE_2_5GT | RATE_5GT, lane=lane)
    assert bench.states == TRAINED and result["cycles"] < 8000
    assert result["status"] == LinkStatus(LtssmState.L0, link_up=True, width=1,
                                          speed=LinkSpeed.GEN1, link_number=5,
                                          lane_number=lane)
    assert (bench.partner.endpoint_rates, bench.partner.common_rates) == \
        (RATE_2_5GT, RATE_2_5GT)


def test_an_inverted_lane_is_found_in_polling_and_the_link_trains():
    result = {}

    async def script(bench):
        await bench.run(8000, until=bench.l0)
        result["invert"] = bench.ctx.get(bench.link.invert_polarity)

    bench = Bench(inverted_lane=True)
    bench.simulate(script)
    assert result == {"invert": 1} and bench.states == TRAINED


def test_a_late_root_port_sends_the_endpoint_into_compliance_and_out_again():
    # The partner's silence is in symbol times, the LTSSM's timeouts in clocks (four each).
    silent = 4 * (SIM_TIMING.detect_quiet + SIM_TIMING.polling_active) + 2000

    async def script(bench):
        await bench.run(silent // 4 + 8000, until=bench.l0)

    bench = Bench(silent=silent)
    bench.simulate(script)
    assert bench.states[:5] == [LtssmState.DETECT_QUIET, LtssmState.DETECT_ACTIVE,
                                LtssmState.POLLING_ACTIVE, LtssmState.POLLING_COMPLIANCE,
                                LtssmState.POLLING_ACTIVE]
    assert bench.states[-1] == LtssmState.L0
    # The partner's transmitter was silent, its receiver heard the compliance pattern.
    assert bench.partner.seen_compliance > 100


def test_a_root_port_asking_for_compliance_gets_the_pattern_until_it_sends_eios():
    result = {}

    async def script(bench):
        def in_compliance() -> bool:
            return bench.ctx.get(bench.link.status.state) == LtssmState.POLLING_COMPLIANCE

        await bench.run(3000, until=in_compliance)
        heard = bench.partner.seen_compliance
        await bench.run(250)  # the partner keeps sending TS1s: no way out but its EIOS
        result["stayed"] = in_compliance()
        result["pattern"] = bench.partner.seen_compliance - heard
        bench.partner.end_compliance()
        await bench.run(8000, until=bench.l0)

    bench = Bench(ask_compliance=True)
    bench.simulate(script)
    # COM D21.5 COM D10.2, a word a clock: 250 clocks are 1,000 symbols, within the couple of
    # words in flight between the endpoint's transmitter and the partner's count.
    assert result["stayed"] and 248 <= result["pattern"] <= 250, result
    assert bench.states == TRAINED[:3] + [LtssmState.POLLING_COMPLIANCE] + TRAINED[2:]


def test_recovery_from_either_side_returns_to_l0_and_is_counted():
    result = {}

    async def script(bench):
        await bench.run(8000, until=bench.l0)
        bench.partner.start_recovery()
        await bench.run(50)
        await bench.run(4000, until=bench.l0)
        result["after_partner"] = bench.ctx.get(bench.link.recoveries)
        bench.ctx.set(bench.link.retrain, 1)
        await bench.run(1)
        bench.ctx.set(bench.link.retrain, 0)
        await bench.run(50)
        await bench.run(4000, until=bench.l0)
        result["after_endpoint"] = bench.ctx.get(bench.link.recoveries)

    bench = Bench()
    bench.simulate(script)
    assert bench.states == TRAINED + RECOVERY + RECOVERY
    assert (result["after_partner"], result["after_endpoint"]) == (1, 2)
    assert bench.partner.history.count(PartnerState.RECOVERY_RCVRLOCK) == 2
    assert bench.partner.state == PartnerState.L0


def test_without_a_receiver_the_endpoint_stays_in_detect_and_never_transmits():
    result = {"sent": 0}

    async def script(bench):
        for _ in range(5):
            await bench.run(SIM_TIMING.detect_quiet, receiver_detected=False)
            result["sent"] += not bench.ctx.get(bench.link.tx_electrical_idle)

    bench = Bench(silent=10**9)  # and no termination: nothing at the other end
    bench.simulate(script)
    # Detect.Quiet's timeout, Detect.Active finds no receiver, again and again.
    cycle = [LtssmState.DETECT_QUIET, LtssmState.DETECT_ACTIVE]
    assert len(bench.states) >= 8 and bench.states == (cycle * 5)[:len(bench.states)]
    assert result["sent"] == 0 and bench.partner.history == [PartnerState.DETECT]


def test_a_root_port_that_goes_away_takes_the_link_down_through_recovery_to_detect():
    result = {}

    async def script(bench):
        await bench.run(8000, until=bench.l0)
        bench.partner.power_off()
        await bench.run(SIM_TIMING.recovery_lock + SIM_TIMING.detect_quiet + 100)
        result["link_up"] = bench.ctx.get(bench.link.status.link_up)
        result["width"] = bench.ctx.get(bench.link.status.width)

    bench = Bench()
    bench.simulate(script)
    assert bench.states[len(TRAINED):] == [LtssmState.RECOVERY_RCVRLOCK, LtssmState.DETECT_QUIET,
                                           LtssmState.DETECT_ACTIVE, LtssmState.POLLING_ACTIVE]
    assert result == {"link_up": 0, "width": 0}


def test_packets_cross_l0_both_ways_on_the_word_link_with_skp_ordered_sets():
    rng = random.Random(12)
    to_endpoint: list[tuple[str, int, bytes | None]] = []
    to_endpoint_dllps: list[bytes] = []
    bad_dllps = 0
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
        nonlocal bad_dllps
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
                partner.send_symbols([KCode.SDP, *dllp, 0, 0, KCode.END])  # a wrong CRC
                bad_dllps += 1
            # Odd runs of idle between the partner's packets: the aligner's work.
            partner.send_symbols([0] * rng.randrange(1, 4))
        await bench.run(16_000)

    bench = Bench(pace=GEN1_PACE)
    bench.simulate(script, endpoint_sends=endpoint_sends)
    got = [(status, seq, body if expected is not None else None)
           for (status, seq, body), (_, _, expected) in zip(bench.tlps, to_endpoint, strict=False)]
    assert got == to_endpoint
    assert bench.dllps == to_endpoint_dllps
    assert bench.events["bad_dllp"] == bad_dllps and bench.events["bad_symbol"] == 0
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
