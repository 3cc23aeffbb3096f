"""The word-wide framer (Amaranth simulation): its words, read lane 0 first, are the protocol
module's :func:`frame_tlp` / :func:`frame_dllp` symbol for symbol, every packet starting in lane
0 and ending in lane 3, under stalls; and the word deframer takes them back."""

import random

from busprobe.gateware.pcie.soft.symbol_stream import LANES
from busprobe.gateware.pcie.soft.word_deframer import TlpStatus, WordDeframer
from busprobe.gateware.pcie.soft.word_framer import WordFramer
from busprobe.protocol.pcie_dll import (
    DllpType,
    ack_dllp,
    deframe,
    fc_dllp,
    frame_dllp,
    frame_tlp,
    nak_dllp,
)
from busprobe.protocol.pcie_symbols import KCode
from busprobe.sim.pcie.symbol.amaranth_bench import send_dllp, simulate


async def send_dws(ctx, dut, seq: int, body: bytes, nullify: bool) -> None:
    """Offer a TLP's DWs, holding ``valid`` from its first to its last as the framer needs."""
    ctx.set(dut.tlp_seq, seq)
    dws = [body[i:i + 4] for i in range(0, len(body), 4)]
    for i, dw in enumerate(dws):
        last = i == len(dws) - 1
        ctx.set(dut.tlp.payload, {"data": int.from_bytes(dw, "little"), "last": last,
                                  "nullify": last and nullify})
        ctx.set(dut.tlp.valid, 1)
        await ctx.tick().until(dut.tlp.ready)
    ctx.set(dut.tlp.valid, 0)


def run_framer(tlps, dllps, *, stalls=0.0, gaps=0, seed=0):
    """Offer TLPs (seq, body, nullify) and DLLPs at once; return the words sent (lists of four
    symbols) and their ``end`` flags, in order."""
    dut = WordFramer()
    rng = random.Random(seed)
    words: list[list[int]] = []
    ends: list[bool] = []

    async def tlp_source(ctx):
        for seq, body, nullify in tlps:
            await send_dws(ctx, dut, seq, body, nullify)
            for _ in range(rng.randrange(gaps + 1)):
                await ctx.tick()

    async def dllp_source(ctx):
        for dllp in dllps:
            await send_dllp(ctx, dut.dllp, dllp)
            for _ in range(rng.randrange(30)):
                await ctx.tick()

    async def sink(ctx):
        total = sum(len(b) + 8 for _, b, _ in tlps) // LANES + 2 * len(dllps)
        idle = 0
        while len(words) < total and idle < 200:
            ready = rng.random() >= stalls
            ctx.set(dut.source.ready, ready)
            # Read at the clock edge: the sources are other testbenches.
            _, _, valid, word, end = await ctx.tick().sample(
                dut.source.valid, dut.source.p.symbols, dut.source.p.end)
            if valid and ready:
                words.append([int(word[lane]) for lane in range(LANES)])
                ends.append(bool(end))
            idle = 0 if valid else idle + 1

    simulate(dut, sink, tlp_source, dllp_source)
    return words, ends


def flat(words):
    return [symbol for word in words for symbol in word]


def tlp_body(rng: random.Random) -> bytes:
    return rng.randbytes(rng.choice((12, 16)) + 4 * rng.randrange(0, 40))


def test_framed_tlps_are_the_reference_framing_symbol_for_symbol_in_whole_words():
    rng = random.Random(1)
    tlps = [(rng.randrange(4096), tlp_body(rng), False) for _ in range(10)]
    tlps.append((4095, bytes(range(12)), False))  # the shortest, the top sequence number
    words, ends = run_framer(tlps, [])
    assert flat(words) == [s for seq, body, _ in tlps for s in frame_tlp(seq, body)]
    # A packet ends in lane 3 of the word marked end, and only there.
    lengths = [(len(body) + 8) // LANES for _, body, _ in tlps]
    marks = [sum(lengths[:i + 1]) - 1 for i in range(len(lengths))]
    assert [i for i, end in enumerate(ends) if end] == marks


def test_a_nullified_tlp_goes_out_with_edb_and_the_inverted_lcrc():
    body = bytes(range(16))
    words, ends = run_framer([(5, body, True), (6, body, False)], [])
    assert flat(words) == frame_tlp(5, body, nullified=True) + frame_tlp(6, body)


def test_dllps_are_the_reference_framing_and_go_before_a_waiting_tlp():
    dllps = [ack_dllp(7), nak_dllp(4095), fc_dllp(DllpType.UPDATE_FC_P, 0x80, 0x7FF)]
    words, ends = run_framer([], dllps)
    assert flat(words) == [s for d in dllps for s in frame_dllp(d)]
    assert ends == [False, True] * len(dllps)
    # Both waiting from the first clock: the DLLP first, then the TLP.
    body = bytes(range(20))
    words, _ = run_framer([(9, body, False)], [ack_dllp(1)])
    assert flat(words) == frame_dllp(ack_dllp(1)) + frame_tlp(9, body)


def test_tlps_and_dllps_interleave_whole_under_stalls_and_gaps():
    rng = random.Random(4)
    tlps = [(rng.randrange(4096), tlp_body(rng), rng.random() < 0.2) for _ in range(12)]
    dllps = [ack_dllp(i) for i in range(10)]
    for seed, stalls in ((4, 0.3), (5, 0.7)):
        words, ends = run_framer(tlps, dllps, stalls=stalls, gaps=5, seed=seed)
        packets = deframe(flat(words))
        assert [p.payload for p in packets if p.kind == "dllp"] == dllps
        assert [(p.seq, p.payload, p.status) for p in packets if p.kind == "tlp"] == \
            [(s, b, "nullified" if n else "good") for s, b, n in tlps]
        # Whole words: a packet starts in lane 0 after a word marked end, ends in its lane 3.
        for prev_end, word, end in zip([True, *ends], words, ends, strict=False):
            assert (word[0] in (KCode.STP, KCode.SDP)) == prev_end
            assert (word[3] in (KCode.END, KCode.EDB)) == end


def test_the_word_deframer_takes_the_framers_words_back():
    rng = random.Random(6)
    tlps = [(i, tlp_body(rng), i == 3) for i in range(8)]
    dllps = [ack_dllp(i) for i in range(5)]
    words, _ = run_framer(tlps, dllps, stalls=0.2, seed=6)
    dut = WordDeframer(max_payload=512)
    got = {"tlps": [], "dllps": []}
    current = bytearray()

    async def main(ctx):
        for word in words + [[0] * LANES] * 3:
            ctx.set(dut.sink.valid, 1)
            for lane, symbol in enumerate(word):
                ctx.set(dut.sink.p[lane], {"symbol": symbol, "error": 0})
            await ctx.delay(1e-10)
            if ctx.get(dut.tlp.valid):
                current.extend(ctx.get(dut.tlp.p.data).to_bytes(4, "little"))
            if ctx.get(dut.tlp_end):
                got["tlps"].append((ctx.get(dut.tlp_seq), TlpStatus(ctx.get(dut.tlp_status)),
                                    bytes(current)))
                current.clear()
            if ctx.get(dut.dllp.valid):
                got["dllps"].append(ctx.get(dut.dllp.payload).to_bytes(4, "little"))
            assert not ctx.get(dut.bad_symbol) and not ctx.get(dut.bad_dllp)
            await ctx.tick()

    simulate(dut, main)
    assert got["dllps"] == dllps
    assert got["tlps"] == [(s, TlpStatus.NULLIFIED if n else TlpStatus.GOOD, b)
                           for s, b, n in tlps]
