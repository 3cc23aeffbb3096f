"""The 8b/10b scrambler's reference (§4.2.1.3), against the specification's Appendix C tables.

The two tables are those of the PCI Express Base Specification 2.1, Appendix C (p. 698-700): the
LFSR's value after each advance from a reset, and 00h scrambled repeatedly after a reset. They
are copied here from two public transcriptions that agree: the README of
baselkelziye/PCIe_Scrambler (all 128 LFSR values and 0x130 scrambled bytes) and the header of
hamsternz/FPGA_DisplayPort's scrambler.vhd (the first 32 bytes, "verified against the table in
Appendix C of the PCI Express Base Specification 2.1"); 64 bytes and 32 values are used.
"""

import random

from busprobe.protocol.pcie_dll import frame_dllp, frame_tlp, nak_dllp
from busprobe.protocol.pcie_scrambler import (
    SEED,
    Scrambler,
    lfsr_advance,
    scramble,
    scramble_key,
)
from busprobe.protocol.pcie_symbols import (
    COMPLIANCE_PATTERN,
    EIOS,
    LOGICAL_IDLE,
    SKP_ORDERED_SET,
    KCode,
    TrainingSet,
    TsKind,
    encode_ts,
    is_k,
)

ZERO_SCRAMBLED = bytes.fromhex(
    "FF17C014B2E70282726E28A6BE6DBF8D" "BE40A7E62CD3E2B20702772ACD34BEE0"
    "A75D24B19BA1BD22D4451DD3D7EA76EE" "2CDA1AFA282D363B3A0E6F67CF064C26")
LFSR_VALUES = [int(v, 16) for v in (
    "FFFF E817 0328 284B 4DE8 E755 404F 4140 4E79 761E 1466 6574 7DBD B6E5 FDA6 B165 "
    "7D09 02E5 E572 673D 34CF CB54 4743 4DEF E055 40E0 EE40 54BE B334 2C7B 7D0C 07E5").split()]


def test_zeros_after_a_reset_and_after_a_skp_set_scramble_to_the_specifications_table():
    assert bytes(scramble([LOGICAL_IDLE] * len(ZERO_SCRAMBLED))) == ZERO_SCRAMBLED
    # On a link, data follows a COM only after an ordered set: here the SKP set's.
    out = scramble([*SKP_ORDERED_SET] + [LOGICAL_IDLE] * len(ZERO_SCRAMBLED))
    assert out[:4] == list(SKP_ORDERED_SET) and bytes(out[4:]) == ZERO_SCRAMBLED


def test_the_lfsr_after_each_advance_is_the_specifications_table():
    state, values = SEED, []
    for _ in LFSR_VALUES:
        values.append(state)
        state = lfsr_advance(state)
    assert values == LFSR_VALUES
    assert [scramble_key(v) for v in LFSR_VALUES] == list(ZERO_SCRAMBLED[:len(LFSR_VALUES)])


def test_skp_does_not_advance_the_lfsr_and_k_codes_advance_it_unscrambled():
    keys = ZERO_SCRAMBLED
    # A SKP ordered set leaves the LFSR at the seed: the next data symbol takes key 0.
    assert scramble([*SKP_ORDERED_SET, 0, 0]) == [*SKP_ORDERED_SET, keys[0], keys[1]]
    # A SKP anywhere is not a symbol time for the LFSR (nor for a TS's unscrambled count).
    assert scramble([*SKP_ORDERED_SET, 0, KCode.SKP, KCode.SKP, 0])[4:] == [
        keys[0], KCode.SKP, KCode.SKP, keys[1]]
    # Other K codes go out as they are but take their key's turn.
    tlp = frame_tlp(5, bytes(12))
    out = scramble([*SKP_ORDERED_SET, *tlp])[4:]
    assert [s for s in out if is_k(s)] == [KCode.STP, KCode.END]
    assert out[1:-1] == [s ^ k for s, k in zip(tlp[1:-1], keys[1:], strict=False)]


def test_training_sets_and_the_compliance_pattern_go_unscrambled_and_what_follows_does_not():
    for ts in (TrainingSet(TsKind.TS1), TrainingSet(TsKind.TS2, link=5, lane=0, n_fts=7)):
        symbols = encode_ts(ts)
        # Data after the TS: its COM reset the LFSR and the TS's 15 symbols advanced it.
        out = scramble(symbols + [LOGICAL_IDLE] * 3)
        assert out[:16] == symbols and bytes(out[16:]) == ZERO_SCRAMBLED[15:18]
    assert scramble(list(COMPLIANCE_PATTERN) * 4) == list(COMPLIANCE_PATTERN) * 4
    # An EIOS and a SKP set are all K codes: idle right after them is scrambled from key 3 / 0.
    assert bytes(scramble([*EIOS, 0])[4:]) == ZERO_SCRAMBLED[3:4]


def test_a_packet_right_after_a_skp_set_is_scrambled_whole():
    """The TS rule is keyed on symbol 1: a SKP there (a SKP set) opens no unscrambled window."""
    dllp = frame_dllp(nak_dllp(17))
    out = scramble([*SKP_ORDERED_SET, *dllp])[4:]
    assert out[1:-1] == [s ^ k for s, k in zip(dllp[1:-1], ZERO_SCRAMBLED[1:], strict=False)]


def _random_stream(rng: random.Random, length: int) -> list[int]:
    out: list[int] = []
    while len(out) < length:
        pick = rng.random()
        if pick < 0.1:
            out += encode_ts(TrainingSet(rng.choice(list(TsKind)), rng.choice((None, 3)),
                                         rng.choice((None, 0))))
        elif pick < 0.2:
            out += [KCode.COM] + [KCode.SKP] * rng.randrange(1, 6)
        elif pick < 0.4:
            out += frame_tlp(rng.randrange(4096), rng.randbytes(rng.randrange(1, 9) * 4))
        elif pick < 0.5:
            out.append(rng.choice(list(KCode)))  # a stray K code anywhere, COM included
        else:
            out += [rng.randrange(256) for _ in range(rng.randrange(1, 20))]
    return out[:length]


def test_descrambling_is_the_same_operation_and_resynchronises_at_the_first_com():
    rng = random.Random(45)
    stream = _random_stream(rng, 20_000)
    assert scramble(scramble(stream)) == stream
    # A receiver that starts in the middle (any LFSR state) is right from the first COM on.
    receiver = Scrambler()
    receiver.state, receiver.unscrambled = 0x1234, 3
    wire = scramble(stream)
    start = wire.index(KCode.COM, 100)
    assert scramble(wire[100:], receiver)[start - 100:] == stream[start:]
