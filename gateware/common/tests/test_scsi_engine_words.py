"""The BOT engine a word a beat (the SuperSpeed disk's width) against the protocol's framing,
in Amaranth simulation: the CBW from whole beats, the data as 32-bit beats with ``keep``, the
CSW as four beats, writes checked a word at a time. (The byte-wide engine is the USB 2.0 disk's,
tested through its simulation: ``sim/usb2/tests/test_usb2_storage_sim.py``.)"""

import struct

from busprobe.protocol import bot, scsi
from busprobe.protocol.storage import BLOCK_SIZE, lba_bytes

from .bot_engine_harness import cbw as _cbw
from .bot_engine_harness import run_engine


def _run(packets: list[bytes], expect_in: int) -> tuple[list[bytes], int]:
    return run_engine(packets, expect_in, width=4, max_packet_size=1024)


def test_a_read_moves_the_lba_pattern_a_word_a_beat_then_the_csw():
    cb = struct.pack(">BBIBHB", scsi.Op.READ_10, 0, 12_345, 0, 3, 0)
    packets, _ = _run([_cbw(7, 3 * BLOCK_SIZE, "in", cb)], expect_in=3)
    assert packets[0] + packets[1] == lba_bytes(12_345, 3)[:2048] and len(packets[0]) == 1024
    # 1536 bytes: a full packet, then 512 and the CSW (13 bytes, a last beat of one byte).
    assert packets[1] == lba_bytes(12_345, 3)[1024:]
    assert bot.Csw.unpack(packets[2]) == bot.Csw(7, 0, bot.CswStatus.PASSED)


def test_a_table_answer_ends_short_at_its_length_with_the_residue():
    cb = struct.pack(">BBBHB", scsi.Op.INQUIRY, 0, 0, 96, 0)
    packets, _ = _run([_cbw(9, 96, "in", cb)], expect_in=2)
    assert packets[0] == scsi.inquiry_data()
    assert bot.Csw.unpack(packets[1]) == bot.Csw(9, 96 - 36, bot.CswStatus.PASSED)


def test_a_write_is_checked_a_word_at_a_time_and_a_bad_cbw_is_a_phase_error():
    data = bytearray(lba_bytes(91, 2))
    for offset in (0, 1, 517, 1023):  # words 0, 129, 255: three words
        data[offset] ^= 0x40
    cb = struct.pack(">BBIBHB", scsi.Op.WRITE_10, 0, 91, 0, 2, 0)
    packets, mismatches = _run([_cbw(3, len(data), "out", cb), bytes(data[:1024]),
                                bytes(data[1024:]), _cbw(4, 0, "in", bytes(6))[:30]],
                               expect_in=2)
    assert bot.Csw.unpack(packets[0]) == bot.Csw(3, 0, bot.CswStatus.PASSED)
    assert mismatches == 3
    assert bot.Csw.unpack(packets[1]).status == bot.CswStatus.PHASE_ERROR  # a 30-byte CBW
