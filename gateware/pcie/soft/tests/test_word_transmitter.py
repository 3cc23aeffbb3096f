"""The word-wide link transmitter (Amaranth simulation): TS1/TS2 as :func:`encode_ts` four
symbols a word, the compliance pattern, logical idle and the framer's packets, switching modes
only between whole ordered sets and packets, with the strobes counted per word."""

import random

from busprobe.gateware.pcie.soft.symbol_stream import LANES
from busprobe.gateware.pcie.soft.word_transmitter import TxMode, WordTransmitter
from busprobe.protocol.pcie_dll import ack_dllp, deframe, frame_dllp, frame_tlp
from busprobe.protocol.pcie_symbols import (
    COMPLIANCE_PATTERN,
    LOGICAL_IDLE,
    TrainingControl,
    TrainingSet,
    TsKind,
    encode_ts,
)
from busprobe.sim.pcie.symbol.amaranth_bench import simulate

IDLE_WORD = [LOGICAL_IDLE] * LANES


def as_layout(ts: TrainingSet) -> dict:
    return {"kind": ts.kind, "link": ts.link or 0, "link_pad": ts.link is None,
            "lane": ts.lane or 0, "lane_pad": ts.lane is None, "n_fts": ts.n_fts,
            "rate": ts.rate, "control": ts.control}


def words_of(symbols: list[int]) -> list[list[int]]:
    return [symbols[i:i + LANES] for i in range(0, len(symbols), LANES)]


def run(cycles, *, mode, ts=lambda cycle: None, packets=(), stalls=0.0, seed=0):
    """Clock the transmitter ``cycles`` times with ``mode(cycle)`` and ``ts(cycle)`` (a
    TrainingSet or None), offering ``packets`` (lists of words, gaps between); returns a record
    per word taken (symbols, end, electrical_idle, ts_sent, ts_sent_kind, idle_sent)."""
    dut = WordTransmitter()
    rng = random.Random(seed)
    taken = []

    async def feeder(ctx):
        for packet in packets:
            for _ in range(rng.randrange(1, 6)):
                await ctx.tick()
            for i, word in enumerate(packet):
                ctx.set(dut.packets.valid, 1)
                ctx.set(dut.packets.p, {"symbols": word, "end": i == len(packet) - 1})
                await ctx.tick().until(dut.packets.ready)
            ctx.set(dut.packets.valid, 0)

    async def main(ctx):
        for cycle in range(cycles):
            ready = rng.random() >= stalls
            ctx.set(dut.mode, mode(cycle))
            if ts(cycle) is not None:
                ctx.set(dut.ts, as_layout(ts(cycle)))
            ctx.set(dut.source.ready, ready)
            # Read at the clock edge: the packet feeder is another testbench.
            _, _, valid, symbols, end, eidle, sent, kind, idle = await ctx.tick().sample(
                dut.source.valid, dut.source.p.symbols, dut.source.p.end,
                dut.electrical_idle, dut.ts_sent, dut.ts_sent_kind, dut.idle_sent)
            assert valid
            if ready:
                taken.append(([int(s) for s in symbols], bool(end), bool(eidle), bool(sent),
                              int(kind), bool(idle)))
            else:
                assert not sent and not idle

    simulate(dut, main, feeder)
    return taken


def test_training_sets_go_out_whole_as_encode_ts_even_when_ts_changes_mid_set():
    sets = [TrainingSet(TsKind.TS1), TrainingSet(TsKind.TS1, link=5, lane=0, n_fts=40),
            TrainingSet(TsKind.TS2, link=5, lane=0, control=TrainingControl.LOOPBACK)]
    # ts changes every 7 clocks: never at a TS boundary for long.
    taken = run(400, mode=lambda cycle: TxMode.TRAINING, ts=lambda cycle: sets[cycle // 7 % 3],
                stalls=0.3, seed=1)
    for start in range(0, len(taken) - 3, 4):
        group = taken[start:start + 4]
        symbols = [s for word, *_ in group for s in word]
        assert symbols in [encode_ts(ts) for ts in sets], start
        assert [end for _, end, *_ in group] == [False, False, False, True]
        assert [sent for *_, sent, _, _ in group] == [False, False, False, True]
        kind = TsKind.TS2 if symbols == encode_ts(sets[2]) else TsKind.TS1
        assert group[3][4] == kind


def test_modes_switch_only_at_a_ts_end_and_idle_compliance_and_electrical_idle_are_whole_words():
    schedule = [(0, TxMode.ELECTRICAL_IDLE), (10, TxMode.TRAINING), (21, TxMode.IDLE),
                (40, TxMode.COMPLIANCE), (50, TxMode.TRAINING), (51, TxMode.ELECTRICAL_IDLE)]

    def mode(cycle):
        return [m for start, m in schedule if start <= cycle][-1]

    taken = run(70, mode=mode, ts=lambda cycle: TrainingSet(TsKind.TS1, link=3, lane=0))
    words = [word for word, *_ in taken]
    ts1 = words_of(encode_ts(TrainingSet(TsKind.TS1, link=3, lane=0)))
    eidle = [record[2] for record in taken]
    assert eidle == [True] * 10 + [False] * 44 + [True] * 16
    # TS1s from clock 10; the one under way at 21 (its word 3 of 4) finishes first.
    assert words[10:22] == ts1 * 3
    assert words[22:40] == [IDLE_WORD] * 18
    assert [record[5] for record in taken[22:40]] == [True] * 18
    assert words[40:50] == [list(COMPLIANCE_PATTERN)] * 10
    assert words[50:54] == ts1  # one clock of TRAINING: the whole TS1
    assert all(record[1] for record in taken[22:50])  # idle and compliance: each word ends
    assert sum(record[3] for record in taken) == 4
    assert not any(record[5] for record in taken[:22] + taken[40:])


def test_data_mode_sends_the_framers_packets_whole_with_idle_words_between():
    rng = random.Random(2)
    packets = [words_of(frame_tlp(seq, rng.randbytes(rng.choice((12, 16, 64)))))
               for seq in range(4)] + [words_of(frame_dllp(ack_dllp(7)))]
    taken = run(300, mode=lambda cycle: TxMode.DATA, packets=packets, stalls=0.3, seed=2)
    symbols = [s for word, *_ in taken for s in word]
    got = deframe(symbols)
    assert [p.status for p in got] == ["good"] * 5
    assert [p.payload for p in got][-1] == ack_dllp(7)
    for word, end, _, _, _, idle in taken:
        if word == IDLE_WORD:
            assert end and idle
        else:
            assert not idle
    # Every packet's words are contiguous: no idle word inside one.
    inside = False
    for word, end, *_ in taken:
        assert not (inside and word == IDLE_WORD)
        if word != IDLE_WORD:
            inside = not end


def test_a_packet_under_way_finishes_before_the_mode_changes():
    tlp = words_of(frame_tlp(1, bytes(range(64))))  # 18 words

    def mode(cycle):
        return TxMode.DATA if cycle < 8 else TxMode.TRAINING

    taken = run(60, mode=mode, packets=[tlp], ts=lambda cycle: TrainingSet(TsKind.TS1))
    words = [word for word, *_ in taken]
    start = words.index(tlp[0])
    assert start < 8 and words[start:start + len(tlp)] == tlp
    assert words[start + len(tlp):start + len(tlp) + 4] == words_of(
        encode_ts(TrainingSet(TsKind.TS1)))
