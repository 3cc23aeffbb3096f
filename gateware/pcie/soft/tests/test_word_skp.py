"""SKP ordered sets into words: one word each, on schedule in symbol times counted four a word
sent, only after a word marked end, owed ones back to back, nothing lost or repeated (Amaranth
simulation)."""

import random

import pytest
from busprobe.gateware.pcie.soft.symbol_stream import LANES
from busprobe.gateware.pcie.soft.word_skp_inserter import WordSkpInserter
from busprobe.protocol.pcie_dll import ack_dllp, frame_dllp, frame_tlp
from busprobe.protocol.pcie_symbols import (
    LOGICAL_IDLE,
    SKP_ORDERED_SET,
    TrainingSet,
    TsKind,
    encode_ts,
)
from busprobe.sim.pcie.symbol.amaranth_bench import simulate

IDLE_WORD = ([LOGICAL_IDLE] * LANES, True)


def traffic(rng: random.Random, length: int, *, long: int = 528) -> list[tuple[list[int], bool]]:
    """(word, end) pairs: TLPs up to ``long`` bytes, DLLPs, TS1s and idle words, as the word
    transmitter sends them (every structure whole words)."""
    out: list[tuple[list[int], bool]] = []
    while len(out) < length:
        choice = rng.random()
        if choice < 0.3:
            unit = frame_tlp(rng.randrange(4096), rng.randbytes(rng.choice((12, 128, long))))
        elif choice < 0.5:
            unit = frame_dllp(ack_dllp(rng.randrange(4096)))
        elif choice < 0.6:
            unit = encode_ts(TrainingSet(TsKind.TS1))
        else:
            out += [IDLE_WORD] * rng.randrange(1, 10)
            continue
        words = [unit[i:i + LANES] for i in range(0, len(unit), LANES)]
        out += [(word, i == len(words) - 1) for i, word in enumerate(words)]
    return out


def run_inserter(words, *, interval=1200, pace=1, enable=lambda cycle: True):
    """Feed ``words``; the SerDes takes one every ``pace`` clocks. Returns the words sent and
    the index (among them) of each SKP set ``inserted`` flagged."""
    dut = WordSkpInserter(interval=interval)
    sent: list[list[int]] = []
    starts: list[int] = []

    async def testbench(ctx):
        i = cycle = 0
        while i < len(words):
            word, end = words[i]
            ctx.set(dut.enable, enable(cycle))
            ctx.set(dut.source.ready, cycle % pace == 0)
            ctx.set(dut.sink.valid, 1)
            ctx.set(dut.sink.p, {"symbols": word, "end": end})
            await ctx.delay(1e-10)
            if ctx.get(dut.source.ready):
                assert ctx.get(dut.source.valid)
                if ctx.get(dut.inserted):
                    starts.append(len(sent))
                sent.append([int(s) for s in ctx.get(dut.source.p.symbols)])
            else:
                assert not ctx.get(dut.inserted)
            if ctx.get(dut.sink.ready):
                i += 1
            cycle += 1
            await ctx.tick()

    simulate(dut, testbench)
    return sent, starts


def strip_skp(words: list[list[int]]) -> list[list[int]]:
    return [word for word in words if word != list(SKP_ORDERED_SET)]


@pytest.mark.parametrize("pace", [1, 2])
def test_on_an_idle_link_a_skp_set_goes_out_every_interval_exactly(pace):
    # At Gen1 (pace 2) a word is taken every other clock: the interval is in words sent.
    sent, starts = run_inserter([IDLE_WORD] * 1300, interval=1180, pace=pace)
    assert len(starts) == 4
    assert {LANES * (b - a) for a, b in zip(starts, starts[1:], strict=False)} == {1180}
    assert [i for i, word in enumerate(sent) if word == list(SKP_ORDERED_SET)] == starts


def test_skp_sets_wait_for_packet_ends_and_nothing_is_lost_or_repeated():
    rng = random.Random(7)
    words = traffic(rng, 4000)
    sent, starts = run_inserter(words)
    assert strip_skp(sent) == [word for word, _ in words]
    # Every SKP set follows a word marked end (or another SKP set).
    taken = 0  # sink words sent so far
    for index in range(len(sent)):
        if index in starts:
            assert taken == 0 or words[taken - 1][1], index
        else:
            taken += 1
    # On schedule: one set owed per 300 words, none left behind for long.
    assert len(sent) // 300 - 1 <= len(starts) <= len(sent) // 300


def test_sets_owed_across_a_long_tlp_go_out_back_to_back_after_its_end():
    # A 4 KiB TLP is 1026 words: three intervals of 295 words pass while it is on the wire.
    tlp = frame_tlp(1, bytes(4096))
    words = [IDLE_WORD] * 10 + [(tlp[i:i + LANES], i == len(tlp) - LANES)
                                for i in range(0, len(tlp), LANES)] + [IDLE_WORD] * 10
    sent, starts = run_inserter(words, interval=1180)
    end = 10 + len(tlp) // LANES
    assert starts == [end, end + 1, end + 2]
    assert strip_skp(sent) == [word for word, _ in words]


def test_disabled_it_schedules_nothing_and_forgets_what_was_owed():
    tlp = frame_tlp(1, bytes(4096))
    words = [(tlp[i:i + LANES], i == len(tlp) - LANES) for i in range(0, len(tlp), LANES)]
    words += [IDLE_WORD] * 300
    # Enabled through the TLP (three sets owed), disabled as it ends.
    sent, starts = run_inserter(words, interval=1180, enable=lambda cycle: cycle < 1020)
    assert starts == [] and sent == [word for word, _ in words]


def test_an_interval_outside_the_spec_or_not_whole_words_is_refused():
    with pytest.raises(ValueError, match="1180..1538"):
        WordSkpInserter(interval=2000)
    with pytest.raises(ValueError, match="whole number"):
        WordSkpInserter(interval=1182)
