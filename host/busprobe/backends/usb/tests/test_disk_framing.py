"""The null disk's own framing (:mod:`busprobe.backends.usb.disk`): commands at increasing LBAs
that wrap at the capacity, OUT data made from the LBA pattern, IN data and statuses checked
(no I/O: the plans' outcomes are filled in as the disk would answer)."""

import struct

import pytest
from busprobe.backends.usb.bot import BotCommands
from busprobe.backends.usb.disk import DiskFraming
from busprobe.protocol import uas
from busprobe.protocol.storage import lba_bytes
from busprobe.transport import InvalidRequest, TransportError


def _answer(run, data):
    for command, chunk in zip(run.plan.commands, data, strict=True):
        command.status = uas.Iu(uas.IuId.SENSE, command.tag, uas.Status.GOOD)
        command.data = chunk
    run.plan.done = len(data)


def test_uas_reads_are_checked_against_the_lba_pattern_word_by_word():
    framing = DiskFraming("disk", BotCommands("disk"))
    run = framing.uas_run("in", 1024, 2, queue_depth=2)
    assert run.lbas == [0, 2]
    assert [struct.unpack_from(">I", c.cdb, 2)[0] for c in run.plan.commands] == [0, 2]
    second = bytearray(lba_bytes(2, 2))
    second[517] ^= 1
    second[900] ^= 1
    _answer(run, [lba_bytes(0, 2), bytes(second)])
    assert framing.check(run) == (2, 1024 + 517)


def test_a_command_that_did_not_pass_is_one_line_naming_its_tag():
    framing = DiskFraming("disk", BotCommands("disk"))
    run = framing.uas_run("in", 512, 1, queue_depth=1)
    _answer(run, [lba_bytes(0, 1)])
    run.plan.commands[0].status = uas.Iu(uas.IuId.SENSE, 1, uas.Status.CHECK_CONDITION)
    with pytest.raises(TransportError, match="UAS: tag 1"):
        framing.check(run)


def test_writes_carry_the_pattern_and_lbas_wrap_at_the_capacity():
    framing = DiskFraming("disk", BotCommands("disk"), capacity_blocks=8)
    first = framing.bot_run("out", 2048, 2)
    assert first.lbas == [0, 4] and first.plan.outgoing == [lba_bytes(0, 4), lba_bytes(4, 4)]
    assert framing.uas_run("out", 2048, 1, 1).lbas == [0]  # 8 blocks taken: back to LBA 0
    with pytest.raises(InvalidRequest, match="whole 512-byte blocks, at most 65535"):
        framing.validate(0x10000 * 512)
