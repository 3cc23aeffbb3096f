"""Flow-control initialisation and the ACK/NAK receive side over the whole link: the soft
endpoint and the symbol-level root port reach DL_Active with each other's credits, TLPs are
numbered, kept or dropped and ACKed/NAKed as §3.5.3.1 says (Amaranth simulation)."""

import random

from amaranth import Signal
from amaranth.back import rtlil
from busprobe.gateware.pcie.soft.data_link import SoftDataLink
from busprobe.gateware.pcie.soft.fc_init import ADVERTISED, FlowControlInit
from busprobe.gateware.pcie.soft.ltssm import LtssmTiming
from busprobe.protocol.pcie_dll import DllpType, fc_dllp, frame_tlp
from busprobe.sim.pcie.symbol.amaranth_bench import (
    SIM_TIMING,
    as_completion,
    send_tlps,
    simulate,
    until_dl_active,
)
from busprobe.sim.pcie.symbol.partner import RootPortPartner
from busprobe.sim.pcie.symbol.word_exchange import WordExchange

# FlowControlInit's defaults, as the partner records them
ENDPOINT_CREDITS = dict(zip(("P", "NP", "CPL"), ADVERTISED, strict=True))
#: TLPs move as DWs over the link, byte 0 in bits 7:0.
DW = 4


def test_fc_init_sends_initfc1_then_initfc2_and_records_the_partners_credits():
    dut = FlowControlInit()
    sent: list[bytes] = []
    seen = {}

    async def testbench(ctx):
        ctx.set(dut.link_up, 1)
        ctx.set(dut.tx_dllp.ready, 1)

        async def clock(n):
            for _ in range(n):
                if ctx.get(dut.tx_dllp.valid):
                    sent.append(ctx.get(dut.tx_dllp.payload).to_bytes(4, "little"))
                await ctx.tick()

        async def receive(dllp):
            ctx.set(dut.rx_dllp.valid, 1)
            ctx.set(dut.rx_dllp.payload, int.from_bytes(dllp, "little"))
            await clock(1)
            ctx.set(dut.rx_dllp.valid, 0)

        await clock(7)
        for kind, credits in ((DllpType.INIT_FC1_P, (64, 1024)), (DllpType.INIT_FC1_NP, (9, 3)),
                              (DllpType.INIT_FC1_CPL, (0, 0))):
            await receive(fc_dllp(kind, *credits))
        await clock(6)
        seen["active_before"] = ctx.get(dut.dl_active)
        await receive(fc_dllp(DllpType.INIT_FC2_NP, 9, 3))
        seen["active"] = ctx.get(dut.dl_active)
        seen["credits"] = [(ctx.get(c.header), ctx.get(c.data)) for c in
                           (dut.partner_posted, dut.partner_non_posted, dut.partner_completion)]
        await clock(5)
        seen["sending_after"] = ctx.get(dut.tx_dllp.valid)
        ctx.set(dut.link_up, 0)
        await clock(1)
        seen["active_after_link_down"] = ctx.get(dut.dl_active)

    simulate(dut, testbench)
    init1 = [fc_dllp(k, *ENDPOINT_CREDITS[n]) for k, n in (
        (DllpType.INIT_FC1_P, "P"), (DllpType.INIT_FC1_NP, "NP"), (DllpType.INIT_FC1_CPL, "CPL"))]
    init2 = [fc_dllp(k, *ENDPOINT_CREDITS[n]) for k, n in (
        (DllpType.INIT_FC2_P, "P"), (DllpType.INIT_FC2_NP, "NP"), (DllpType.INIT_FC2_CPL, "CPL"))]
    assert sent[:9] == init1 * 3
    assert sent[-6:] == init2 * 2
    assert seen == {"active_before": 0, "active": 1,
                    "credits": [(64, 1024), (9, 3), (0, 0)], "sending_after": 0,
                    "active_after_link_down": 0}


def test_over_the_link_both_sides_reach_dl_active_and_tlps_are_acked_or_naked():
    rng = random.Random(12)
    link = SoftDataLink(timing=SIM_TIMING, ack_latency=40)
    partner = RootPortPartner(link=1, lane=0)
    exchange = WordExchange(link, partner)
    result = {"accepted": 0, "discarded": 0}
    bodies = [rng.randbytes(16) for _ in range(6)]
    from_endpoint = [as_completion(rng.randbytes(rng.choice((12, 16, 64)))) for _ in range(3)]

    async def endpoint_sends(ctx):
        await ctx.tick().until(link.dl_active)
        await send_tlps(ctx, link.tlp, from_endpoint, unit_bytes=DW)

    async def testbench(ctx):
        def sample(_cycle):
            result["accepted"] += ctx.get(link.rx_accept)
            result["discarded"] += ctx.get(link.rx_discard)

        await until_dl_active(ctx, exchange)
        result["credits"] = [(ctx.get(c.header), ctx.get(c.data)) for c in
                             (link.partner_posted, link.partner_non_posted,
                              link.partner_completion)]
        # In order 0, 1; 2 corrupted; 3 arrives (2 was lost); then 2 and 3 again, 1 again.
        partner.send_tlp(0, bodies[0])
        partner.send_tlp(1, bodies[1])
        corrupted = frame_tlp(2, bodies[2])
        corrupted[6] ^= 0x10
        partner.send_symbols(corrupted)
        partner.send_tlp(3, bodies[3])
        partner.send_tlp(2, bodies[2])
        partner.send_tlp(3, bodies[3])
        partner.send_tlp(1, bodies[1])
        await exchange.run(ctx, cycles=1500, each=sample)
        result["next_rcv_seq"] = ctx.get(link.next_rcv_seq)
        result["naks"] = ctx.get(link.naks)
        result["duplicates"] = ctx.get(link.duplicates)
        result["next_transmit_seq"] = ctx.get(link.next_transmit_seq)

    simulate(link, testbench, endpoint_sends)
    assert partner.dll.credits == ENDPOINT_CREDITS
    assert result["credits"] == [(64, 512), (64, 16), (0, 0)]  # PartnerDataLink's defaults
    assert result["accepted"] == 4 and result["discarded"] == 3  # bad 2, early 3, old 1
    assert (result["next_rcv_seq"], result["naks"], result["duplicates"]) == (4, 1, 1)
    assert partner.dll.naks == [1]
    assert partner.dll.acks[-1] == 3
    received = [p for p in partner.received if p.kind == "tlp"]
    assert [(p.status, p.seq, p.payload) for p in received] == \
        [("good", seq, body) for seq, body in enumerate(from_endpoint)]
    assert result["next_transmit_seq"] == 3


def run_hostile(*, tlps: int, withhold_acks: int, corrupt_tlps: int, cycles: int):
    """The endpoint sends ``tlps`` TLPs to a partner that loses ACKs and sees bad LCRCs."""
    rng = random.Random(tlps + withhold_acks + corrupt_tlps)
    link = SoftDataLink(timing=SIM_TIMING, ack_latency=40, replay_timeout=400)
    partner = RootPortPartner(link=0, lane=0)
    exchange = WordExchange(link, partner)
    bodies = [as_completion(rng.randbytes(rng.choice((12, 16, 64, 128)))) for _ in range(tlps)]
    result = {}

    async def endpoint_sends(ctx):
        await ctx.tick().until(link.dl_active)
        await send_tlps(ctx, link.tlp, bodies, unit_bytes=DW)

    async def testbench(ctx):
        await until_dl_active(ctx, exchange)
        partner.dll.withhold_acks = withhold_acks
        partner.dll.corrupt_tlps = corrupt_tlps
        await exchange.run(ctx, cycles=cycles)
        for name in ("acked_seq", "next_transmit_seq", "replays", "replay_timeouts",
                     "protocol_errors", "recoveries"):
            result[name] = ctx.get(getattr(link, name))
        result["state"] = ctx.get(link.status.state)

    simulate(link, testbench, endpoint_sends)
    return bodies, partner, result


def test_lost_acks_and_bad_lcrcs_are_answered_by_replay_and_every_tlp_arrives_once():
    bodies, partner, result = run_hostile(tlps=8, withhold_acks=3, corrupt_tlps=2, cycles=6000)
    assert partner.dll.tlps == list(enumerate(bodies))
    assert partner.dll.naks_sent >= 1 and result["replays"] >= partner.dll.naks_sent
    assert (result["acked_seq"], result["next_transmit_seq"]) == (7, 8)
    assert result["protocol_errors"] == 0 and result["recoveries"] == 0


def test_four_replays_without_progress_retrain_the_link_and_then_the_tlps_get_through():
    # Every ACK lost for the first ~5 replay timeouts: REPLAY_NUM rolls over into Recovery.
    bodies, partner, result = run_hostile(tlps=2, withhold_acks=10, corrupt_tlps=0,
                                          cycles=9000)
    assert result["recoveries"] >= 1 and result["replay_timeouts"] >= 4
    assert partner.dll.tlps == list(enumerate(bodies))
    assert partner.dll.duplicates >= 4
    assert (result["acked_seq"], result["next_transmit_seq"], result["state"]) == (1, 2, 10)


def test_the_data_link_converts_to_rtlil_with_the_spec_timing():
    timing = LtssmTiming.spec()
    assert (timing.detect_quiet, timing.polling_active, timing.short) == \
        (750_000, 1_500_000, 125_000)  # 12 ms, 24 ms, 2 ms at 62.5 M words/s
    dut = SoftDataLink(timing=timing)
    ports = [value for _, _, value in dut.signature.flatten(dut) if isinstance(value, Signal)]
    text = rtlil.convert(dut, ports=ports, name="soft_data_link")
    assert "module \\soft_data_link" in text and "replay" in text
