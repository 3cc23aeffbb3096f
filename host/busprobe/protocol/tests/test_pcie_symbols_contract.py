"""The PCIe symbol-level contract: K-codes, ordered sets, LCRC, DLLP CRC and framing, checked
against the spec's values, DLLPs a real root port sent, and cocotbext-pcie's own DLLP code."""

import random

import pytest
from busprobe.protocol.pcie_dll import (
    DllpType,
    FramedPacket,
    ack_dllp,
    deframe,
    dllp_crc,
    fc_dllp,
    frame_dllp,
    frame_tlp,
    lcrc,
    lcrc_bitwise,
    nak_dllp,
)
from busprobe.protocol.pcie_symbols import (
    K_FLAG,
    TS1_ID_INVERTED,
    TS2_ID_INVERTED,
    KCode,
    TrainingControl,
    TrainingSet,
    TsKind,
    decode_ts,
    encode_ts,
    symbol_name,
)
from cocotbext.pcie.core.dllp import Dllp
from cocotbext.pcie.core.dllp import DllpType as UpstreamDllpType
from cocotbext.pcie.core.tlp import Tlp, TlpType


def test_k_codes_have_the_byte_values_of_table_4_1():
    bytes_of = {code.name: code & 0xFF for code in KCode}
    assert bytes_of == {"COM": 0xBC, "STP": 0xFB, "SDP": 0x5C, "END": 0xFD, "EDB": 0xFE,
                        "PAD": 0xF7, "SKP": 0x1C, "FTS": 0x3C, "IDL": 0x7C, "EIE": 0xFC}
    assert all(code & K_FLAG for code in KCode)
    assert symbol_name(0x4A) == "D10.2" and symbol_name(K_FLAG | 0x9C) == "K28.4"
    # D10.2 = 010101 0101 and D5.2 = 101001 0101 complemented: 101010 1010 (D21.5) and
    # 010110 1010 (D26.5), what a lane with inverted polarity delivers.
    assert (symbol_name(TS1_ID_INVERTED), symbol_name(TS2_ID_INVERTED)) == ("D21.5", "D26.5")


def test_dllp_types_are_cocotbext_pcies():
    upstream = {t.name: t.value for t in UpstreamDllpType}
    renamed = {"PM_ACTIVE_STATE_REQUEST_L1": "PM_ACT_ST_REQ_L1", "PM_REQUEST_ACK": "PM_REQ_ACK",
               "VENDOR": "VEND"}
    for t in DllpType:
        assert upstream[renamed.get(t.name, t.name)] == t.value, t.name


@pytest.mark.parametrize("wire", [
    # InitFC1-NP and InitFC1-P as a ROCKPro64 root port sent them (ECP5-PCIe, Tests/sim_dllp.py)
    bytes([0x50, 0x08, 0x00, 0x20, 0x12, 0xD9]),
    bytes([0x40, 0x08, 0x00, 0xE0, 0xF5, 0x06]),
])
def test_dllp_crc_matches_dllps_a_real_root_port_sent(wire):
    assert dllp_crc(wire[:4]) == wire[4:]


def test_fc_dllps_pack_the_credits_a_real_root_port_sent():
    assert fc_dllp(DllpType.INIT_FC1_NP, 32, 32) == bytes([0x50, 0x08, 0x00, 0x20])
    assert fc_dllp(DllpType.INIT_FC1_P, 32, 224) == bytes([0x40, 0x08, 0x00, 0xE0])


def test_dllps_and_their_crc_are_byte_for_byte_cocotbext_pcies():
    rng = random.Random(1)
    for _ in range(50):
        seq = rng.randrange(4096)
        assert ack_dllp(seq) + dllp_crc(ack_dllp(seq)) == Dllp.create_ack(seq).pack_crc()
        assert nak_dllp(seq) + dllp_crc(nak_dllp(seq)) == Dllp.create_nak(seq).pack_crc()
        upstream = Dllp()
        upstream.type = UpstreamDllpType.UPDATE_FC_CPL
        upstream.hdr_fc, upstream.data_fc = rng.randrange(256), rng.randrange(4096)
        ours = fc_dllp(DllpType.UPDATE_FC_CPL, upstream.hdr_fc, upstream.data_fc)
        assert ours + dllp_crc(ours) == upstream.pack_crc()


def test_lcrc_is_the_spec_bit_serial_procedure():
    rng = random.Random(2)
    for length in (12, 16, 20, 100, 528):
        tlp = rng.randbytes(length)
        seq = rng.randrange(4096)
        assert lcrc(seq, tlp) == lcrc_bitwise(seq, tlp)


def test_lcrc_covers_the_sequence_number():
    tlp = bytes(16)
    assert lcrc(1, tlp) != lcrc(2, tlp)


def test_a_tlp_frames_and_deframes_as_good():
    tlp = Tlp()
    tlp.fmt_type = TlpType.MEM_WRITE
    tlp.set_addr_be_data(0x1000, bytes(range(64)))
    wire = frame_tlp(4095, tlp.pack())
    assert wire[0] == KCode.STP and wire[-1] == KCode.END
    assert wire[1:3] == [0x0F, 0xFF]
    assert len(wire) == 1 + 2 + len(tlp.pack()) + 4 + 1
    assert deframe(wire) == [FramedPacket("tlp", "good", 4095, tlp.pack())]


def test_a_nullified_tlp_has_edb_and_the_inverted_lcrc():
    wire = frame_tlp(7, bytes(12), nullified=True)
    assert wire[-1] == KCode.EDB
    assert bytes(wire[-5:-1]) == bytes(b ^ 0xFF for b in lcrc(7, bytes(12)))
    assert deframe(wire)[0].status == "nullified"


def test_deframe_judges_corruption_and_bad_framing():
    good_dllp = frame_dllp(ack_dllp(3))
    flipped = list(good_dllp)
    flipped[2] ^= 0x01
    bad_tlp = frame_tlp(9, bytes(16))
    bad_tlp[5] ^= 0x80
    cut = frame_tlp(10, bytes(16))[:-1] + [KCode.SDP]  # END lost: the next start cuts it
    stream = [0] * 3 + good_dllp + flipped + bad_tlp + cut + good_dllp[1:] + [0]
    assert [(p.kind, p.status) for p in deframe(stream)] == [
        ("dllp", "good"), ("dllp", "bad_crc"), ("tlp", "bad_crc"), ("tlp", "malformed"),
        ("dllp", "good")]


def test_training_sets_round_trip_and_pad_unassigned_fields():
    ts1 = TrainingSet(TsKind.TS1)
    symbols = encode_ts(ts1)
    assert symbols[:3] == [KCode.COM, KCode.PAD, KCode.PAD] and symbols[6:] == [0x4A] * 10
    assert decode_ts(symbols) == ts1
    ts2 = TrainingSet(TsKind.TS2, link=0, lane=0, n_fts=40,
                      control=TrainingControl.COMPLIANCE_RECEIVE)
    assert encode_ts(ts2)[6:] == [0x45] * 10
    assert decode_ts(encode_ts(ts2)) == ts2


def test_a_damaged_training_set_is_not_decoded():
    symbols = encode_ts(TrainingSet(TsKind.TS1))
    for index, bad in ((0, 0xBC), (9, 0x45), (1, KCode.SKP), (4, KCode.COM)):
        damaged = list(symbols)
        damaged[index] = bad
        assert decode_ts(damaged) is None, index
