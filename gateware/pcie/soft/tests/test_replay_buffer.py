"""The replay buffer (Amaranth simulation): TLPs numbered and sent once, freed by ACK, replayed
whole and in order on NAK or timeout, REPLAY_NUM rollover asking for Recovery."""

import random

import pytest
from busprobe.gateware.pcie.soft.replay_buffer import ReplayBuffer
from busprobe.gateware.pcie.soft.word_framer import TLP_BYTE, TLP_DW
from busprobe.protocol.pcie_dll import REPLAY_TIMEOUT_SYMBOLS, ack_dllp, nak_dllp
from busprobe.sim.pcie.symbol.amaranth_bench import send_tlps, simulate

TIMEOUT = 300
#: Every behaviour below holds for TLPs kept as bytes and as DWs.
UNITS = pytest.mark.parametrize("unit_bytes", [1, 4])


def run(tlps, script, *, depth=4096, unit_bytes=1):
    """Offer ``tlps`` in units of ``unit_bytes``; ``script(ctx, dut)`` sends ACK/NAKs. Returns
    the (seq, bytes) sent out, and the retrain strobes seen."""
    dut = ReplayBuffer(depth=depth, replay_timeout=TIMEOUT,
                       unit=TLP_DW if unit_bytes == 4 else TLP_BYTE)
    out: list[tuple[int, bytes]] = []
    retrains = [0]

    async def producer(ctx):
        ctx.set(dut.active, 1)
        await send_tlps(ctx, dut.tlp, tlps, unit_bytes=unit_bytes)

    async def consumer(ctx):
        ctx.set(dut.source.ready, 1)
        current = bytearray()
        async for _, _, valid, data, last, seq, retrain in ctx.tick().sample(
                dut.source.valid, dut.source.p.data, dut.source.p.last, dut.source_seq,
                dut.retrain):
            retrains[0] += retrain
            if valid:
                current.extend(data.to_bytes(unit_bytes, "little"))
                if last:
                    out.append((seq, bytes(current)))
                    current = bytearray()

    async def testbench(ctx):
        await script(ctx, dut)

    simulate(dut, testbench, producer, consumer)
    return out, retrains[0]


async def dllp(ctx, dut, word: bytes):
    ctx.set(dut.rx_dllp.valid, 1)
    ctx.set(dut.rx_dllp.payload, int.from_bytes(word, "little"))
    await ctx.tick()
    ctx.set(dut.rx_dllp.valid, 0)


BODIES = [random.Random(1).randbytes(n) for n in (12, 16, 40, 20)]


@UNITS
def test_tlps_go_out_once_numbered_and_an_ack_frees_them(unit_bytes):
    result = {}

    async def script(ctx, dut):
        await ctx.tick().repeat(150)
        await dllp(ctx, dut, ack_dllp(3))
        await ctx.tick().repeat(TIMEOUT * 2)
        result.update(acked=ctx.get(dut.acked_seq), next=ctx.get(dut.next_transmit_seq),
                      replays=ctx.get(dut.replays))

    out, _ = run(BODIES, script, unit_bytes=unit_bytes)
    assert out == list(enumerate(BODIES))
    assert result == {"acked": 3, "next": 4, "replays": 0}


@UNITS
def test_a_nak_replays_what_it_did_not_acknowledge_oldest_first(unit_bytes):
    async def script(ctx, dut):
        await ctx.tick().repeat(150)
        await dllp(ctx, dut, nak_dllp(1))
        await ctx.tick().repeat(100)
        await dllp(ctx, dut, ack_dllp(3))
        await ctx.tick().repeat(TIMEOUT * 2)

    out, _ = run(BODIES, script, unit_bytes=unit_bytes)
    assert out == list(enumerate(BODIES)) + [(2, BODIES[2]), (3, BODIES[3])]


@UNITS
def test_without_acks_the_timer_replays_and_the_fourth_replay_asks_for_recovery(unit_bytes):
    result = {}

    async def script(ctx, dut):
        # The TLPs go out by ~40 clocks; each replay comes a timeout after the last one ends.
        await ctx.tick().repeat(40 + 4 * (TIMEOUT + 35) + 50)
        result.update(replays=ctx.get(dut.replays), timeouts=ctx.get(dut.timeouts))
        await dllp(ctx, dut, ack_dllp(1))
        await ctx.tick().repeat(TIMEOUT + 150)
        result["after_ack"] = ctx.get(dut.replays)

    out, retrains = run(BODIES[:2], script, unit_bytes=unit_bytes)
    assert result["replays"] == result["timeouts"] == 4
    assert out == list(enumerate(BODIES[:2])) * 5
    assert retrains == 1
    assert result["after_ack"] == 4  # everything acknowledged: no more replays


@UNITS
def test_an_ack_for_a_tlp_never_sent_is_a_protocol_error_and_frees_nothing(unit_bytes):
    result = {}

    async def script(ctx, dut):
        await ctx.tick().repeat(100)
        await dllp(ctx, dut, ack_dllp(7))
        result.update(errors=ctx.get(dut.protocol_errors), acked=ctx.get(dut.acked_seq))

    run(BODIES[:2], script, unit_bytes=unit_bytes)
    assert result == {"errors": 1, "acked": 4095}


@UNITS
def test_a_full_buffer_holds_the_transaction_layer_until_acks_free_room(unit_bytes):
    bodies = [bytes([i]) * 100 for i in range(12)]  # 8 slots: at most 7 kept
    result = {}

    async def script(ctx, dut):
        await ctx.tick().repeat(1200)
        result["sent_before_ack"] = ctx.get(dut.next_transmit_seq)
        await dllp(ctx, dut, ack_dllp(6))
        await ctx.tick().repeat(1000)
        result["sent_after_ack"] = ctx.get(dut.next_transmit_seq)

    out, _ = run(bodies, script, unit_bytes=unit_bytes)
    assert result == {"sent_before_ack": 7, "sent_after_ack": 12}
    # Each TLP went out, in order, with its number (the timer also replayed the first 7).
    assert out[:7] == list(enumerate(bodies[:7]))
    firsts = [o for i, o in enumerate(out) if o not in out[:i]]
    assert firsts == list(enumerate(bodies))


@UNITS
def test_a_replay_ends_where_the_byte_store_wraps_to_zero(unit_bytes):
    # 1 KiB store, 128-byte TLPs: the 8th ends exactly at the wrap (its end pointer is 0),
    # in bytes or in DWs.
    bodies = [bytes([i]) * 128 for i in range(9)]

    async def script(ctx, dut):
        for acked in (1, 3, 5):  # keep room: ACK two at a time as they go out
            await ctx.tick().until(dut.next_transmit_seq == acked + 2)
            await dllp(ctx, dut, ack_dllp(acked))
        await ctx.tick().until(dut.next_transmit_seq == 8)
        await dllp(ctx, dut, nak_dllp(6))
        await ctx.tick().repeat(400 // unit_bytes)  # the replay's end, within REPLAY_TIMER
        await dllp(ctx, dut, ack_dllp(8))
        await ctx.tick().repeat(200)

    out, _ = run(bodies, script, depth=1024, unit_bytes=unit_bytes)
    # The NAK replays 7 (whose end is the wrap) and 8 (already sent when the NAK came).
    assert out == list(enumerate(bodies)) + [(7, bodies[7]), (8, bodies[8])]


def replay_gap(max_payload_size: int, span: int) -> list[int]:
    """The clocks one TLP, never acknowledged, starts out at (first time, then replays),
    within ``span`` clocks, with the REPLAY_TIMER by MPS."""
    dut = ReplayBuffer()
    sent: list[int] = []

    async def producer(ctx):
        ctx.set(dut.active, 1)
        ctx.set(dut.max_payload_size, max_payload_size)
        await ctx.tick().repeat(2)
        await send_tlps(ctx, dut.tlp, [BODIES[0]])

    async def consumer(ctx):
        ctx.set(dut.source.ready, 1)
        cycle = 0
        async for _, _, valid in ctx.tick().sample(dut.source.valid):
            cycle += 1
            if valid and (not sent or cycle - sent[-1] > len(BODIES[0])):
                sent.append(cycle)

    async def testbench(ctx):
        await ctx.tick().repeat(span)

    simulate(dut, testbench, producer, consumer)
    return sent


def test_the_replay_timer_follows_the_negotiated_payload_size():
    """Replayed REPLAY_TIMEOUT_SYMBOLS[MPS] clocks after its last byte went (three AckNak
    latencies: 711, 1248, 1677 symbol times at 2.5 GT/s x1)."""
    for mps, timeout in REPLAY_TIMEOUT_SYMBOLS.items():
        sent = replay_gap(mps, timeout + 200)
        assert len(sent) == 2, (mps, sent)
        assert timeout < sent[1] - (sent[0] + len(BODIES[0])) < timeout + 5, (mps, sent)


def test_the_replay_timer_counts_symbol_times_four_a_clock_at_gen1_on_words():
    """The four-symbol link at Gen1 runs a 62.5 MHz clock: each clock is four symbol times, so
    the replay comes REPLAY_TIMEOUT_SYMBOLS / 4 clocks after the TLP's last DW."""
    dut = ReplayBuffer(unit=TLP_DW, symbols_per_clock=4)
    sent: list[int] = []
    body = BODIES[0]
    timeout = REPLAY_TIMEOUT_SYMBOLS[128]

    async def producer(ctx):
        ctx.set(dut.active, 1)
        ctx.set(dut.max_payload_size, 128)
        await ctx.tick().repeat(2)
        await send_tlps(ctx, dut.tlp, [body], unit_bytes=4)

    async def consumer(ctx):
        ctx.set(dut.source.ready, 1)
        cycle = 0
        async for _, _, valid in ctx.tick().sample(dut.source.valid):
            cycle += 1
            if valid and (not sent or cycle - sent[-1] > len(body) // 4):
                sent.append(cycle)

    async def testbench(ctx):
        await ctx.tick().repeat(timeout // 4 + 100)

    simulate(dut, testbench, producer, consumer)
    assert len(sent) == 2, sent
    assert timeout // 4 < sent[1] - (sent[0] + len(body) // 4) < timeout // 4 + 5, sent
