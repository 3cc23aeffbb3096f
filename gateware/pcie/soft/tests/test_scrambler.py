"""The PHY's scrambler, two symbols a clock, against the reference (Amaranth simulation).

The streams mix what a link carries (TSs, SKP sets of 1 to 5 SKPs, TLPs, DLLPs, idle) with what
it should not (stray K codes, COM and PAD among them, and the decoder's error symbol) so that
every rule of :mod:`busprobe.protocol.pcie_scrambler` is exercised at both positions of a word.
"""

import random

from amaranth import Module
from amaranth.lib import wiring
from busprobe.gateware.pcie.soft.scrambler import Scrambler
from busprobe.gateware.pcie.soft.word_gearbox import DECODE_ERROR
from busprobe.protocol.pcie_dll import frame_dllp, frame_tlp, nak_dllp
from busprobe.protocol.pcie_scrambler import scramble
from busprobe.protocol.pcie_symbols import (
    COMPLIANCE_PATTERN,
    EIOS,
    LOGICAL_IDLE,
    KCode,
    TrainingSet,
    TsKind,
    encode_ts,
)
from busprobe.sim.pcie.symbol.amaranth_bench import simulate


def link_stream(rng: random.Random, length: int) -> list[int]:
    out: list[int] = []
    while len(out) < length:
        pick = rng.random()
        if pick < 0.15:
            out += encode_ts(TrainingSet(rng.choice(list(TsKind)), rng.choice((None, 9)),
                                         rng.choice((None, 0)), n_fts=rng.randrange(256)))
        elif pick < 0.25:
            out += [KCode.COM] + [KCode.SKP] * rng.randrange(1, 6)
        elif pick < 0.4:
            out += frame_tlp(rng.randrange(4096), rng.randbytes(rng.randrange(1, 33) * 4))
        elif pick < 0.45:
            out += frame_dllp(nak_dllp(rng.randrange(4096)))
        elif pick < 0.5:
            out += rng.choice((list(EIOS), list(COMPLIANCE_PATTERN)))
        elif pick < 0.6:
            out.append(rng.choice([*KCode, DECODE_ERROR]))
        elif pick < 0.8:
            out += [LOGICAL_IDLE] * rng.randrange(1, 30)
        else:
            out += [rng.randrange(256) for _ in range(rng.randrange(1, 30))]
    return out[:length]


def run(dut_out, dut_in, words, *, gaps: float, seed: int):
    """A testbench feeding ``words`` (lists of two symbols) to ``dut_in`` with idle clocks at
    rate ``gaps``, and the list it fills with every valid word ``dut_out`` produces."""
    rng = random.Random(seed)
    got: list[list[int]] = []

    async def testbench(ctx):
        pending = list(words)
        while pending or len(got) < len(words):
            feed = bool(pending) and rng.random() >= gaps
            if feed:
                word = pending.pop(0)
                ctx.set(dut_in.sink.p.symbols, word)
                ctx.set(dut_in.sink.p.extra, len(pending) & 1)
            else:  # garbage in the symbols of an invalid word must not matter
                ctx.set(dut_in.sink.p.symbols, [KCode.COM, rng.randrange(512)])
            ctx.set(dut_in.sink.valid, feed)
            _, _, valid, symbols = await ctx.tick().sample(dut_out.source.valid,
                                                           dut_out.source.p.symbols)
            if valid:
                got.append([int(s) for s in symbols])

    return got, testbench


def pairs(symbols: list[int]) -> list[list[int]]:
    return [symbols[i:i + 2] for i in range(0, len(symbols), 2)]


def test_the_scrambler_equals_the_reference_on_random_link_streams_at_both_word_phases():
    for seed in (1, 2):
        rng = random.Random(seed)
        stream = link_stream(rng, 3000)
        for phase in (0, 1):  # every COM, SKP and TS lands in the other half the second time
            symbols = [LOGICAL_IDLE] * phase + stream
            symbols += [LOGICAL_IDLE] * (len(symbols) % 2)
            dut = Scrambler(width=2, extra=1)
            got, testbench = run(dut, dut, pairs(symbols), gaps=0.2, seed=seed)
            simulate(dut, testbench)
            assert sum(got, []) == scramble(symbols), (seed, phase)


def test_scrambler_then_descrambler_gives_the_stream_back():
    rng = random.Random(7)
    symbols = link_stream(rng, 3000)
    m = Module()
    m.submodules.tx = tx = Scrambler(width=2, extra=1)
    m.submodules.rx = rx = Scrambler(width=2, extra=1)
    wiring.connect(m, tx.source, rx.sink)
    got, testbench = run(rx, tx, pairs(symbols), gaps=0.3, seed=3)
    simulate(m, testbench)
    assert sum(got, []) == symbols
