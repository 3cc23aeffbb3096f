"""SKP ordered sets: inserted on schedule and only between packets; removed whole, whatever
their length, without touching the ordered sets and packets around them (Amaranth simulation)."""

import random

import pytest
from busprobe.gateware.pcie.soft.skp_inserter import SkpInserter
from busprobe.gateware.pcie.soft.skp_remover import SkpRemover
from busprobe.protocol.pcie_dll import ack_dllp, frame_dllp, frame_tlp
from busprobe.protocol.pcie_symbols import (
    LOGICAL_IDLE,
    KCode,
    TrainingSet,
    TsKind,
    encode_ts,
)
from busprobe.sim.pcie.symbol.amaranth_bench import simulate


def traffic(rng: random.Random, length: int) -> list[tuple[int, bool]]:
    """(symbol, end) pairs: TLPs up to 528 bytes, DLLPs, TS1s and idle, as a transmitter sends."""
    out: list[tuple[int, bool]] = []
    while len(out) < length:
        choice = rng.random()
        if choice < 0.3:
            unit = frame_tlp(rng.randrange(4096), rng.randbytes(rng.choice((12, 128, 528))))
        elif choice < 0.5:
            unit = frame_dllp(ack_dllp(rng.randrange(4096)))
        elif choice < 0.6:
            unit = encode_ts(TrainingSet(TsKind.TS1))
        else:
            unit = [LOGICAL_IDLE] * rng.randrange(1, 40)
            out += [(s, True) for s in unit]
            continue
        out += [(s, i == len(unit) - 1) for i, s in enumerate(unit)]
    return out


def run_inserter(symbols, *, interval=1200):
    dut = SkpInserter(interval=interval)
    sent: list[int] = []
    starts: list[int] = []

    async def testbench(ctx):
        ctx.set(dut.enable, 1)
        ctx.set(dut.source.ready, 1)
        i = 0
        cycle = 0
        while i < len(symbols):
            symbol, end = symbols[i]
            ctx.set(dut.sink.valid, 1)
            ctx.set(dut.sink.p, {"symbol": symbol, "end": end})
            await ctx.delay(1e-10)
            sent.append(ctx.get(dut.source.p.symbol))
            if ctx.get(dut.inserted):
                starts.append(cycle)
            if ctx.get(dut.sink.ready):
                i += 1
            cycle += 1
            await ctx.tick()

    simulate(dut, testbench)
    return sent, starts


def strip_skp(symbols: list[int]) -> list[int]:
    """The reference remover: drop every COM followed by SKPs, and those SKPs."""
    out, i = [], 0
    while i < len(symbols):
        if symbols[i] == KCode.COM and i + 1 < len(symbols) and symbols[i + 1] == KCode.SKP:
            i += 1
            while i < len(symbols) and symbols[i] == KCode.SKP:
                i += 1
            continue
        out.append(symbols[i])
        i += 1
    return out


def test_on_an_idle_link_a_skp_set_goes_out_every_interval_exactly():
    sent, starts = run_inserter([(LOGICAL_IDLE, True)] * 5000, interval=1180)
    assert len(starts) == 4
    assert {b - a for a, b in zip(starts, starts[1:], strict=False)} == {1180}
    assert sent[starts[0]:starts[0] + 4] == [KCode.COM] + [KCode.SKP] * 3


def test_skp_sets_wait_for_packet_ends_and_nothing_is_lost_or_repeated():
    rng = random.Random(7)
    symbols = traffic(rng, 10_000)
    sent, starts = run_inserter(symbols)
    assert strip_skp(sent) == [s for s, _ in symbols]
    ends = {i for i, (_, end) in enumerate(symbols) if end}
    # Every SKP set follows a symbol marked end: count the sink symbols before each start.
    taken = 0  # sink symbols sent so far (the traffic has no SKP of its own)
    for cycle, symbol in enumerate(sent):
        if cycle in starts:
            assert taken - 1 in ends, cycle
        if symbol != KCode.SKP and cycle not in starts:
            taken += 1
    # On schedule: one set owed per 1200 symbol times, none left behind for long.
    assert len(sent) // 1200 - 1 <= len(starts) <= len(sent) // 1200


def test_an_interval_outside_the_spec_is_refused():
    with pytest.raises(ValueError, match="1180..1538"):
        SkpInserter(interval=2000)


def run_remover(symbols, gaps=()):
    dut = SkpRemover()
    out: list[int] = []
    removed = [0]

    async def testbench(ctx):
        for i, symbol in enumerate([*symbols, LOGICAL_IDLE]):
            ctx.set(dut.sink.valid, i not in gaps)
            ctx.set(dut.sink.p, {"symbol": symbol, "error": 0})
            await ctx.delay(1e-10)
            if ctx.get(dut.source.valid):
                out.append(ctx.get(dut.source.p.symbol))
            removed[0] += ctx.get(dut.removed)
            await ctx.tick()

    simulate(dut, testbench)
    return out, removed[0]


def test_skp_sets_of_one_to_five_skps_are_removed_and_ordered_sets_kept():
    rng = random.Random(8)
    plain = [s for s, _ in traffic(rng, 3000)]
    with_skp: list[int] = []
    inserted = 0
    for s in plain:
        if rng.random() < 0.02:
            with_skp += [KCode.COM] + [KCode.SKP] * rng.randint(1, 5)
            inserted += 1
        with_skp.append(s)
    gaps = {i for i in range(len(with_skp)) if rng.random() < 0.05}
    kept = [s for i, s in enumerate(with_skp) if i not in gaps]
    out, removed = run_remover(with_skp, gaps)
    assert out == strip_skp(kept)
    assert removed == strip_skp_count(kept) and removed >= inserted - len(gaps)


def strip_skp_count(symbols: list[int]) -> int:
    return sum(1 for a, b in zip(symbols, symbols[1:], strict=False)
               if a == KCode.COM and b == KCode.SKP)
