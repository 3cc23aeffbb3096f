"""The training-set receiver decodes what :func:`encode_ts` sends and nothing damaged
(Amaranth simulation), and flags logical idle and EIOS."""

from busprobe.gateware.pcie.soft.ts_receiver import TrainingSetReceiver
from busprobe.protocol.pcie_symbols import (
    EIOS,
    LOGICAL_IDLE,
    TS2_ID_INVERTED,
    KCode,
    TrainingControl,
    TrainingSet,
    TsKind,
    encode_ts,
)
from busprobe.sim.pcie.symbol.amaranth_bench import simulate


def receive(symbols, errors=()):
    dut = TrainingSetReceiver()
    found: list[TrainingSet] = []
    flags = {"idle": 0, "eios": 0, "inverted": 0}

    async def testbench(ctx):
        for i, symbol in enumerate(symbols):
            ctx.set(dut.sink.valid, 1)
            ctx.set(dut.sink.p, {"symbol": symbol, "error": i in errors})
            if ctx.get(dut.ts_valid):
                ts = ctx.get(dut.ts)
                found.append(TrainingSet(
                    TsKind(ts.kind), None if ts.link_pad else ts.link,
                    None if ts.lane_pad else ts.lane, ts.n_fts, ts.rate,
                    TrainingControl(ts.control)))
            flags["idle"] += ctx.get(dut.idle)
            flags["eios"] += ctx.get(dut.eios)
            flags["inverted"] += ctx.get(dut.inverted_ts)
            await ctx.tick()

    simulate(dut, testbench)
    return found, flags


def test_training_sets_are_decoded_field_for_field():
    sets = [TrainingSet(TsKind.TS1), TrainingSet(TsKind.TS2),
            TrainingSet(TsKind.TS1, link=7, lane=None, n_fts=40),
            TrainingSet(TsKind.TS2, link=7, lane=0, control=TrainingControl.COMPLIANCE_RECEIVE)]
    symbols = [s for ts in sets for s in encode_ts(ts)] + [LOGICAL_IDLE]
    found, _ = receive(symbols)
    assert found == sets


def test_damaged_or_cut_training_sets_are_not_decoded():
    good = encode_ts(TrainingSet(TsKind.TS1, link=3, lane=0))
    wrong_id = list(good)
    wrong_id[12] = 0x45  # a TS2 identifier among TS1 identifiers
    k_in_field = list(good)
    k_in_field[3] = KCode.SKP
    cut = good[:9] + good  # a COM inside a TS starts over: the second one counts
    symbols = wrong_id + k_in_field + cut + good + [LOGICAL_IDLE]
    error_at = len(wrong_id) + len(k_in_field) + len(cut) + 4
    found, _ = receive(symbols, errors={error_at})
    assert found == [TrainingSet(TsKind.TS1, link=3, lane=0)]


def test_idle_symbols_and_eios_are_flagged_outside_ordered_sets():
    ts = encode_ts(TrainingSet(TsKind.TS1, link=0, lane=0))
    symbols = [LOGICAL_IDLE] * 5 + list(EIOS) + ts + [LOGICAL_IDLE] * 3 + [1]
    _, flags = receive(symbols)
    assert flags == {"idle": 8, "eios": 1, "inverted": 0}


def test_a_training_set_from_an_inverted_lane_is_flagged_not_decoded():
    ts2 = encode_ts(TrainingSet(TsKind.TS2))
    inverted = [KCode.COM, KCode.PAD, KCode.PAD, 0x11, 0x22, 0x33] + [TS2_ID_INVERTED] * 10
    mixed = inverted[:10] + [0x45] * 6  # not all inverted: neither
    symbols = inverted + mixed + ts2 + [LOGICAL_IDLE]
    found, flags = receive(symbols, errors={3, 4, 5})  # its other fields decode to errors
    assert flags["inverted"] == 1 and found == [TrainingSet(TsKind.TS2)]
