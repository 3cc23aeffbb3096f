"""The word-wide training-set receiver decodes what :func:`encode_ts` sends, four symbols a
word, and nothing damaged (Amaranth simulation); it flags idle words, EIOS and inverted TSs."""

from busprobe.gateware.pcie.soft.symbol_stream import LANES
from busprobe.gateware.pcie.soft.word_ts_receiver import WordTsReceiver
from busprobe.protocol.pcie_symbols import (
    EIOS,
    LOGICAL_IDLE,
    TS1_ID_INVERTED,
    TS2_ID,
    KCode,
    TrainingControl,
    TrainingSet,
    TsKind,
    encode_ts,
)
from busprobe.sim.pcie.symbol.amaranth_bench import simulate

IDLE_WORD = [LOGICAL_IDLE] * LANES


def receive(symbols: list[int], errors: frozenset[int] = frozenset()):
    assert len(symbols) % LANES == 0
    dut = WordTsReceiver()
    found: list[TrainingSet] = []
    flags = {"idle": 0, "not_idle": 0, "eios": 0, "inverted": 0}

    async def testbench(ctx):
        for index in range(0, len(symbols), LANES):
            # A clock without a word between words: nothing may count then.
            for valid in (1, 0):
                ctx.set(dut.sink.valid, valid)
                for lane in range(LANES):
                    ctx.set(dut.sink.p[lane].symbol, symbols[index + lane])
                    ctx.set(dut.sink.p[lane].error, index + lane in errors)
                if ctx.get(dut.ts_valid):
                    ts = ctx.get(dut.ts)
                    found.append(TrainingSet(
                        TsKind(ts.kind), None if ts.link_pad else ts.link,
                        None if ts.lane_pad else ts.lane, ts.n_fts, ts.rate,
                        TrainingControl(ts.control)))
                flags["idle"] += ctx.get(dut.idle)
                flags["not_idle"] += ctx.get(dut.not_idle)
                flags["eios"] += ctx.get(dut.eios)
                flags["inverted"] += ctx.get(dut.inverted_ts)
                await ctx.tick()

    simulate(dut, testbench)
    return found, flags


def test_training_sets_are_decoded_field_for_field():
    sets = [TrainingSet(TsKind.TS1), TrainingSet(TsKind.TS2),
            TrainingSet(TsKind.TS1, link=7, lane=None, n_fts=40),
            TrainingSet(TsKind.TS2, link=7, lane=0, control=TrainingControl.COMPLIANCE_RECEIVE)]
    found, flags = receive([s for ts in sets for s in encode_ts(ts)] + IDLE_WORD)
    assert found == sets
    assert flags["idle"] == 1 and flags["inverted"] == 0


def test_damaged_or_cut_training_sets_are_not_decoded():
    good = encode_ts(TrainingSet(TsKind.TS1, link=3, lane=0))
    wrong_id = list(good)
    wrong_id[12] = TS2_ID  # a TS2 identifier among TS1 identifiers
    k_in_field = list(good)
    k_in_field[3] = KCode.SKP
    cut = good[:8] + good  # a COM inside a TS starts over: the second one counts
    with_error = list(good)
    symbols = wrong_id + k_in_field + cut + with_error + good + IDLE_WORD
    error_at = len(wrong_id) + len(k_in_field) + len(cut) + 4
    found, _ = receive(symbols, errors=frozenset({error_at}))
    assert found == [TrainingSet(TsKind.TS1, link=3, lane=0)] * 2


def test_idle_words_eios_and_inverted_training_sets_are_flagged():
    inverted = [KCode.COM, KCode.PAD, KCode.PAD, 0x1C, 0x02, 0x00] + [TS1_ID_INVERTED] * 10
    half_idle = [LOGICAL_IDLE, LOGICAL_IDLE, 0x01, LOGICAL_IDLE]
    symbols = IDLE_WORD * 3 + list(EIOS) + inverted + half_idle + IDLE_WORD
    found, flags = receive(symbols)
    assert found == []
    assert flags == {"idle": 4, "not_idle": 1 + 4 + 1, "eios": 1, "inverted": 1}
