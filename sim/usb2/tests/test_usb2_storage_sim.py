"""The null disk (``sim:usb2?design=storage``) in Verilator, driven as a storage driver drives it:
SCSI commands in BOT over the simulated host controller and the ULPI PHY model, every answer
decoded field by field, the LBA pattern checked byte for byte (one simulator for the module)."""

from __future__ import annotations

import struct
from dataclasses import replace

import pytest
from busprobe.backends.usb.bot import BotRun
from busprobe.backends.usb.transfers import run_plan
from busprobe.model import ceiling_for
from busprobe.protocol import bot, scsi, usb2
from busprobe.protocol.scsi_mode import MODE_PAGE_ALL, MODE_PAGE_CACHING, mode_sense
from busprobe.protocol.storage import (
    BLOCK_SIZE,
    DEFAULT_CAPACITY_BLOCKS,
    INQUIRY_PRODUCT,
    INQUIRY_VENDOR,
    lba_bytes,
)
from busprobe.targets import open_transport

from .storage_client import (
    Initiator,
    bulk,
    clear_halt,
    inquiry,
    read_10,
    read_16,
    request_sense,
    write_10,
)

pytestmark = pytest.mark.sim

PASSED, FAILED, PHASE_ERROR = (bot.CswStatus.PASSED, bot.CswStatus.FAILED,
                               bot.CswStatus.PHASE_ERROR)


@pytest.fixture(scope="module")
def disk(usb2_storage_model):
    with open_transport("sim:usb2?host=xhci&design=storage") as transport:
        yield transport


@pytest.fixture
def scsi_(disk):
    return Initiator(disk.platform)


def test_enumeration_shows_one_bulk_only_mass_storage_interface(disk, scsi_):
    raw = disk.platform.control(0x80, 6, 0x0200, 0, 255)
    interface = raw[9:18]
    assert interface[1] == 4 and interface[3] == 0  # an interface descriptor, alternate 0
    assert tuple(interface[5:8]) == bot.BOT_INTERFACE
    # Alternate 0's two endpoints; alternate 1 (UAS) follows (test_usb2_uas_sim.py).
    assert raw[32:36] == bytes((9, 4, 0, 1))
    endpoints = {raw[i + 2]: raw[i + 3] for i in range(18, 32, 7)}
    assert endpoints == {usb2.EP_IN: 2, usb2.EP_OUT: 2}  # both bulk
    assert scsi_.max_lun() == b"\0"
    assert disk.requests.info["features"] == usb2.Feature.STORAGE  # its own GET_INFO says so


def test_inquiry_and_its_vpd_pages_name_the_null_disk(scsi_):
    answer = scsi_.command(inquiry(), 96)
    data = answer.data
    assert len(data) == 36 and answer.csw == bot.Csw(scsi_.tag, 96 - 36, PASSED)
    assert data[0] == 0x00 and data[2] == 0x06 and data[3] == 0x02 and data[4] == 31
    assert data[8:16] == INQUIRY_VENDOR and data[16:32] == INQUIRY_PRODUCT
    assert scsi_.command(inquiry(0x00), 255).data == scsi.vpd_page(0x00)
    serial = scsi_.command(inquiry(0x80), 255).data
    assert serial[1] == 0x80 and serial[4:] == scsi.UNIT_SERIAL
    ident = scsi_.command(inquiry(0x83), 255).data
    assert ident[1] == 0x83 and INQUIRY_VENDOR in ident[8:]
    limits = scsi_.command(inquiry(0xB0), 255).data
    assert limits[1] == 0xB0 and struct.unpack_from(">H", limits, 2)[0] == 0x3C
    assert struct.unpack_from(">I", limits, 8)[0] == scsi.MAX_TRANSFER_BLOCKS
    assert struct.unpack_from(">I", limits, 12)[0] == scsi.OPTIMAL_TRANSFER_BLOCKS
    # Allocation length truncates: 5 bytes of the standard data, residue 0.
    short = scsi_.command(inquiry(allocation=5), 5)
    assert short.data == scsi.inquiry_data()[:5] and short.csw.residue == 0


def test_capacity_mode_sense_and_sense_answer_field_by_field(scsi_):
    cap16 = scsi_.command(struct.pack(">BBQIBB", scsi.Op.SERVICE_ACTION_IN_16,
                                      scsi.READ_CAPACITY_16_ACTION, 0, 32, 0, 0), 32)
    assert cap16.csw.status == PASSED
    assert scsi.parse_capacity_16(cap16.data) == (DEFAULT_CAPACITY_BLOCKS, BLOCK_SIZE)
    cap10 = scsi_.command(struct.pack(">B9x", scsi.Op.READ_CAPACITY_10), 8)
    assert struct.unpack(">II", cap10.data) == (DEFAULT_CAPACITY_BLOCKS - 1, BLOCK_SIZE)
    mode6 = scsi_.command(struct.pack(">BBBBBB", scsi.Op.MODE_SENSE_6, 0, 0x3F, 0, 192, 0), 192)
    all_pages = mode_sense(MODE_PAGE_ALL)
    assert mode6.data == all_pages and mode6.csw == bot.Csw(scsi_.tag, 192 - len(all_pages),
                                                            PASSED)
    mode10 = scsi_.command(struct.pack(">BBBxxxxHB", scsi.Op.MODE_SENSE_10, 0, 0x3F, 255, 0),
                           255)
    assert mode10.data == mode_sense(MODE_PAGE_ALL, ten=True)
    sense = scsi_.command(request_sense(), scsi.SENSE_SIZE)
    assert scsi.parse_sense(sense.data) == (scsi.SenseKey.NO_SENSE, 0, 0)
    luns = scsi_.command(struct.pack(">B5xIxx", scsi.Op.REPORT_LUNS, 16), 16)
    assert luns.data == scsi.report_luns()
    for cb in (bytes(6), struct.pack(">B5x", scsi.Op.START_STOP_UNIT),
               struct.pack(">B5x", scsi.Op.PREVENT_ALLOW_MEDIUM_REMOVAL),
               struct.pack(">B9x", scsi.Op.SYNCHRONIZE_CACHE_10)):
        assert scsi_.command(cb).csw == bot.Csw(scsi_.tag, 0, PASSED)


def test_what_linux_sends_on_attach_is_answered_in_step(scsi_):
    """usb-storage and sd's attach, in order (Linux 6.1: usb_stor_Bulk_max_lun, scsi_scan,
    sd_revalidate_disk, the partition scan), then what udev's ata_id tries: ATA PASS-THROUGH(16)
    with a 512-byte data-in, refused as ILLEGAL REQUEST, the disk reading on."""
    assert scsi_.max_lun() == b"\0"
    assert scsi_.command(inquiry(allocation=36), 36).data == scsi.inquiry_data()
    assert scsi_.command(bytes(6)).csw.status == PASSED                       # TEST UNIT READY
    capacity = scsi_.command(struct.pack(">B9x", scsi.Op.READ_CAPACITY_10), 8)
    assert struct.unpack(">II", capacity.data) == (DEFAULT_CAPACITY_BLOCKS - 1, BLOCK_SIZE)
    all_pages = scsi_.command(struct.pack(">BBBBBB", scsi.Op.MODE_SENSE_6, 0, 0x3F, 0, 192, 0),
                              192)
    assert all_pages.data[2] & 0x80 == 0  # not write protected
    caching = scsi_.command(struct.pack(">BBBBBB", scsi.Op.MODE_SENSE_6, 0x08, 0x08, 0, 4, 0), 4)
    assert caching.csw == bot.Csw(scsi_.tag, 0, PASSED)
    assert caching.data == mode_sense(MODE_PAGE_CACHING)[:4]
    assert scsi_.command(read_10(0, 8), 8 * BLOCK_SIZE).data == lba_bytes(0, 8)
    ata = scsi_.command(bytes([0x85, 0x08, 0x0E]) + bytes(13), BLOCK_SIZE)
    assert ata.csw == bot.Csw(scsi_.tag, BLOCK_SIZE, FAILED)
    sense = scsi_.command(request_sense(), scsi.SENSE_SIZE).data
    assert scsi.parse_sense(sense)[:2] == (scsi.SenseKey.ILLEGAL_REQUEST,
                                           scsi.Asc.INVALID_COMMAND_OPERATION_CODE)
    assert scsi_.command(read_10(DEFAULT_CAPACITY_BLOCKS - 8, 8), 8 * BLOCK_SIZE).data == \
        lba_bytes(DEFAULT_CAPACITY_BLOCKS - 8, 8)


@pytest.mark.parametrize(("lba", "blocks"), [(1, 1), (12_345, 7), ((1 << 25) + 3, 3)])
def test_read_returns_exactly_the_lba_pattern(scsi_, lba, blocks):
    cb = read_10(lba, blocks) if lba < 1 << 32 else read_16(lba, blocks)
    answer = scsi_.command(cb, blocks * BLOCK_SIZE)
    assert answer.csw == bot.Csw(scsi_.tag, 0, PASSED)
    assert answer.data == lba_bytes(lba, blocks)


def test_read_16_past_the_alias_boundary_returns_its_pattern(scsi_):
    lba = DEFAULT_CAPACITY_BLOCKS - 2
    answer = scsi_.command(read_16(lba, 2), 2 * BLOCK_SIZE)
    assert answer.csw.status == PASSED and answer.data == lba_bytes(lba, 2)


def test_writes_are_checked_word_by_word(disk, scsi_):
    disk.requests.clear_telemetry()
    good = lba_bytes(777, 4)
    assert scsi_.command(write_10(777, 4), len(good), "out", good).csw == bot.Csw(
        scsi_.tag, 0, PASSED)
    assert scsi_.telemetry()["write_mismatches"] == 0
    bad = bytearray(lba_bytes(91, 2))
    for offset in (0, 1, 2, 517, 1020):  # words 0, 129, 255: three words
        bad[offset] ^= 0x40
    scsi_.command(write_10(91, 2), len(bad), "out", bytes(bad))
    assert scsi_.telemetry()["write_mismatches"] == 3
    assert disk.requests.read_telemetry().raw["pattern_errors"] == 3  # the USB telemetry's word


def test_an_unknown_opcode_fails_with_illegal_request_and_the_disk_goes_on(scsi_):
    assert scsi_.command(bytes([0xC7] + [0] * 9)).csw == bot.Csw(scsi_.tag, 0, FAILED)
    sense = scsi_.command(request_sense(), scsi.SENSE_SIZE).data
    assert scsi.parse_sense(sense) == (scsi.SenseKey.ILLEGAL_REQUEST,
                                       scsi.Asc.INVALID_COMMAND_OPERATION_CODE, 0)
    # Read twice: the sense was returned once, then cleared.
    sense = scsi_.command(request_sense(), scsi.SENSE_SIZE).data
    assert scsi.parse_sense(sense)[0] == scsi.SenseKey.NO_SENSE
    # With a data-in phase the host expects: zeros to its length, all of it residue.
    failed = scsi_.command(bytes([0xC7] + [0] * 9), 1024)
    assert failed.data == bytes(1024) and failed.csw == bot.Csw(scsi_.tag, 1024, FAILED)
    answer = scsi_.command(read_10(5, 2), 2 * BLOCK_SIZE)
    assert answer.csw.status == PASSED and answer.data == lba_bytes(5, 2)


def test_malformed_cdbs_and_ranges_are_illegal_requests(scsi_):
    cases = [
        (read_10(DEFAULT_CAPACITY_BLOCKS - 1, 2), scsi.Asc.LBA_OUT_OF_RANGE),
        (read_10(0, 1)[:6], scsi.Asc.INVALID_FIELD_IN_CDB),  # a 10-byte command in 6 bytes
        (inquiry(0x42), scsi.Asc.INVALID_FIELD_IN_CDB),
    ]
    for cb, asc in cases:
        assert scsi_.command(cb, BLOCK_SIZE).csw.status == FAILED
        sense = scsi_.command(request_sense(), scsi.SENSE_SIZE).data
        assert scsi.parse_sense(sense) == (scsi.SenseKey.ILLEGAL_REQUEST, asc, 0)


def test_host_and_device_disagreeing_is_a_phase_error(scsi_):
    # Hi < Di (case 7): the host's length moves, then phase error.
    assert scsi_.command(read_10(0, 2), BLOCK_SIZE).csw.status == PHASE_ERROR
    # Ho <> Di (case 10): OUT data taken and dropped.
    assert scsi_.command(read_10(0, 1), BLOCK_SIZE, "out").csw.status == PHASE_ERROR
    # Hn < Di (case 2).
    assert scsi_.command(read_10(0, 1)).csw.status == PHASE_ERROR


def test_a_bot_reset_abandons_a_command_and_the_disk_answers_again(disk, scsi_):
    scsi_.tag += 1
    cbw = bot.Cbw(scsi_.tag, 64 * BLOCK_SIZE, "in", cb=read_10(0, 64))
    bulk(disk.platform, usb2.EP_OUT, cbw.pack())  # the data phase is never read
    scsi_.mass_storage_reset()
    clear_halt(disk.platform, usb2.EP_IN)
    clear_halt(disk.platform, usb2.EP_OUT)
    answer = scsi_.command(read_10(42, 1), BLOCK_SIZE)
    assert answer.csw == bot.Csw(scsi_.tag, 0, PASSED) and answer.data == lba_bytes(42, 1)


def test_telemetry_counts_commands_and_the_240_block_histogram(disk, scsi_):
    disk.requests.clear_telemetry()
    for lba in (0, 240):
        assert scsi_.command(read_10(lba, 240), 240 * BLOCK_SIZE).csw.status == PASSED
    scsi_.command(read_10(9, 8), 8 * BLOCK_SIZE)
    data = lba_bytes(3, 1)
    scsi_.command(write_10(3, 1), BLOCK_SIZE, "out", data)
    scsi_.command(bytes([0xC7] + [0] * 9))
    counts = scsi_.telemetry()
    # Six commands: the INQUIRY that reads the page counts itself (it is decoded before its
    # snapshot is taken).
    assert counts["commands"] == 6 and counts["reads"] == 3 and counts["writes"] == 1
    assert counts["check_conditions"] == 1
    assert counts["read_blocks_max"] == 240 and counts["write_blocks_max"] == 1
    assert counts["read_hist_7"] == 2 and counts["read_hist_3"] == 1
    assert counts["write_hist_0"] == 1
    assert sum(counts[f"read_hist_{b}"] for b in range(scsi.HISTOGRAM_BUCKETS)) == 3
    assert 0 < counts["gap_cycles_max"] and counts["gap_cycles"] >= counts["gap_cycles_max"]
    assert counts["gap_cycles"] < counts["cycles"] < 60_000_000  # well under a simulated second


def _run_240(transport, direction: str, commands: int) -> tuple[float, float]:
    """``commands`` READ(10)/WRITE(10) of 240 blocks through BotRun: (measured, model) B/s."""
    blocks = 240
    length = blocks * BLOCK_SIZE
    make = read_10 if direction == "in" else write_10
    cbws = [bot.Cbw(0x9000 + i, length, direction, cb=make(i * blocks, blocks)).pack()
            for i in range(commands)]
    outgoing = [lba_bytes(i * blocks, blocks) for i in range(commands)]
    run = BotRun(cbws, direction, length, outgoing if direction == "out" else None,
                 what="storage")
    result = run.result(*run_plan(transport.platform, run, what="storage", silence=30.0))
    assert [bot.Csw.unpack(c).status for c in run.csws] == [PASSED] * commands
    got: list[bytes] = []
    run.deliver(got.append)
    if direction == "in":
        assert b"".join(got) == lba_bytes(0, commands * blocks)
    # The ceiling of the run this made (its first CBW to its last CSW, host-timed), which a
    # short run may hold above the steady state's: no figure above its own ceiling.
    model = ceiling_for(replace(transport.bus, protocol="bot"), direction, length=length,
                        queue_depth=1, transfers=commands).throughput
    return result.bytes / (result.end - result.start), model


@pytest.mark.parametrize(("host", "direction"), [("xhci", "in"), ("xhci", "out"),
                                                 ("ehci", "in")])
def test_240_block_commands_run_at_the_bot_model_ceiling(disk, host, direction):
    """What usb-storage does at high speed: 240-block commands, one at a time (BotRun)."""
    if host == "xhci":
        disk.requests.clear_telemetry()
        measured, model = _run_240(disk, direction, 6)
    else:
        with open_transport(f"sim:usb2?host={host}&design=storage") as other:
            measured, model = _run_240(other, direction, 4)
    print(f"{host} {direction} 240 blocks: {measured / 1e6:.2f} MB/s, "
          f"BOT model {model / 1e6:.2f} MB/s ({measured / model:.4f})")
    assert measured <= model
    assert measured / model == pytest.approx(1.0, abs=0.01)
    if direction == "out":
        assert Initiator(disk.platform).telemetry()["write_mismatches"] == 0
