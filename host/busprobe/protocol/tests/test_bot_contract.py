"""The BOT contract: wrappers laid out as Mass Storage BOT 1.0 says, checked on the way in."""

import struct

import pytest
from busprobe.protocol import bot


def test_wrappers_have_the_spec_sizes_signatures_and_offsets():
    assert (bot.CBW_SIZE, bot.CSW_SIZE) == (31, 13)
    assert struct.pack("<I", bot.CBW_SIGNATURE) == b"USBC"
    assert struct.pack("<I", bot.CSW_SIGNATURE) == b"USBS"
    raw = bot.Cbw(0x11223344, 0x55667788, "in", lun=0, cb=b"\x28" + bytes(9)).pack()
    offsets = bot.CBW_OFFSETS
    assert raw[offsets["tag"]:offsets["tag"] + 4] == bytes.fromhex("44332211")
    assert raw[offsets["data_transfer_length"]:][:4] == bytes.fromhex("88776655")
    assert raw[offsets["flags"]] == bot.CBW_FLAG_IN and raw[offsets["cb_length"]] == 10
    assert raw[offsets["cb"]] == 0x28
    csw = bot.Csw(7, 9, bot.CswStatus.PHASE_ERROR).pack()
    assert csw[bot.CSW_OFFSETS["residue"]] == 9 and csw[bot.CSW_OFFSETS["status"]] == 2


@pytest.mark.parametrize("direction", ["in", "out"])
def test_a_cbw_round_trips(direction):
    cbw = bot.Cbw(3, 4096, direction, cb=bot.scsi_block_command(direction, 8192, 4096))
    assert bot.Cbw.unpack(cbw.pack()) == cbw
    assert cbw.cb[0] == (0x28 if direction == "in" else 0x2A)
    assert struct.unpack(">IH", cbw.cb[2:6] + cbw.cb[7:9]) == (16, 8)  # LBA 16, 8 blocks


@pytest.mark.parametrize(("data", "message"), [
    (bytes(30), "CBW is 30 bytes, not 31"),
    (b"USBX" + bytes(27), "signature 0x58425355"),
    (struct.pack(bot.CBW_FORMAT, bot.CBW_SIGNATURE, 1, 1, 0, 0, 17, bytes(16)),
     "command block length 17"),
])
def test_an_invalid_cbw_is_named(data, message):
    with pytest.raises(ValueError, match=message):
        bot.Cbw.unpack(data)


def test_a_csw_says_why_it_does_not_close_its_cbw():
    cbw = bot.Cbw(5, 100, "out")
    assert bot.Csw(5, 0, bot.CswStatus.PASSED).problem(cbw) is None
    assert "tag 0x6" in bot.Csw(6, 0, 0).problem(cbw)
    assert "failed" in bot.Csw(5, 0, bot.CswStatus.FAILED).problem(cbw)
    assert "status 7" in bot.Csw(5, 0, 7).problem(cbw)
    assert "residue of 4 of 100" in bot.Csw(5, 4, 0).problem(cbw)
    with pytest.raises(ValueError, match="CSW is 12 bytes"):
        bot.Csw.unpack(bytes(12))
    with pytest.raises(ValueError, match="CSW signature"):
        bot.Csw.unpack(bytes(13))


def test_a_cbw_that_cannot_be_framed_is_refused():
    with pytest.raises(ValueError, match="direction"):
        bot.Cbw(1, 1, "both").pack()
    with pytest.raises(ValueError, match="1..16"):
        bot.Cbw(1, 1, "in", cb=bytes(17)).pack()
    with pytest.raises(ValueError, match="32 bits"):
        bot.Cbw(1, 1 << 32, "in").pack()


def test_a_csw_in_place_of_data_is_told_by_signature_and_tag():
    cbw = bot.Cbw(0x1234, 4096, "in").pack()
    assert bot.is_csw_for(bot.Csw(0x1234, 4096, 2).pack(), cbw)
    assert not bot.csw_passed(bot.Csw(0x1234, 4096, 2).pack(), cbw)
    assert bot.csw_passed(bot.Csw(0x1234, 0, 0).pack(), cbw)
    assert not bot.is_csw_for(bot.Csw(0x1235, 4096, 2).pack(), cbw)  # another command's
    assert not bot.is_csw_for(bot.Csw(0x1234, 4096, 2).pack() + b"\x00", cbw)
    assert not bot.is_csw_for(b"USBX" + bot.Csw(0x1234, 0, 0).pack()[4:], cbw)
