"""The receive aligner (Amaranth simulation): a transmitter's structures, started at any symbol,
with idle runs of any length and SKP ordered sets of 1 to 5 SKPs, come out whole and in order,
every one starting in lane 0, with nothing but idle and SKP sets gone."""

import random

import pytest
from busprobe.gateware.pcie.soft.receive_aligner import START_SYMBOLS, ReceiveAligner
from busprobe.protocol.pcie_dll import ack_dllp, frame_dllp, frame_tlp
from busprobe.protocol.pcie_symbols import EIOS, LOGICAL_IDLE, KCode, TrainingSet, TsKind, encode_ts
from busprobe.sim.pcie.symbol.amaranth_bench import simulate

#: Where ``run`` puts a symbol's error flag in the words it returns.
ERROR_BIT = 9


def structures(rng: random.Random, count: int) -> list[list[int]]:
    """What a transmitter sends: TLPs, DLLPs, TS1s, EIOSs, idle runs and SKP sets (1-5 SKP)."""
    out = []
    for _ in range(count):
        choice = rng.random()
        if choice < 0.3:
            out.append(frame_tlp(rng.randrange(4096), rng.randbytes(4 * rng.randrange(3, 20))))
        elif choice < 0.45:
            out.append(frame_dllp(ack_dllp(rng.randrange(4096))))
        elif choice < 0.5:
            out.append(encode_ts(TrainingSet(TsKind.TS1)))
        elif choice < 0.55:
            out.append(list(EIOS))
        elif choice < 0.7:
            out.append([KCode.COM] + [KCode.SKP] * rng.randrange(1, 6))
        else:
            out.append([LOGICAL_IDLE] * rng.randrange(0, 9))
    return out


def run(symbols: list[int], *, width: int = 4, gaps: float = 0.0, seed: int = 0,
        errors: frozenset[int] = frozenset()) -> tuple[list[list[int]], dict]:
    """The words out (symbols, with an error flag at :data:`ERROR_BIT`) and the counters, for
    ``symbols`` fed ``width`` a word (a word skipped with probability ``gaps``; ``errors``:
    indices flagged)."""
    rng = random.Random(seed)
    dut = ReceiveAligner(width=width)
    padded = symbols + [LOGICAL_IDLE] * (3 * width - len(symbols) % width)
    words = [padded[i:i + width] for i in range(0, len(padded), width)]
    out: list[list[int]] = []
    counts = {"skp_removed": 0, "realigned": 0}

    async def main(ctx):
        index = 0
        while index < len(words):
            if rng.random() < gaps:
                ctx.set(dut.sink.valid, 0)
            else:
                ctx.set(dut.sink.valid, 1)
                for lane, symbol in enumerate(words[index]):
                    ctx.set(dut.sink.p[lane].symbol, symbol)
                    ctx.set(dut.sink.p[lane].error, width * index + lane in errors)
                index += 1
            await ctx.tick()
        ctx.set(dut.sink.valid, 0)
        await ctx.tick().repeat(4)
        counts["realigned"] = ctx.get(dut.realigned)

    async def collect(ctx):
        async for _, _, valid, word, removed in ctx.tick().sample(
                dut.source.valid, dut.source.p, dut.skp_removed):
            counts["skp_removed"] += removed
            if valid:
                out.append([word[lane].symbol | word[lane].error << ERROR_BIT
                            for lane in range(width)])

    simulate(dut, main, collect)
    return out, counts


def flatten(words: list[list[int]]) -> list[int]:
    return [symbol for word in words for symbol in word]


def assert_structures_whole(got: list[int], units: list[list[int]]) -> None:
    """Every unit that is not idle or a SKP set is in ``got`` exactly, in order, with nothing
    but logical idle between them."""
    expected = [unit for unit in units if unit and unit[-1] != KCode.SKP
                and set(unit) != {LOGICAL_IDLE}]
    at = 0
    for unit in expected:
        while got[at] == LOGICAL_IDLE:
            at += 1
        assert got[at:at + len(unit)] == unit, (at, unit)
        at += len(unit)
    assert set(got[at:]) <= {LOGICAL_IDLE}


@pytest.mark.parametrize("width", [2, 4])
def test_structures_started_anywhere_come_out_whole_in_order_each_in_lane_0(width):
    rng = random.Random(width)
    units = structures(rng, 120)
    words, counts = run(flatten(units), width=width, gaps=0.3, seed=width)
    got = flatten(words)
    for word in words:
        assert not any(symbol in START_SYMBOLS for symbol in word[1:]), word
    assert_structures_whole(got, units)
    assert KCode.SKP not in got
    assert counts["realigned"] == 0
    assert counts["skp_removed"] > 0


def test_back_to_back_structures_keep_every_symbol_once_aligned():
    # Aligned already: nothing between them, and nothing is dropped (not even an idle).
    units = [frame_dllp(ack_dllp(7)), frame_tlp(1, bytes(range(16))), list(EIOS),
             [LOGICAL_IDLE] * 4, frame_tlp(2, bytes(range(32)))]
    words, counts = run(flatten(units))
    assert flatten(words)[:len(flatten(units))] == flatten(units)
    assert counts["realigned"] == 0


def test_an_odd_idle_run_before_a_packet_is_what_goes():
    units = [frame_dllp(ack_dllp(1)), [LOGICAL_IDLE] * 3, frame_tlp(5, bytes(range(12)))]
    words, _ = run(flatten(units))
    assert flatten(words)[:8] == units[0]
    assert words[2][0] == KCode.STP and flatten(words[2:])[:len(units[2])] == units[2]


def test_a_structure_cut_short_by_a_received_error_is_counted_and_the_next_one_aligned():
    # A DLLP missing its last two symbols (lost to errors): the next STP lands off lane 0;
    # the DLLP's remaining tail is dropped and counted, the TLP comes out whole in lane 0.
    dllp = frame_dllp(ack_dllp(3))[:-2]
    tlp = frame_tlp(9, bytes(range(20)))
    words, counts = run([*dllp, *tlp])
    assert counts["realigned"] == len(dllp) % 4
    starts = [i for i, word in enumerate(words) if word[0] == KCode.STP]
    assert starts and flatten(words[starts[0]:])[:len(tlp)] == tlp


def test_a_com_before_a_skp_in_the_next_word_goes_with_it():
    units = [[LOGICAL_IDLE] * 3, [KCode.COM, KCode.SKP, KCode.SKP], frame_dllp(ack_dllp(2))]
    words, counts = run(flatten(units))
    got = flatten(words)
    assert KCode.COM not in got and got[:8] == units[2]
    assert counts["skp_removed"] >= 1


@pytest.mark.parametrize("width", [2, 4])
def test_random_symbols_never_put_a_start_symbol_off_lane_0(width):
    rng = random.Random(99 + width)
    alphabet = [*START_SYMBOLS, KCode.SKP, KCode.END, LOGICAL_IDLE, 0x12, 0x34]
    symbols = [rng.choice(alphabet) for _ in range(1000)]
    words, _ = run(symbols, width=width, gaps=0.5, seed=width,
                   errors=frozenset(rng.sample(range(1000), 50)))
    assert words
    for word in words:
        # A start symbol received with an error is no start: it may be anywhere.
        assert not any(symbol in START_SYMBOLS for symbol in word[1:]), word
