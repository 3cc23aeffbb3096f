"""Task management and bad tags on the SuperSpeed null disk's UAS alternate with bulk streams
(``sim:usb3?design=storage``, Verilator): what ``test_usb2_uas_sim.py`` checks at high speed —
OVERLAPPED TAG ATTEMPTED, ABORT TASK, LOGICAL UNIT RESET, a full task set — with every IU on the
status stream of its tag, and a command whose streams the host never primed (one simulator for
the module).

The transfers are submitted one by one (:class:`StreamHost`), not by
:class:`~busprobe.backends.usb.uas.UasRun`: a test holds a READ by not queueing its data
transfer yet (the data-in endpoint's ring fills, the engine waits mid-data with the command
executing) while it queues IUs behind it, as ``_held_read`` does at high speed.
"""

from __future__ import annotations

import pytest
from busprobe.backends.usb.requests import VENDOR_OUT
from busprobe.backends.usb.transfers import Transfer, run_plan, silence_for
from busprobe.backends.usb.uas import STATUS_LENGTH, UasCommand, UasRun
from busprobe.protocol import scsi, uas, usb3
from busprobe.protocol.storage import BLOCK_SIZE, lba_bytes
from busprobe.protocol.streams import MAX_STREAMS
from busprobe.sim.usb2.tests.storage_client import inquiry, read_10
from busprobe.targets import open_transport

pytestmark = pytest.mark.sim

DISK = "sim:usb3?host=vl805&design=storage"
GOOD = uas.Status.GOOD
SET_INTERFACE = 11
#: The held READ: 128 KiB, far more than the data-in endpoint's ring holds, so the engine is
#: still in its data when the test's IUs arrive.
HELD_BLOCKS = 256
#: Simulated seconds a test waits to see that nothing comes (a 4 KiB command takes ~15 µs).
QUIET = 100e-6


def _uas(platform):
    platform.control(0x01, SET_INTERFACE, uas.UAS_ALTERNATE, 0, b"")
    platform.alloc_streams(uas.STREAM_PIPES, MAX_STREAMS)


@pytest.fixture(scope="module")
def disk(usb3_storage_model):
    with open_transport(DISK) as transport:
        _uas(transport.platform)
        yield transport


class StreamHost:
    """UAS with bulk streams driven transfer by transfer on a platform's queue.

    Linux's ``uas`` queues a command's status transfer (and its data transfer) on the stream of
    its tag before the COMMAND IU (``uas_submit_urbs``), and completes the command when both are
    in; a test here may leave the data transfer out (the device's data then wait in its ring
    for the stream to be primed) or queue nothing at all. Every transfer is named, and
    :meth:`wait` reaps until the named one is in (others are kept for later waits).

    Parameters
    ----------
    platform : UsbPlatform
        With streams allocated on the status and data pipes.
    """

    def __init__(self, platform) -> None:
        self.platform = platform
        self.done: dict[object, object] = {}

    def submit(self, *transfers: Transfer) -> None:
        self.platform.submit(list(transfers))

    def command(self, tag: int, cdb: bytes, *, status: bool = True, data: int = 0) -> None:
        """A COMMAND IU for ``tag`` sent; before it a status transfer on stream ``tag``
        (``status``) and a data-in transfer of ``data`` bytes on it (``data`` > 0)."""
        self.submit(*self.command_transfers(tag, cdb, status=status, data=data))
        self.wait(("command", tag))

    def command_transfers(self, tag: int, cdb: bytes, *, status: bool = True,
                          data: int = 0) -> list[Transfer]:
        """What :meth:`command` submits, in Linux's ``uas_submit_urbs`` order."""
        transfers = []
        if status:
            transfers.append(self.status(tag))
        if data:
            transfers.append(self.data_in(tag, data))
        return [*transfers, Transfer(uas.EP_COMMAND, uas.COMMAND_SIZE,
                                     uas.command_iu(tag, cdb), tag=("command", tag))]

    def task(self, tag: int, function: int, task_tag: int = 0) -> None:
        """A TASK MANAGEMENT IU, its RESPONSE awaited on status stream ``tag``."""
        iu = uas.task_management_iu(tag, function, task_tag=task_tag)
        self.submit(self.status(tag), Transfer(uas.EP_COMMAND, len(iu), iu, tag=("task", tag)))
        self.wait(("task", tag))

    @staticmethod
    def status(tag: int) -> Transfer:
        return Transfer(uas.EP_STATUS, STATUS_LENGTH, tag=("status", tag), stream_id=tag)

    @staticmethod
    def data_in(tag: int, length: int) -> Transfer:
        return Transfer(uas.EP_DATA_IN, length, tag=("data", tag), stream_id=tag)

    def wait(self, name: object, timeout: float = 0.05):
        """The completion of the transfer named ``name`` (its IU parsed for a status
        transfer); fails when ``timeout`` simulated seconds pass without it."""
        while name not in self.done:
            got = self.platform.reap(timeout)
            assert got, f"{name} did not complete within {timeout * 1e3:.0f} ms simulated"
            for completion in got:
                assert not completion.stalled, f"{completion.transfer.tag} stalled"
                self.done.setdefault(completion.transfer.tag, []).append(completion)
        completion = self.done[name].pop(0)
        if not self.done[name]:
            del self.done[name]
        if name[0] == "status":
            return uas.parse_iu(completion.data)
        return completion.data

    def quiet(self, seconds: float = QUIET) -> None:
        """Nothing completes for ``seconds`` simulated seconds."""
        got = self.platform.reap(seconds)
        assert not got, f"{[c.transfer.tag for c in got]} completed"

    def held_read(self, tag: int) -> None:
        """A READ of :data:`HELD_BLOCKS` from LBA 0 with its status transfer queued but not its
        data transfer: the engine waits mid-data."""
        self.command(tag, read_10(0, HELD_BLOCKS))

    def finish_held_read(self, tag: int) -> None:
        self.submit(self.data_in(tag, HELD_BLOCKS * BLOCK_SIZE))
        assert self.wait(("data", tag)) == lba_bytes(0, HELD_BLOCKS)
        assert self.wait(("status", tag)) == uas.Iu(uas.IuId.SENSE, tag, GOOD)


def one(disk, cdb, length=0):
    """One command through :class:`UasRun` with streams (the lowest free tag: 1)."""
    command = UasCommand(1, cdb, length)
    plan = UasRun([command], 1, what="UAS", streams=True)
    run_plan(disk.platform, plan, what="UAS", silence=silence_for(max(length, 64)))
    return command


def _clear(disk):
    disk.platform.control(VENDOR_OUT, usb3.Request.CLEAR_TELEMETRY, 0, 0, b"")


def _telemetry(disk):
    return scsi.parse_telemetry(one(disk, inquiry(scsi.VPD_TELEMETRY), 255).data)


def _works(disk, lba=9):
    answer = one(disk, read_10(lba, 2), 2 * BLOCK_SIZE)
    assert answer.status == uas.Iu(uas.IuId.SENSE, 1, GOOD)
    assert answer.data == lba_bytes(lba, 2)


def test_a_tag_already_outstanding_gets_overlapped_on_its_status_stream_and_the_first_completes(
        disk):
    """Tag 3 is reused while its READ executes. (Linux's ``uas`` never does: its tags are the
    SCSI layer's, unique while outstanding; a host that did would queue the second command's
    status transfer on stream 3 behind the first's, as here.) The first command's status
    transfer gets its SENSE GOOD after its data, the second the RESPONSE IU OVERLAPPED TAG
    ATTEMPTED (UAS-2: the device does not execute it), counted; the next command works. (That
    the first command runs to its end is the task set's documented departure: SAM-5 §5.10
    aborts the task set.)"""
    host = StreamHost(disk.platform)
    _clear(disk)
    host.held_read(3)
    host.command(3, read_10(3, 1))
    host.quiet()
    host.finish_held_read(3)
    assert host.wait(("status", 3)) == uas.Iu(uas.IuId.RESPONSE, 3,
                                              uas.ResponseCode.OVERLAPPED_TAG)
    _works(disk)
    telemetry = _telemetry(disk)
    assert telemetry["uas_overlapped_tags"] == 1 and telemetry["reads"] == 2


def test_abort_task_removes_a_queued_command_which_is_never_executed(disk):
    """Tag 5 queued behind the held READ, then ABORT TASK of it (tag 6): TMF COMPLETE on
    status stream 6 once the engine is between commands; 5 is never executed (no data, no
    SENSE; the test queued no transfer on stream 5, Linux's ``uas`` would unlink the ones it
    had queued for a command it aborts)."""
    host = StreamHost(disk.platform)
    _clear(disk)
    host.held_read(4)
    host.command(5, read_10(7, 1), status=False)
    host.task(6, uas.TaskFunction.ABORT_TASK, task_tag=5)
    host.finish_held_read(4)
    assert host.wait(("status", 6)) == uas.Iu(uas.IuId.RESPONSE, 6,
                                              uas.ResponseCode.TMF_COMPLETE)
    _works(disk)
    telemetry = _telemetry(disk)
    assert telemetry["uas_aborted_tasks"] == 1 and telemetry["reads"] == 2


def test_logical_unit_reset_removes_every_queued_command_and_the_disk_answers_again(disk):
    host = StreamHost(disk.platform)
    _clear(disk)
    host.held_read(7)
    for tag in (8, 9):
        host.command(tag, read_10(tag, 1), status=False)
    host.task(10, uas.TaskFunction.LOGICAL_UNIT_RESET)
    host.finish_held_read(7)
    assert host.wait(("status", 10)) == uas.Iu(uas.IuId.RESPONSE, 10,
                                               uas.ResponseCode.TMF_COMPLETE)
    _works(disk)
    telemetry = _telemetry(disk)
    # One strobe per reset, however many it removed; the held READ and _works' READ ran.
    assert telemetry["uas_aborted_tasks"] == 1 and telemetry["reads"] == 2


def test_every_allocated_stream_carries_a_command_outstanding_and_none_is_task_set_full(disk):
    """The task set is as deep as the streams (32): with tags = stream IDs 1..32 a host has at
    most 32 commands outstanding, each in a slot, so TASK SET FULL cannot be reached with
    streams. (A 33rd command needs a tag past the streams the host can allocate: its status,
    whatever it said, could go on no stream; Linux's ``uas`` keeps ``can_queue`` below the
    streams it got. High speed tests TASK SET FULL, ``test_usb2_uas_sim.py``.) Here the held
    READ on stream 1 and 31 one-block READs on streams 2..32 behind it: every one completes
    GOOD with its own data, the telemetry saw 32 outstanding and no TASK SET FULL."""
    host = StreamHost(disk.platform)
    _clear(disk)
    host.held_read(1)
    tags = range(2, uas.TASK_SET_DEPTH + 1)
    # All in one submission: the simulated xHCI gives up on a primed stream the device has
    # not selected for 10 ms (STUCK_CYCLES), and a round trip per command would reach that.
    host.submit(*(transfer for tag in tags
                  for transfer in host.command_transfers(tag, read_10(100 + tag, 1),
                                                         data=BLOCK_SIZE)))
    for tag in tags:
        host.wait(("command", tag))
    host.finish_held_read(1)
    for tag in tags:
        assert host.wait(("data", tag)) == lba_bytes(100 + tag, 1)
        assert host.wait(("status", tag)) == uas.Iu(uas.IuId.SENSE, tag, GOOD)
    telemetry = _telemetry(disk)
    assert telemetry["uas_tags_max"] == uas.TASK_SET_DEPTH
    assert telemetry["uas_task_set_full"] == 0 and telemetry["reads"] == uas.TASK_SET_DEPTH


def test_ius_with_a_tag_no_allocated_stream_carries_are_dropped_counted_and_the_next_works(
        disk):
    """COMMAND IUs with tags 33 (past the 32 streams) and 0 (stream 0 is reserved once streams
    are allocated), and a LOGICAL UNIT RESET with tag 33. With streams a tag is the Stream ID
    of its command's data and status (UAS), and only the host primes a stream, one of those it
    allocated (USB 3.2 §8.12.1.4): no host can queue a transfer on stream 33 or 0, so the
    test queues none, and any answer the device made would wait at the front of its status
    ring for good, the next commands' behind it. So the device drops each such IU: nothing
    executed or answered (SAM-5: it never becomes a command of the task set; the host's own
    time-out and reset recover it), counted in ``uas_bad_tags``; nothing completes and the next
    valid command works."""
    host = StreamHost(disk.platform)
    _clear(disk)
    past = MAX_STREAMS + 1
    host.command(past, read_10(past, 1), status=False)
    host.command(0, read_10(0, 1), status=False)
    iu = uas.task_management_iu(past, uas.TaskFunction.LOGICAL_UNIT_RESET)
    host.submit(Transfer(uas.EP_COMMAND, len(iu), iu, tag=("task", past)))
    host.wait(("task", past))
    host.quiet()
    _works(disk)
    telemetry = _telemetry(disk)
    assert telemetry["uas_bad_tags"] == 3 and telemetry["reads"] == 1


def test_a_command_on_streams_primed_late_waits_for_them_and_completes(disk):
    """A COMMAND IU sent before any transfer on its tag's streams (Linux's ``uas`` queues them
    first): the device executes it, its data and SENSE wait in the endpoints' rings for the
    streams (USB 3.2 §8.12.1.4: only the host primes a stream); nothing moves until the host
    queues the transfers, then both complete and the next command works."""
    host = StreamHost(disk.platform)
    host.command(12, read_10(11, 2), status=False)
    host.quiet()
    host.submit(host.status(12), host.data_in(12, 2 * BLOCK_SIZE))
    assert host.wait(("data", 12)) == lba_bytes(11, 2)
    assert host.wait(("status", 12)) == uas.Iu(uas.IuId.SENSE, 12, GOOD)
    _works(disk)


def test_a_command_on_streams_never_primed_is_cleared_by_the_hosts_reset(disk):
    """A COMMAND IU whose streams the host never primes: its data and SENSE stay at the front
    of the data-in and status rings, so the next command's data and SENSE wait behind them
    (the device presents its rings in order: USB 3.2 lets the device choose which primed
    stream it serves, and Linux's ``uas`` queues a command's transfers before its COMMAND IU,
    so it never meets this). A host that did would time the command out and, as Linux's
    ``uas`` does, unlink its transfers and reset the device (``uas_eh_device_reset_handler``:
    ``usb_reset_device``, then SET_INTERFACE and the streams allocated again in
    ``uas_post_reset``); the same here (SET_INTERFACE, streams freed and allocated again):
    the disk answers again."""
    platform = disk.platform
    host = StreamHost(platform)
    host.command(13, read_10(13, 1), status=False)
    host.command(14, read_10(14, 1), data=BLOCK_SIZE)
    host.quiet()
    platform.cancel()
    platform.free_streams(uas.STREAM_PIPES)
    _uas(platform)
    _works(disk)
