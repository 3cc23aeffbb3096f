"""The SuperSpeed null disk (``sim:usb3?design=storage``) in Verilator, driven as a storage
driver drives it: SCSI commands in BOT through the simulated xHCI and the PIPE link partner,
the LBA pattern checked byte for byte, the BOT class requests and reset recovery on EP0, and
``busprobe sweep --protocol bot`` at the BOT ceiling (one simulator for the module)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from busprobe.cli import main
from busprobe.protocol import bot, scsi, usb3
from busprobe.protocol.storage import (
    BLOCK_SIZE,
    DEFAULT_CAPACITY_BLOCKS,
    INQUIRY_PRODUCT,
    INQUIRY_VENDOR,
    lba_bytes,
)
from busprobe.sim.usb2.tests.storage_client import (
    Initiator,
    bulk,
    clear_halt,
    inquiry,
    read_10,
    read_16,
    request_sense,
    write_10,
)
from busprobe.targets import open_transport

pytestmark = pytest.mark.sim

#: A realistic host: 20 µs completion and 30 µs resubmit per stage hide the disk's own
#: start-up (the ideal host, which answers in the next symbol, shows it: DESIGN §3.5).
DISK = "sim:usb3?host=vl805&design=storage"
PASSED, FAILED, PHASE_ERROR = (bot.CswStatus.PASSED, bot.CswStatus.FAILED,
                               bot.CswStatus.PHASE_ERROR)


@pytest.fixture(scope="module")
def disk(usb3_storage_model):
    with open_transport(DISK) as transport:
        yield transport


@pytest.fixture
def scsi_(disk):
    return Initiator(disk.platform)


def test_enumeration_shows_a_superspeed_bulk_only_mass_storage_interface(disk, scsi_):
    raw = disk.platform.control(0x80, 6, 0x0200, 0, 255)
    interface = raw[9:18]
    assert interface[1] == 4 and tuple(interface[5:8]) == bot.BOT_INTERFACE
    # Each bulk endpoint with its SuperSpeed companion (bMaxBurst 15, no streams).
    assert raw[18:25] == bytes((7, 5, usb3.EP_IN, 2, 0, 4, 0))
    assert raw[25:31] == bytes((6, 0x30, usb3.MAX_BURST, 0, 0, 0))
    assert scsi_.max_lun() == b"\0"
    assert disk.requests.info["features"] == usb3.Feature.STORAGE  # its own GET_INFO says so
    assert disk.bus.kind == "usb3-ss"


def test_inquiry_capacity_and_reads_return_the_lba_pattern_a_word_a_cycle(scsi_):
    answer = scsi_.command(inquiry(), 96)  # Hi > Di: a short packet, residue 60
    assert answer.data == scsi.inquiry_data() and answer.csw == bot.Csw(scsi_.tag, 60, PASSED)
    assert answer.data[8:16] == INQUIRY_VENDOR and answer.data[16:32] == INQUIRY_PRODUCT
    assert scsi_.command(inquiry(0x00), 255).data == scsi.vpd_page(0x00)
    cap10 = scsi_.command(struct.pack(">B9x", scsi.Op.READ_CAPACITY_10), 8)
    assert struct.unpack(">II", cap10.data) == (DEFAULT_CAPACITY_BLOCKS - 1, BLOCK_SIZE)
    sense = scsi_.command(request_sense(), scsi.SENSE_SIZE)  # 18 bytes: a partial last word
    assert scsi.parse_sense(sense.data) == (scsi.SenseKey.NO_SENSE, 0, 0)
    for lba, blocks in ((1, 1), (12_345, 7), ((1 << 25) + 3, 3), (0, 64)):
        answer = scsi_.command(read_10(lba, blocks), blocks * BLOCK_SIZE)
        assert answer.csw == bot.Csw(scsi_.tag, 0, PASSED)
        assert answer.data == lba_bytes(lba, blocks)
    last = DEFAULT_CAPACITY_BLOCKS - 2
    assert scsi_.command(read_16(last, 2), 2 * BLOCK_SIZE).data == lba_bytes(last, 2)


def test_writes_are_checked_word_by_word(disk, scsi_):
    disk.requests.clear_telemetry()
    good = lba_bytes(777, 4)
    assert scsi_.command(write_10(777, 4), len(good), "out", good).csw == bot.Csw(
        scsi_.tag, 0, PASSED)
    assert scsi_.telemetry()["write_mismatches"] == 0
    bad = bytearray(lba_bytes(91, 3))
    for offset in (0, 1, 2, 517, 1020, 1100):  # words 0, 129, 255, 275: four words
        bad[offset] ^= 0x40
    assert scsi_.command(write_10(91, 3), len(bad), "out", bytes(bad)).csw.status == PASSED
    assert scsi_.telemetry()["write_mismatches"] == 4
    assert disk.requests.read_telemetry().raw["pattern_errors"] == 4  # the USB telemetry's word


def test_an_illegal_opcode_is_check_condition_illegal_request_and_the_disk_reads_on(scsi_):
    assert scsi_.command(bytes([0xC7] + [0] * 9)).csw == bot.Csw(scsi_.tag, 0, FAILED)
    sense = scsi_.command(request_sense(), scsi.SENSE_SIZE).data
    assert scsi.parse_sense(sense) == (scsi.SenseKey.ILLEGAL_REQUEST,
                                       scsi.Asc.INVALID_COMMAND_OPERATION_CODE, 0)
    # With a data-in phase the host expects: zeros to its length, all of it residue.
    failed = scsi_.command(bytes([0xC7] + [0] * 9), 2048)
    assert failed.data == bytes(2048) and failed.csw == bot.Csw(scsi_.tag, 2048, FAILED)
    assert scsi_.command(read_10(DEFAULT_CAPACITY_BLOCKS - 1, 2), BLOCK_SIZE).csw.status \
        == FAILED
    sense = scsi_.command(request_sense(), scsi.SENSE_SIZE).data
    assert scsi.parse_sense(sense)[1] == scsi.Asc.LBA_OUT_OF_RANGE
    # Hi < Di (case 7): the host's length moves, then phase error.
    assert scsi_.command(read_10(0, 2), BLOCK_SIZE).csw.status == PHASE_ERROR
    answer = scsi_.command(read_10(5, 2), 2 * BLOCK_SIZE)
    assert answer.csw.status == PASSED and answer.data == lba_bytes(5, 2)


def test_bot_reset_recovery_abandons_a_read_and_the_disk_answers_again(disk, scsi_):
    scsi_.tag += 1
    cbw = bot.Cbw(scsi_.tag, 128 * BLOCK_SIZE, "in", cb=read_10(0, 128))
    bulk(disk.platform, usb3.EP_OUT, cbw.pack())  # the data phase is never read
    scsi_.mass_storage_reset()
    clear_halt(disk.platform, usb3.EP_IN)
    clear_halt(disk.platform, usb3.EP_OUT)
    answer = scsi_.command(read_10(42, 3), 3 * BLOCK_SIZE)
    assert answer.csw == bot.Csw(scsi_.tag, 0, PASSED) and answer.data == lba_bytes(42, 3)


def test_sweep_protocol_bot_reads_and_writes_clean_at_the_bot_ceiling(usb3_storage_model,
                                                                       tmp_path: Path):
    """What usb-storage does at SuperSpeed (240 blocks a command at most): 120 KiB commands,
    one at a time, through the CLI; every read byte the LBA pattern, no written word wrong."""
    out = tmp_path / "bot.json"
    assert main(["sweep", "--device", DISK, "--protocol", "bot", "--direction", "both",
                 "--lengths", "120K", "--min-bytes", "512K", "--no-progress",
                 "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["bus"]["protocol"] == "bot" and doc["bus"]["kind"] == "usb3-ss"
    for point in doc["points"]:
        assert point["errors"] == 0, point["error_detail"]
        detail = point["error_detail"]
        assert detail["device_byte_mismatch"] == detail["device_errors"] == 0
        share = point["throughput"] / point["ceiling"]
        print(f"{point['direction']} {point['length']} B: {point['throughput'] / 1e6:.2f} MB/s"
              f" = {share:.4f} of the BOT ceiling {point['ceiling'] / 1e6:.2f}")
        assert 0.99 < share <= 1.0, point
