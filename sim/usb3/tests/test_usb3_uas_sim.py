"""The SuperSpeed null disk's alternate 1 (``sim:usb3?design=storage``) in Verilator: USB
Attached SCSI with bulk streams, as Linux's ``uas`` drives it at 5000M — SET_INTERFACE, streams
allocated on the status and data pipes, each command's status and data transfers on the stream
of its tag, the device selecting the streams (no READ/WRITE READY); then back to BOT on
alternate 0 (one simulator for the module)."""

from __future__ import annotations

import itertools
import struct

import pytest
from busprobe.backends.usb.requests import VENDOR_OUT
from busprobe.backends.usb.transfers import Transfer, run_plan, silence_for
from busprobe.backends.usb.uas import STATUS_LENGTH, UasCommand, UasRun
from busprobe.protocol import bot, scsi, uas, usb3
from busprobe.protocol.storage import BLOCK_SIZE, DEFAULT_CAPACITY_BLOCKS, lba_bytes
from busprobe.protocol.streams import MAX_STREAMS, MAX_STREAMS_EXPONENT
from busprobe.sim.usb2.tests.storage_client import Initiator, inquiry, read_10, write_10
from busprobe.targets import open_transport

pytestmark = pytest.mark.sim

DISK = "sim:usb3?host=vl805&design=storage"
GOOD = uas.Status.GOOD
SET_INTERFACE, GET_INTERFACE, GET_CONFIGURATION = 11, 10, 8
STREAM_PIPES = uas.STREAM_PIPES


def _uas(platform):
    platform.control(0x01, SET_INTERFACE, uas.UAS_ALTERNATE, 0, b"")
    platform.alloc_streams(STREAM_PIPES, MAX_STREAMS)


@pytest.fixture(scope="module")
def disk(usb3_storage_model):
    with open_transport(DISK) as transport:
        _uas(transport.platform)
        yield transport


_TAGS = itertools.cycle(range(1, MAX_STREAMS + 1))


def run(disk, commands, queue_depth=1):
    plan = UasRun(commands, queue_depth, what="UAS", streams=True)
    longest = max(c.length for c in commands) or 64
    start, end = run_plan(disk.platform, plan, what="UAS", silence=silence_for(longest))
    return plan, start, end


def one(disk, cdb, length=0, direction="in", outgoing=b""):
    command = UasCommand(next(_TAGS), cdb, length, direction, outgoing)
    run(disk, [command])
    return command


def test_alternate_1_offers_streams_on_the_status_and_data_pipes_not_the_command_pipe(disk):
    raw = disk.platform.control(0x80, 6, 0x0200, 0, 512)
    at = raw.index(bytes((9, 4, 0, 1)))  # interface 0, alternate 1
    assert tuple(raw[at + 5:at + 8]) == uas.UAS_INTERFACE
    pipes, offset = {}, at + 9
    while offset < len(raw):
        endpoint, companion, usage = (raw[offset:offset + 7], raw[offset + 7:offset + 13],
                                      raw[offset + 13:offset + 17])
        assert endpoint[1] == 5 and companion[1] == 0x30 and usage[:2] == bytes((4, 0x24))
        pipes[usage[2]] = (endpoint[2], companion[3] & 0x1F)
        offset += 17
    assert pipes == {uas.Pipe.COMMAND: (uas.EP_COMMAND, 0),
                     uas.Pipe.STATUS: (uas.EP_STATUS, MAX_STREAMS_EXPONENT),
                     uas.Pipe.DATA_IN: (uas.EP_DATA_IN, MAX_STREAMS_EXPONENT),
                     uas.Pipe.DATA_OUT: (uas.EP_DATA_OUT, MAX_STREAMS_EXPONENT)}
    assert disk.platform.control(0x81, GET_INTERFACE, 0, 0, 1) == b"\1"


def test_inquiry_reads_and_a_write_over_uas_with_streams(disk):
    answer = one(disk, inquiry(), 36)
    assert answer.status == uas.Iu(uas.IuId.SENSE, answer.tag, GOOD)
    assert answer.data == scsi.inquiry_data()
    capacity = one(disk, struct.pack(">B9x", scsi.Op.READ_CAPACITY_10), 8)
    assert struct.unpack(">II", capacity.data) == (DEFAULT_CAPACITY_BLOCKS - 1, BLOCK_SIZE)
    for lba, blocks in ((12345, 3), (0, 2), (7, 64)):  # 64 blocks: a whole 32 KiB stream
        read = one(disk, read_10(lba, blocks), blocks * BLOCK_SIZE)
        assert read.status.status == GOOD and read.data == lba_bytes(lba, blocks)
    written = bytearray(lba_bytes(77, 4))
    written[1500] ^= 0x40
    disk.platform.control(VENDOR_OUT, usb3.Request.CLEAR_TELEMETRY, 0, 0, b"")
    write = one(disk, write_10(77, 4), 4 * BLOCK_SIZE, "out", bytes(written))
    assert write.status.status == GOOD
    telemetry = scsi.parse_telemetry(one(disk, inquiry(scsi.VPD_TELEMETRY), 255).data)
    assert telemetry["write_mismatches"] == 1 and telemetry["writes"] == 1


def test_a_read_whose_data_take_longer_than_the_hosts_stuck_guard_completes_checked(disk):
    """8 MiB in one READ(10): its status stream waits for all its data (~18 ms), longer than
    the simulated xHCI waits for a stream that moves nothing (10 ms); it failed with "no ERDY
    selecting a stream" while the data pipe was busy."""
    blocks = (8 << 20) // BLOCK_SIZE
    read = one(disk, read_10(4096, blocks), blocks * BLOCK_SIZE)
    assert read.status == uas.Iu(uas.IuId.SENSE, read.tag, GOOD)
    assert read.data == lba_bytes(4096, blocks)


def test_an_unknown_opcode_gets_check_condition_on_the_status_stream_of_its_tag(disk):
    failed = one(disk, bytes((0xC7,)) + bytes(9))
    assert failed.status.kind is uas.IuId.SENSE
    assert failed.status.status == uas.Status.CHECK_CONDITION
    assert scsi.parse_sense(failed.status.sense)[:2] == (
        scsi.SenseKey.ILLEGAL_REQUEST, scsi.Asc.INVALID_COMMAND_OPERATION_CODE)
    assert one(disk, read_10(5, 1), BLOCK_SIZE).data == lba_bytes(5, 1)


@pytest.mark.parametrize("depth", [4, 16])
def test_queued_commands_each_move_on_their_own_tags_streams(disk, depth):
    """Reads and writes queued ``depth`` deep: every command's data on its tag's stream, the
    bytes the pattern, the writes clean in the device's check; the telemetry saw more than one
    and at most ``depth`` tags outstanding. (vl805 tokens the command pipe 20 µs after its last
    IU, longer than a 4 KiB command takes: the first command is 128 KiB, so the next IUs come
    while it moves.)"""
    disk.platform.control(VENDOR_OUT, usb3.Request.CLEAR_TELEMETRY, 0, 0, b"")
    commands = []
    for i in range(2 * depth):
        tag, blocks = next(_TAGS), 256 if i == 0 else 1 + i % 8
        if i % 3 == 2:
            commands.append(UasCommand(tag, write_10(900 + 8 * i, blocks), blocks * BLOCK_SIZE,
                                       "out", lba_bytes(900 + 8 * i, blocks)))
        else:
            commands.append(UasCommand(tag, read_10(8 * i, blocks), blocks * BLOCK_SIZE))
    run(disk, commands, queue_depth=depth)
    for i, command in enumerate(commands):
        assert command.status == uas.Iu(uas.IuId.SENSE, command.tag, GOOD)
        if command.direction == "in":
            assert command.data == lba_bytes(8 * i, command.length // BLOCK_SIZE)
    telemetry = scsi.parse_telemetry(one(disk, inquiry(scsi.VPD_TELEMETRY), 255).data)
    assert telemetry["write_mismatches"] == 0
    assert 2 <= telemetry["uas_tags_max"] <= depth


def _complete(platform, endpoints):
    """Reap until a transfer on each of ``endpoints`` completed; their completions."""
    done = {}
    for _ in range(200):
        for completion in platform.reap(0.001):
            done[completion.transfer.endpoint] = completion
        if set(endpoints) <= set(done):
            return done
    raise AssertionError(f"no completion on {sorted(set(endpoints) - set(done))}: {done}")


def test_a_host_that_primes_the_pipe_and_refuses_with_nostream_gets_every_command_done(disk):
    """A host that primes each stream pipe with the Prime Stream ID instead of naming a stream
    (USB 3.2 §8.12.1.4's reserved ID; device controllers report it as a "prime": Linux's dwc3,
    cdnsp) and answers a selection it holds no transfer for with NoStream: queued reads and
    writes complete checked; a READ whose status transfer the driver submits late has its
    status stream refused, selected again once the host primes for the late transfer, and its
    SENSE arrives; the spare transfer that primed the pipe gets its own command's SENSE; the
    same for a WRITE whose data-out transfer comes late."""
    platform = disk.platform
    platform.prime_pipes(STREAM_PIPES)
    try:
        platform.control(VENDOR_OUT, usb3.Request.CLEAR_TELEMETRY, 0, 0, b"")
        commands = []
        for i in range(8):
            tag, blocks = next(_TAGS), 1 + i % 4
            if i % 3 == 2:
                commands.append(UasCommand(tag, write_10(600 + 8 * i, blocks),
                                           blocks * BLOCK_SIZE, "out",
                                           lba_bytes(600 + 8 * i, blocks)))
            else:
                commands.append(UasCommand(tag, read_10(8 * i, blocks), blocks * BLOCK_SIZE))
        run(disk, commands, queue_depth=4)
        for i, command in enumerate(commands):
            assert command.status == uas.Iu(uas.IuId.SENSE, command.tag, GOOD)
            if command.direction == "in":
                assert command.data == lba_bytes(8 * i, command.length // BLOCK_SIZE)
        assert platform.counters()["nostreams"] == 0
        assert platform.counters()["stream_errors"] == 0

        spare, late = 30, 31
        platform.submit([Transfer(uas.EP_STATUS, STATUS_LENGTH, stream_id=spare)])
        platform.submit([Transfer(uas.EP_DATA_IN, 2 * BLOCK_SIZE, stream_id=late),
                         Transfer(uas.EP_COMMAND, uas.COMMAND_SIZE,
                                  uas.command_iu(late, read_10(40, 2)))])
        data = _complete(platform, (uas.EP_DATA_IN, uas.EP_COMMAND))[uas.EP_DATA_IN].data
        assert data == lba_bytes(40, 2)
        assert not platform.reap(0.0005)  # its SENSE's stream refused: no transfer on it yet
        assert platform.counters()["nostreams"] == 1
        platform.submit([Transfer(uas.EP_STATUS, STATUS_LENGTH, stream_id=late)])
        sense = _complete(platform, (uas.EP_STATUS,))[uas.EP_STATUS]
        assert uas.parse_iu(sense.data) == uas.Iu(uas.IuId.SENSE, late, GOOD)
        platform.submit([Transfer(uas.EP_COMMAND, uas.COMMAND_SIZE,
                                  uas.command_iu(spare, bytes(6)))])  # TEST UNIT READY
        done = _complete(platform, (uas.EP_COMMAND, uas.EP_STATUS))
        assert uas.parse_iu(done[uas.EP_STATUS].data) == uas.Iu(uas.IuId.SENSE, spare, GOOD)

        # The same on the data-out pipe: a WRITE whose data transfer comes late (the refusal
        # a zero-length data packet naming NoStream), a spare transfer priming the pipe.
        written = lba_bytes(700, 2)
        platform.submit([Transfer(uas.EP_DATA_OUT, len(written), written, stream_id=spare),
                         Transfer(uas.EP_STATUS, STATUS_LENGTH, stream_id=late),
                         Transfer(uas.EP_COMMAND, uas.COMMAND_SIZE,
                                  uas.command_iu(late, write_10(700, 2)))])
        _complete(platform, (uas.EP_COMMAND,))
        assert not platform.reap(0.0005)
        assert platform.counters()["nostreams"] == 2
        platform.submit([Transfer(uas.EP_DATA_OUT, len(written), written, stream_id=late)])
        done = _complete(platform, (uas.EP_DATA_OUT, uas.EP_STATUS))
        assert done[uas.EP_DATA_OUT].transfer.stream_id == late
        assert uas.parse_iu(done[uas.EP_STATUS].data) == uas.Iu(uas.IuId.SENSE, late, GOOD)
        platform.submit([Transfer(uas.EP_STATUS, STATUS_LENGTH, stream_id=spare),
                         Transfer(uas.EP_COMMAND, uas.COMMAND_SIZE,
                                  uas.command_iu(spare, write_10(800, 2)))])
        done = _complete(platform, (uas.EP_DATA_OUT, uas.EP_STATUS))
        assert uas.parse_iu(done[uas.EP_STATUS].data) == uas.Iu(uas.IuId.SENSE, spare, GOOD)
        telemetry = scsi.parse_telemetry(one(disk, inquiry(scsi.VPD_TELEMETRY), 255).data)
        # LBA 700's pattern written at LBA 800: every word of it counted, and nothing else.
        assert telemetry["write_mismatches"] == 2 * BLOCK_SIZE // 4
        assert telemetry["writes"] == 2 + len([c for c in commands if c.direction == "out"])
        assert platform.counters()["stream_errors"] == 0
    finally:
        platform.alloc_streams(STREAM_PIPES, MAX_STREAMS)  # named primes again


def test_back_on_alternate_0_bulk_only_transport_answers_without_streams(disk):
    platform = disk.platform
    platform.free_streams(STREAM_PIPES)
    platform.control(0x01, SET_INTERFACE, 0, 0, b"")
    try:
        assert platform.control(0x81, GET_INTERFACE, 0, 0, 1) == b"\0"
        answer = Initiator(platform).command(read_10(3, 2), 2 * BLOCK_SIZE)
        assert answer.csw.status == bot.CswStatus.PASSED and answer.data == lba_bytes(3, 2)
    finally:
        _uas(platform)
    assert one(disk, read_10(4, 1), BLOCK_SIZE).data == lba_bytes(4, 1)


def test_a_port_reset_drops_a_command_stuck_in_the_task_set_and_uas_comes_back(disk):
    """What Linux's uas does when a command times out: a port reset (usb_reset_device). A READ
    whose data stream the host never primes holds the device; after the reset (a Hot Reset and
    enumeration: configured again, alternate 0, no streams) the host's alternate 1 and streams
    bring UAS back, and the stuck command's tag is free."""
    platform = disk.platform
    tag = 1  # the tag a run with streams gives its first command (the lowest free)
    platform.submit([Transfer(uas.EP_COMMAND, uas.COMMAND_SIZE,
                              uas.command_iu(tag, read_10(0, 8)))])
    while not platform.reap(0.01):
        pass
    assert platform.bus_reset()
    assert platform.control(0x80, GET_CONFIGURATION, 0, 0, 1) == b"\1"
    assert platform.control(0x81, GET_INTERFACE, 0, 0, 1) == b"\0"
    _uas(platform)
    again = UasCommand(0, read_10(7, 2), 2 * BLOCK_SIZE)
    run(disk, [again])
    assert again.tag == tag and again.status == uas.Iu(uas.IuId.SENSE, tag, GOOD)
    assert again.data == lba_bytes(7, 2)


def test_a_port_reset_mid_read_frees_its_tag_and_the_next_command_on_it_gets_its_sense(
        usb3_storage_model):
    """What Linux's uas error handler does when queued READs time out while their data move
    (``uas_eh_device_reset_handler``, the VM's xHCI pass): a port reset in the middle of a 2 MiB
    read's data stream. After it, alternate 1 and streams again, and the next command on the
    same tag reads its own blocks with GOOD status. Before the Hot Reset reached the storage
    path (``gateware/usb3/storage.py``) the disk went on sending the read's data packets through
    the enumeration and answered no GET_DESCRIPTOR. (A simulator of its own: the one the module
    shares must not inherit a broken disk.)"""
    with open_transport(DISK) as transport:
        platform = transport.platform
        _uas(platform)
        tag = 1
        platform.submit([
            Transfer(uas.EP_STATUS, STATUS_LENGTH, stream_id=tag),
            Transfer(uas.EP_DATA_IN, 2 << 20, stream_id=tag),
            Transfer(uas.EP_COMMAND, uas.COMMAND_SIZE,
                     uas.command_iu(tag, read_10(0, 4096)))])
        done = []
        while not any(c.transfer.endpoint == uas.EP_COMMAND for c in done):
            done += platform.reap(0.01)
        done += platform.reap(0.001)  # 1 ms of bus time: the data stream under way
        assert not any(c.transfer.endpoint == uas.EP_DATA_IN for c in done)
        assert platform.bus_reset()
        _uas(platform)
        again = UasCommand(0, read_10(7, 2), 2 * BLOCK_SIZE)
        run(transport, [again])
        assert again.tag == tag and again.status == uas.Iu(uas.IuId.SENSE, tag, GOOD)
        assert again.data == lba_bytes(7, 2)
