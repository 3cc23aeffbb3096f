"""USB 2.0 HS line-time arithmetic against the spec's known answers."""

from __future__ import annotations

import pytest
from busprobe.protocol import usb2_wire as wire
from busprobe.protocol.usb2_wire import Pid


def test_token_crc5_matches_known_packets():
    # USB 2.0 §8.3.5.1 / LUNA's reference vectors: SETUP addr 0 ep 0 = 2D 00 10.
    assert wire.token_bytes(Pid.SETUP, 0, 0).hex() == "2d0010"
    assert wire.token_bytes(Pid.IN, 92, 0)[2] >> 3 == 0x1C
    assert wire.token_bytes(Pid.IN, 3, 0)[2] >> 3 == 0x0A
    assert wire.token_bytes(Pid.IN, 56, 4)[2] >> 3 == 0x0B


def test_crc16_is_crc16_usb_and_leaves_the_residue():
    assert wire.crc16(b"123456789") == 0xB4C8  # the CRC catalogue's check value
    assert wire.data_bytes(Pid.DATA0, b"")[1:] == b"\x00\x00"
    packet = wire.data_bytes(Pid.DATA1, bytes(range(40)))
    crc = 0xFFFF
    for byte in packet[1:]:
        crc = (crc >> 8) ^ wire._CRC16_TABLE[(crc ^ byte) & 0xFF]
    assert crc == 0xB001


@pytest.mark.parametrize(("data", "after_sync", "stuffed"), [
    (b"\xff" * 4, True, 5),   # 1 (SYNC) + 32 ones = 33 -> 5 stuffed zeros
    (b"\xff" * 4, False, 5),  # 32 ones -> 5
    (b"\x3f", False, 1),      # exactly six ones
    (b"\x1f", True, 1),       # five ones after the SYNC's final one
    (b"\x1f", False, 0),
    (b"\x00\x55\xaa", True, 0),
])
def test_bit_stuffing_counts_one_zero_per_six_ones(data, after_sync, stuffed):
    assert wire.stuff_bits(data, after_sync=after_sync) == stuffed


def test_packet_line_times():
    assert wire.packet_bits(Pid.ACK) == 32 + 8 + 8
    assert wire.packet_bits(Pid.IN) == 32 + 8 + 16 + 8
    assert wire.sof_bits() == 32 + 8 + 16 + 40
    assert wire.packet_bits(Pid.DATA0, bytes(512), stuffing=False) == 32 + 8 + 4096 + 16 + 8
    assert wire.UFRAME_CYCLES == 7500 and wire.BITS_PER_ULPI_CYCLE == 8


def test_thirteen_512_byte_bulk_transactions_fit_a_microframe():
    for direction in ("in", "out"):
        assert wire.bulk_transactions_per_uframe(512, direction=direction) == 13
        per = wire.transaction_bits(direction, 512).total
        assert wire.sof_bits() + 13 * per < wire.UFRAME_BITS < wire.sof_bits() + 14 * per
    assert 13 * 512 * 8000 == 53_248_000


def test_turnaround_outside_spec_is_rejected():
    with pytest.raises(ValueError):
        wire.transaction_bits("in", 512, turnaround_bits=193)
