"""The null disk's SCSI contract: answers as SPC/SBC lay them out, and the parsers of them."""

import struct

import pytest
from busprobe.protocol import scsi
from busprobe.protocol.storage import BLOCK_SIZE, INQUIRY_PRODUCT, INQUIRY_VENDOR


def test_standard_inquiry_is_36_bytes_naming_a_busprobe_direct_access_device():
    data = scsi.inquiry_data()
    assert len(data) == 36 and data[0] == 0 and data[4] == len(data) - 5
    assert data[8:16] == INQUIRY_VENDOR and data[16:32] == INQUIRY_PRODUCT


def test_vpd_page_00_lists_every_page_and_each_page_says_its_length():
    assert list(scsi.vpd_page(0x00)[4:]) == list(scsi.VPD_PAGES)
    for page in (0x00, 0x80, 0x83, 0xB0):
        data = scsi.vpd_page(page)
        assert data[1] == page and struct.unpack_from(">H", data, 2)[0] == len(data) - 4
    with pytest.raises(ValueError, match="no VPD page"):
        scsi.vpd_page(0x42)


def test_capacity_answers_round_trip_and_clip_at_32_bits():
    assert scsi.parse_capacity_16(scsi.read_capacity_16(1 << 40)) == (1 << 40, BLOCK_SIZE)
    assert struct.unpack(">II", scsi.read_capacity_10(1 << 40)) == (0xFFFF_FFFF, BLOCK_SIZE)
    assert struct.unpack(">II", scsi.read_capacity_10(1000)) == (999, BLOCK_SIZE)


def test_sense_data_is_fixed_format_with_its_key_and_code():
    data = scsi.sense_data(scsi.Asc.LBA_OUT_OF_RANGE)
    assert len(data) == scsi.SENSE_SIZE and data[7] == scsi.SENSE_SIZE - 8
    assert scsi.parse_sense(data) == (scsi.SenseKey.ILLEGAL_REQUEST, 0x21, 0)
    assert scsi.parse_sense(scsi.sense_data(scsi.Asc.NONE))[0] == scsi.SenseKey.NO_SENSE
    with pytest.raises(ValueError, match="not fixed-format"):
        scsi.parse_sense(bytes(18))


def test_linux_240_sector_commands_land_in_bucket_7():
    assert [scsi.histogram_bucket(n) for n in (1, 2, 3, 128, 240, 255, 256)] == [
        0, 1, 1, 7, 7, 7, 8]
    assert scsi.histogram_bucket(1 << 30) == scsi.HISTOGRAM_BUCKETS - 1


def test_cdb_lengths_follow_the_group_code():
    assert [scsi.cdb_length(op) for op in (scsi.Op.INQUIRY, scsi.Op.READ_10, scsi.Op.READ_16,
                                           scsi.Op.REPORT_LUNS)] == [6, 10, 16, 12]
    assert scsi.cdb_length(0xC7) is None


def test_the_telemetry_page_parses_back_by_name():
    words = list(range(scsi.STORAGE_TELEMETRY_WORDS))
    page = scsi.vpd_page(scsi.VPD_TELEMETRY) + struct.pack(f"<{len(words)}I", *words)
    counts = scsi.parse_telemetry(page)
    assert counts["commands"] == 0 and counts["uas_bad_tags"] == len(words) - 1
    assert counts["uas_tags_max"] == scsi.STORAGE_TELEMETRY.index("uas_tags_max")
    with pytest.raises(ValueError, match="not the storage telemetry"):
        scsi.parse_telemetry(scsi.vpd_page(0x80))
