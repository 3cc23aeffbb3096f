"""UasRun's decisions, completion by completion (no I/O: a plan only says what to submit): up
to the queue depth of commands out with a status transfer each, the data transfer of the tag
the device names, the next command when a SENSE IU ends one, one clear error for an IU that
fits no command."""

import pytest
from busprobe.backends.usb.transfers import Completion
from busprobe.backends.usb.uas import STATUS_LENGTH, UasCommand, UasRun
from busprobe.protocol import uas
from busprobe.transport import TransportError


def done(transfer, data=b"", actual=None):
    return Completion(transfer, len(data) if actual is None else actual, data, 0.0)


def test_the_plan_follows_the_tags_the_device_names():
    commands = [UasCommand(tag, b"\x28" + bytes(9), 1024) for tag in (1, 2, 3)]
    plan = UasRun(commands, queue_depth=2)
    first = plan.start()
    assert [(t.endpoint, t.tag) for t in first] == [
        (uas.EP_COMMAND, "command"), (uas.EP_STATUS, "status")] * 2
    assert first[0].data == uas.command_iu(1, commands[0].cdb)
    status = first[1]
    # The device announces tag 2 first: its data transfer, and a status transfer again.
    data, again = plan.completed(done(status, uas.ready_iu(2, read=True)))
    assert (data.endpoint, data.length, data.tag) == (uas.EP_DATA_IN, 1024, ("data", 2))
    assert (again.endpoint, again.length) == (uas.EP_STATUS, STATUS_LENGTH)
    assert plan.completed(done(data, b"\x55" * 1024)) == []
    nxt = plan.completed(done(again, uas.sense_iu(2, uas.Status.GOOD)))
    assert nxt[0].data == uas.command_iu(3, commands[2].cdb)  # the third goes out now
    assert plan.order == [2] and commands[1].data == b"\x55" * 1024 and plan.moved == 1024


def test_an_iu_for_no_command_or_a_malformed_one_is_one_line():
    plan = UasRun([UasCommand(1, b"\0" * 6)])
    status = plan.start()[1]
    with pytest.raises(TransportError, match="READ_READY IU for tag 7, which no command"):
        plan.completed(done(status, uas.ready_iu(7, read=True)))
    with pytest.raises(TransportError, match="shorter than its 4-byte head"):
        plan.completed(done(status, b"\x03"))
    with pytest.raises(ValueError, match="distinct tags"):
        UasRun([UasCommand(1, b"\0"), UasCommand(1, b"\0")], queue_depth=2).start()


def test_a_long_run_reuses_a_tag_once_its_command_has_ended():
    commands = [UasCommand(1, b"\0" * 6), UasCommand(1, b"\0" * 6)]
    plan = UasRun(commands, queue_depth=1)
    status = plan.start()[1]
    again = plan.completed(done(status, uas.sense_iu(1, uas.Status.GOOD)))
    assert again[0].data == uas.command_iu(1, commands[1].cdb)
    plan.completed(done(again[1], uas.sense_iu(1, uas.Status.GOOD)))
    assert [c.status.status for c in commands] == [uas.Status.GOOD] * 2 and plan.done == 2


def test_a_sense_iu_ahead_of_its_data_waits_for_the_data_before_the_next_command():
    """The device may hand the SENSE IU over while the data's last packets are still in its
    endpoint: the command ends, and the next one goes, only when both are in (Linux's
    uas_try_complete)."""
    commands = [UasCommand(tag, b"\x28" + bytes(9), 1024) for tag in (1, 2)]
    plan = UasRun(commands, queue_depth=1)
    status = plan.start()[1]
    data, again = plan.completed(done(status, uas.ready_iu(1, read=True)))
    assert plan.completed(done(again, uas.sense_iu(1, uas.Status.GOOD))) == []
    assert plan.done == 0
    nxt = plan.completed(done(data, b"\x55" * 1024))
    assert nxt[0].data == uas.command_iu(2, commands[1].cdb) and plan.done == 1
