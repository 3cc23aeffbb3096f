"""What the null disk's command engine answers, as SPC-4 and SBC-3 say it should, checked on the
gateware (Amaranth simulation of the BOT engine, a byte a beat as behind USB 2.0 and a word a
beat as behind SuperSpeed) against the contract in :mod:`busprobe.protocol.scsi` and
:mod:`busprobe.protocol.scsi_mode`, with sg3-utils (``sg_vpd``, ``sg_decode_sense``) as the
decoder nobody here wrote where it reads the bytes."""

from __future__ import annotations

import shutil
import struct
import subprocess

import pytest
from busprobe.protocol import bot, scsi
from busprobe.protocol.scsi_mode import (
    MODE_PAGE_ALL,
    MODE_PAGE_CACHING,
    MODE_PAGE_CONTROL,
    MODE_PAGES,
    MODE_SUBPAGE_ALL,
    PageControl,
    mode_sense,
)

from .bot_engine_harness import run_commands

PASSED, FAILED = bot.CswStatus.PASSED, bot.CswStatus.FAILED
#: (width, wMaxPacketSize): the USB 2.0 disk's engine and the SuperSpeed disk's.
ENGINES = pytest.mark.parametrize(("width", "max_packet_size"), [(1, 512), (4, 1024)],
                                  ids=["usb2", "usb3"])


def _mode_sense_cb(page: int, *, subpage: int = 0, control: int = 0, ten: bool = False,
                   allocation: int = 255) -> bytes:
    page_and_control = control << 6 | page
    if ten:
        return struct.pack(">BBBBxxxHB", scsi.Op.MODE_SENSE_10, 0, page_and_control, subpage,
                           allocation, 0)
    return struct.pack(">BBBBBB", scsi.Op.MODE_SENSE_6, 0, page_and_control, subpage,
                       allocation, 0)


def _request_sense() -> tuple[bytes, int]:
    return struct.pack(">BxxxBx", scsi.Op.REQUEST_SENSE, scsi.SENSE_SIZE), scsi.SENSE_SIZE


def _sg(tool: str, *args: str, stdin: bytes | None = None) -> str:
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} is not installed: sg3-utils is in the Makefile's DEBIAN_PACKAGES")
    done = subprocess.run([tool, *args], input=stdin, capture_output=True, timeout=30,
                          check=True)
    return done.stdout.decode()


@ENGINES
def test_mode_sense_answers_each_page_it_has_and_all_of_them_for_3f(width, max_packet_size):
    asks = [(page, control, ten) for ten in (False, True)
            for page in (*MODE_PAGES, MODE_PAGE_ALL)
            for control in (PageControl.CURRENT, PageControl.CHANGEABLE, PageControl.DEFAULT)]
    answers = run_commands([(_mode_sense_cb(page, control=control, ten=ten), 255)
                            for page, control, ten in asks],
                           width=width, max_packet_size=max_packet_size)
    for (page, control, ten), (data, csw) in zip(asks, answers, strict=True):
        assert data == mode_sense(page, control=control, ten=ten), (page, control, ten)
        assert csw.status == PASSED and csw.residue == 255 - len(data)
    # Field by field, as SPC-4 lays out MODE SENSE (6) of page 3Fh: the header counts the bytes
    # after its first, then the caching page (08h, 18 bytes after its own two) and the control
    # page (0Ah, 10) in ascending order; write cache off, fixed-format sense (D_SENSE 0).
    all6 = answers[asks.index((MODE_PAGE_ALL, PageControl.CURRENT, False))][0]
    assert all6[0] == len(all6) - 1 and all6[2] & 0x80 == 0 and all6[3] == 0
    assert all6[4:6] == bytes([MODE_PAGE_CACHING, 0x12]) and all6[6] & 0x04 == 0
    assert all6[24:26] == bytes([MODE_PAGE_CONTROL, 0x0A]) and all6[26] & 0x04 == 0
    assert len(all6) == 4 + 20 + 12


@ENGINES
def test_mode_sense_of_a_page_it_lacks_is_check_condition_invalid_field_in_cdb(
        width, max_packet_size):
    """SPC-4 §6.11: a page or subpage the disk does not implement, and saved values, end with
    CHECK CONDITION, ILLEGAL REQUEST; the sense says which (decoded by sg_decode_sense)."""
    asks = [
        (_mode_sense_cb(0x1C), scsi.Asc.INVALID_FIELD_IN_CDB),           # informational exc.
        (_mode_sense_cb(0x00, ten=True), scsi.Asc.INVALID_FIELD_IN_CDB),  # vendor page 0
        (_mode_sense_cb(MODE_PAGE_CACHING, subpage=0x01), scsi.Asc.INVALID_FIELD_IN_CDB),
        (_mode_sense_cb(MODE_PAGE_ALL, control=PageControl.SAVED),
         scsi.Asc.SAVING_PARAMETERS_NOT_SUPPORTED),
    ]
    commands = []
    for cb, _ in asks:
        commands += [(cb, 64), _request_sense()]
    answers = run_commands(commands, width=width, max_packet_size=max_packet_size)
    for (cb, asc), (_, csw), sense in zip(asks, answers[::2], answers[1::2], strict=True):
        assert csw.status == FAILED and csw.residue == 64, cb.hex()
        assert sense[1].status == PASSED and sense[0] == scsi.sense_data(asc)
        assert scsi.parse_sense(sense[0]) == (scsi.SenseKey.ILLEGAL_REQUEST, asc, 0)
    decoded = _sg("sg_decode_sense", *(f"{b:02x}" for b in answers[1][0]))
    assert "Illegal Request" in decoded and "Invalid field in cdb" in decoded
    decoded = _sg("sg_decode_sense", *(f"{b:02x}" for b in answers[7][0]))
    assert "Saving parameters not supported" in decoded


def test_mode_sense_contract_takes_all_subpages_and_refuses_the_rest():
    assert mode_sense(MODE_PAGE_ALL, subpage=MODE_SUBPAGE_ALL) == mode_sense(MODE_PAGE_ALL)
    for page, asc in ((0x01, scsi.Asc.INVALID_FIELD_IN_CDB),
                      (MODE_PAGE_ALL, scsi.Asc.SAVING_PARAMETERS_NOT_SUPPORTED)):
        control = PageControl.SAVED if asc == scsi.Asc.SAVING_PARAMETERS_NOT_SUPPORTED else 0
        with pytest.raises(scsi.CheckCondition) as failure:
            mode_sense(page, control=control)
        assert failure.value.asc == asc


@ENGINES
def test_block_limits_say_an_optimal_transfer_of_1_mib_and_sg_vpd_reads_it(
        width, max_packet_size, tmp_path):
    (limits, csw), = run_commands([(struct.pack(">BBBHB", scsi.Op.INQUIRY, 1, 0xB0, 255, 0),
                                    255)], width=width, max_packet_size=max_packet_size)
    assert csw.status == PASSED and limits == scsi.vpd_page(0xB0)
    (tmp_path / "b0.hex").write_text(limits.hex(" "))
    decoded = _sg("sg_vpd", f"--inhex={tmp_path / 'b0.hex'}")
    assert "Optimal transfer length: 2048 blocks" in decoded
    assert "Maximum transfer length: 65535 blocks" in decoded
    assert "Optimal transfer length granularity: 8 blocks" in decoded
    # What Linux's sd makes of it (sd_validate_opt_xfer_size, 6.1): io_opt = 1 MiB, not 32 MiB:
    # within the maximum, a whole number of 4 KiB pages.
    optimal = struct.unpack_from(">I", limits, 12)[0] * 512
    assert optimal == 1 << 20 and optimal % 4096 == 0


@ENGINES
def test_every_vpd_page_decodes_in_sg_vpd_as_the_disk_names_itself(
        width, max_packet_size, tmp_path):
    pages = [page for page in scsi.VPD_PAGES if page != scsi.VPD_TELEMETRY]
    answers = run_commands([(struct.pack(">BBBHB", scsi.Op.INQUIRY, 1, page, 255, 0), 255)
                            for page in pages], width=width, max_packet_size=max_packet_size)
    decoded = {}
    for page, (data, csw) in zip(pages, answers, strict=True):
        assert csw.status == PASSED and data == scsi.vpd_page(page)
        (tmp_path / f"{page:02x}.hex").write_text(data.hex(" "))
        decoded[page] = _sg("sg_vpd", f"--inhex={tmp_path / f'{page:02x}.hex'}")
    assert "Block limits (SBC)" in decoded[0x00] and "Unit serial number" in decoded[0x00]
    assert f"Unit serial number: {scsi.UNIT_SERIAL.decode()}" in decoded[0x80]
    assert "T10 vendor identification" in decoded[0x83] and "vendor id: BUSPROBE" in decoded[0x83]


@ENGINES
def test_a_read_past_the_capacity_fails_and_one_up_to_it_does_not(width, max_packet_size):
    """The LBA range check at its edges, READ (10) and READ (16) (each group's sum of its own
    bytes): with no data phase from the host, a range past the capacity is FAILED (no data), a
    range up to it a phase error (the disk has the blocks), an empty range at it GOOD."""
    from busprobe.protocol.storage import DEFAULT_CAPACITY_BLOCKS as capacity

    def read_10(lba, blocks):
        return struct.pack(">BBIBHB", scsi.Op.READ_10, 0, lba, 0, blocks, 0)

    def read_16(lba, blocks):
        return struct.pack(">BBQIBB", scsi.Op.READ_16, 0, lba, blocks, 0, 0)

    phase_error = bot.CswStatus.PHASE_ERROR
    cases = [(read_10(capacity - 1, 1), phase_error), (read_10(capacity - 1, 2), FAILED),
             (read_10(capacity, 0), PASSED), (read_10(0xFFFF_FFFF, 0xFFFF), FAILED),
             (read_16(capacity - 1, 1), phase_error), (read_16(capacity - 1, 2), FAILED),
             (read_16(0, capacity), phase_error), (read_16(0, capacity + 1), FAILED),
             (read_16(1 << 32, 1), FAILED), (read_16(0xFFFF_FFFF, 0xFFFF_FFFF), FAILED)]
    answers = run_commands([(cb, 0) for cb, _ in cases], width=width,
                           max_packet_size=max_packet_size)
    assert [csw.status for _, csw in answers] == [status for _, status in cases]
    assert all(data == b"" for data, _ in answers)
