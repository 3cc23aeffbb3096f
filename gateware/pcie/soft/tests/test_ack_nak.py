"""The ACK/NAK receive side (Amaranth simulation): which TLPs are kept, and the ACK and NAK
DLLPs §3.5.3.1 asks for, with the sequence numbers they must carry."""

from busprobe.gateware.pcie.soft.ack_nak import DEFAULT_ACK_LATENCY, AckNakScheduler
from busprobe.gateware.pcie.soft.word_deframer import TlpStatus
from busprobe.protocol.pcie_dll import ACK_LATENCY_SYMBOLS, ack_dllp, nak_dllp
from busprobe.sim.pcie.symbol.amaranth_bench import simulate
from cocotbext.pcie.core.port import get_max_update_latency

GOOD, BAD, NULL, MALFORMED = (TlpStatus.GOOD, TlpStatus.BAD_LCRC, TlpStatus.NULLIFIED,
                              TlpStatus.MALFORMED)
LATENCY = 12


def run(received, *, gap=30):
    """Each (status, seq) ends a TLP, ``gap`` clocks apart; returns the fates and the DLLPs."""
    dut = AckNakScheduler(ack_latency=LATENCY)
    fates: list[str] = []
    dllps: list[bytes] = []

    async def testbench(ctx):
        ctx.set(dut.link_up, 1)
        ctx.set(dut.tx_dllp.ready, 1)
        for status, seq in received:
            ctx.set(dut.tlp_end, 1)
            ctx.set(dut.tlp_status, status)
            ctx.set(dut.tlp_seq, seq)
            fates.append("accept" if ctx.get(dut.accept) else
                         "discard" if ctx.get(dut.discard) else "?")
            for _ in range(gap):
                if ctx.get(dut.tx_dllp.valid):
                    dllps.append(ctx.get(dut.tx_dllp.payload).to_bytes(4, "little"))
                await ctx.tick()
                ctx.set(dut.tlp_end, 0)
        for _ in range(LATENCY + 5):  # what is still owed goes out
            if ctx.get(dut.tx_dllp.valid):
                dllps.append(ctx.get(dut.tx_dllp.payload).to_bytes(4, "little"))
            await ctx.tick()

    simulate(dut, testbench)
    return fates, dllps


def test_tlps_in_order_are_kept_and_acked_once_within_the_latency():
    fates, dllps = run([(GOOD, 0), (GOOD, 1), (GOOD, 2)], gap=3)
    assert fates == ["accept"] * 3
    fates, dllps = run([(GOOD, 0), (GOOD, 1), (GOOD, 2)], gap=LATENCY + 5)
    assert dllps == [ack_dllp(0), ack_dllp(1), ack_dllp(2)]


def test_acks_coalesce_when_tlps_come_faster_than_the_latency():
    _, dllps = run([(GOOD, seq) for seq in range(6)], gap=4)
    assert dllps and dllps[-1] == ack_dllp(5) and len(dllps) < 6
    assert all(d[0] == 0x00 for d in dllps)  # only ACKs


def test_a_bad_lcrc_is_naked_once_until_a_good_tlp_arrives():
    fates, dllps = run([(GOOD, 0), (BAD, 1), (BAD, 1), (MALFORMED, 0), (GOOD, 1), (BAD, 2)])
    assert fates == ["accept", "discard", "discard", "discard", "accept", "discard"]
    naks = [d for d in dllps if d[0] == 0x10]
    assert naks == [nak_dllp(0), nak_dllp(1)]


def test_a_lost_tlp_is_naked_and_a_duplicate_is_dropped_and_acked_at_once():
    fates, dllps = run([(GOOD, 0), (GOOD, 1), (GOOD, 3), (GOOD, 0)], gap=LATENCY + 5)
    assert fates == ["accept", "accept", "discard", "discard"]
    assert dllps == [ack_dllp(0), ack_dllp(1), nak_dllp(1), ack_dllp(1)]


def test_a_nullified_tlp_is_dropped_silently():
    fates, dllps = run([(NULL, 0), (GOOD, 0)], gap=LATENCY + 5)
    assert fates == ["discard", "accept"] and dllps == [ack_dllp(0)]


def test_sequence_numbers_wrap_at_4096():
    fates, dllps = run([(GOOD, seq % 4096) for seq in range(4100)], gap=1)
    assert fates == ["accept"] * 4100
    assert dllps[-1] == ack_dllp(3)
    # Just after the wrap, 4095 is one behind (a duplicate), not 4095 ahead.
    fates, _ = run([(GOOD, seq % 4096) for seq in range(4098)] + [(GOOD, 4095)], gap=1)
    assert fates[-1] == "discard"


def test_the_default_ack_latency_is_the_spec_formula_as_cocotbext_pcie_computes_it():
    assert DEFAULT_ACK_LATENCY == int(get_max_update_latency(128, 1, 1))  # x1, Gen1, MPS 128


def ack_wait(max_payload_size: int, symbols_per_clock: int = 1) -> int:
    """Clocks from a kept TLP's end to its ACK on offer, with the latency by MPS."""
    dut = AckNakScheduler(symbols_per_clock=symbols_per_clock)
    waited = []

    async def testbench(ctx):
        ctx.set(dut.link_up, 1)
        ctx.set(dut.tx_dllp.ready, 1)
        ctx.set(dut.max_payload_size, max_payload_size)
        await ctx.tick().repeat(2)  # the latency is registered from the MPS
        ctx.set(dut.tlp_end, 1)
        ctx.set(dut.tlp_status, GOOD)
        ctx.set(dut.tlp_seq, 0)
        await ctx.tick()
        ctx.set(dut.tlp_end, 0)
        for cycle in range(1, 2000):
            if ctx.get(dut.tx_dllp.valid):
                waited.append(cycle)
                return
            await ctx.tick()

    simulate(dut, testbench)
    return waited[0]


def test_the_ack_latency_follows_the_negotiated_payload_size_as_the_spec_formula():
    for mps, latency in ACK_LATENCY_SYMBOLS.items():
        assert latency == int(get_max_update_latency(mps, 1, 1)), mps  # x1, Gen1
        assert ack_wait(mps) == latency + 1, mps  # +1: the kept TLP's ACK is owed next clock
    assert ack_wait(0) == ACK_LATENCY_SYMBOLS[128] + 1  # before configuration: the least


def test_the_ack_latency_counts_symbol_times_four_a_clock_on_the_four_symbol_link():
    for mps, latency in ACK_LATENCY_SYMBOLS.items():
        # The first clock in which the timer has counted the latency's symbol times.
        assert ack_wait(mps, symbols_per_clock=4) == -(-latency // 4) + 1, mps
