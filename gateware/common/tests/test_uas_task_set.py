"""The UAS task set alone in Amaranth simulation: COMMAND and TASK MANAGEMENT IUs in on the
command pipe (a byte a beat as at high speed, four as at SuperSpeed), an engine that takes the
commands it offers and says when each is done, and the replies it queues for the status pipe."""

from __future__ import annotations

import pytest
from amaranth.sim import Simulator
from busprobe.gateware.common.uas_queue import REPLIES_DEPTH, UasTaskSet
from busprobe.protocol import uas

CODE = uas.ResponseCode


def _cdb(n: int) -> bytes:
    return bytes((0x28, 0, 0, 0, n >> 8, n & 0xFF, 0, 0, 1, 0)) + bytes(6)


class Bench:
    """Drives a :class:`UasTaskSet` from one testbench: IUs in, commands taken and done,
    replies popped; counts the strobes."""

    def __init__(self, ctx, dut, width):
        self.ctx, self.dut, self.width = ctx, dut, width
        self.strobes = {"task_set_full": 0, "overlapped": 0, "aborted": 0, "clear_sense": 0,
                        "bad_tag": 0}

    async def tick(self):
        await self.ctx.tick("usb")
        for name in self.strobes:
            self.strobes[name] += self.ctx.get(getattr(self.dut, name))

    async def send(self, iu: bytes):
        """``iu`` as one packet on the command pipe, a beat whenever it is ready."""
        ctx, packets, width = self.ctx, self.dut.packets, self.width
        for at in range(0, len(iu), width):
            chunk = iu[at:at + width]
            payload = {"data": int.from_bytes(chunk.ljust(width, b"\0"), "little"),
                       "last": at + width >= len(iu)}
            if width > 1:
                payload["keep"] = (1 << len(chunk)) - 1
            ctx.set(packets.valid, 1)
            ctx.set(packets.payload, payload)
            for _ in range(200):
                ready = ctx.get(packets.ready)
                await self.tick()
                if ready:
                    break
            else:
                raise AssertionError("the command pipe stayed not ready")
        ctx.set(packets.valid, 0)
        await self.settle()

    async def settle(self, cycles=24):
        for _ in range(cycles):
            await self.tick()

    async def take(self) -> tuple[int, bytes]:
        """The command the task set offers: its tag and CDB (the engine starts it)."""
        ctx, dut = self.ctx, self.dut
        for _ in range(100):
            if ctx.get(dut.command_valid):
                break
            await self.tick()
        else:
            raise AssertionError("no command offered")
        tag, cdb = ctx.get(dut.tag), ctx.get(dut.cdb).to_bytes(16, "little")
        ctx.set(dut.take, 1)
        await self.tick()
        ctx.set(dut.take, 0)
        await self.settle(2)
        return tag, cdb

    async def done(self):
        self.ctx.set(self.dut.done, 1)
        await self.tick()
        self.ctx.set(self.dut.done, 0)
        await self.settle(2)

    async def replies(self) -> list[tuple[int, str | CODE]]:
        """Every reply waiting, as ``(tag, "TASK SET FULL" or the response code)``."""
        ctx, dut, out = self.ctx, self.dut, []
        while ctx.get(dut.reply_valid):
            full = ctx.get(dut.reply_full)
            out.append((ctx.get(dut.reply_tag),
                        "TASK SET FULL" if full else CODE(ctx.get(dut.reply_code))))
            ctx.set(dut.reply_taken, 1)
            await self.tick()
            ctx.set(dut.reply_taken, 0)
        await self.settle(2)
        return out

    def offered(self) -> bool:
        return bool(self.ctx.get(self.dut.command_valid))

    def outstanding(self) -> int:
        return self.ctx.get(self.dut.outstanding)


def simulate(script, *, width=1, depth=uas.TASK_SET_DEPTH, max_tag=None):
    dut = UasTaskSet(width=width, depth=depth, max_tag=max_tag)

    async def testbench(ctx):
        await script(Bench(ctx, dut, width))

    sim = Simulator(dut)
    sim.add_clock(1e-8, domain="usb")
    sim.add_testbench(testbench)
    sim.run()


def command(tag, n=0, lun=0):
    return uas.command_iu(tag, _cdb(n or tag), lun=lun)


def abort(tag, task_tag, lun=0):
    return uas.task_management_iu(tag, uas.TaskFunction.ABORT_TASK, task_tag, lun=lun)


@pytest.mark.parametrize("width", [1, 4])
def test_queued_commands_are_offered_with_their_tag_and_cdb_and_free_their_slot_when_done(
        width):
    async def script(b):
        for tag in (5, 6, 7):
            await b.send(command(tag))
        assert b.outstanding() == 3
        for tag in (5, 6, 7):
            assert await b.take() == (tag, _cdb(tag))
            await b.done()
        assert b.outstanding() == 0 and not b.offered() and await b.replies() == []
    simulate(script, width=width)


@pytest.mark.parametrize("width", [1, 4])
def test_abort_task_removes_a_queued_command_and_a_reused_slot_is_taken_out_of_arrival_order(
        width):
    """Round robin from the slot after the last taken: D, stored in the slot B's abort freed,
    runs before C, which came earlier (the device's order, not the host's)."""
    async def script(b):
        for tag in (1, 2, 3):  # slots 0, 1, 2
            await b.send(command(tag))
        assert (await b.take())[0] == 1
        await b.send(abort(100, task_tag=2))
        assert await b.replies() == [(100, CODE.TMF_COMPLETE)]
        assert b.strobes["aborted"] == 1 and b.outstanding() == 2
        await b.send(command(4))  # slot 1, freed by the abort
        await b.done()
        order = []
        for _ in range(2):
            order.append((await b.take())[0])
            await b.done()
        assert order == [4, 3]
        assert b.outstanding() == 0 and not b.offered()
    simulate(script, width=width)


def test_a_command_past_the_depth_is_answered_task_set_full_and_a_later_one_is_taken():
    async def script(b):
        for tag in range(10, 14):
            await b.send(command(tag))
        await b.send(command(14))
        assert await b.replies() == [(14, "TASK SET FULL")]
        assert b.strobes["task_set_full"] == 1 and b.outstanding() == 4
        assert (await b.take())[0] == 10
        await b.done()
        await b.send(command(14))
        assert await b.replies() == [] and b.outstanding() == 4
        assert (await b.take())[0] == 11
    simulate(script, depth=4)


def test_a_tag_outstanding_queued_or_executing_is_refused_as_overlapped_and_the_first_runs():
    async def script(b):
        await b.send(command(9, n=1))
        await b.send(command(8))
        assert (await b.take()) == (9, _cdb(1))
        await b.send(command(9, n=2))   # executing
        await b.send(command(8, n=3))   # queued
        assert await b.replies() == [(9, CODE.OVERLAPPED_TAG), (8, CODE.OVERLAPPED_TAG)]
        assert b.strobes["overlapped"] == 2 and b.outstanding() == 2
        await b.done()
        assert await b.take() == (8, _cdb(8))
    simulate(script)


def test_abort_of_the_executing_command_fails_and_of_an_unknown_tag_completes_removing_nothing():
    async def script(b):
        await b.send(command(1))
        await b.send(command(2))
        await b.take()
        await b.send(abort(50, task_tag=1))
        await b.send(abort(51, task_tag=77))
        assert await b.replies() == [(50, CODE.TMF_FAILED), (51, CODE.TMF_COMPLETE)]
        assert b.strobes["aborted"] == 0 and b.outstanding() == 2
        await b.done()
        assert (await b.take())[0] == 2
    simulate(script)


def test_logical_unit_reset_empties_the_queue_keeps_the_executing_one_and_clears_the_sense():
    async def script(b):
        for tag in (1, 2, 3, 4):
            await b.send(command(tag))
        await b.take()
        await b.send(uas.task_management_iu(60, uas.TaskFunction.LOGICAL_UNIT_RESET))
        assert await b.replies() == [(60, CODE.TMF_COMPLETE)]
        assert b.strobes["clear_sense"] == 1 and b.outstanding() == 1
        await b.done()
        assert b.outstanding() == 0 and not b.offered()
        await b.send(command(2))  # its tag is free again
        assert (await b.take())[0] == 2
    simulate(script)


def test_bad_ius_get_a_response_and_the_next_command_is_taken():
    async def script(b):
        await b.send(uas.task_management_iu(70, uas.TaskFunction.LOGICAL_UNIT_RESET, lun=1))
        await b.send(uas.task_management_iu(71, 0x40))   # CLEAR ACA
        await b.send(bytes((0x09, 0, 0, 72)) + bytes(12))  # no such IU
        await b.send(command(73)[:20])                   # a COMMAND IU cut short
        await b.send(command(74, lun=2))                 # queued: the engine fails its LUN
        assert await b.replies() == [(70, CODE.INCORRECT_LUN), (71, CODE.TMF_NOT_SUPPORTED),
                                     (72, CODE.INVALID_INFO_UNIT), (73, CODE.INVALID_INFO_UNIT)]
        assert (await b.take())[0] == 74 and b.ctx.get(b.dut.lun_bad)
    simulate(script)


def test_with_every_reply_place_taken_the_command_pipe_waits_and_nothing_is_lost():
    async def script(b):
        ius = [bytes((0x09, 0, 0, 80 + i)) + bytes(12) for i in range(REPLIES_DEPTH + 1)]
        for iu in ius:
            await b.send(iu)
        b.ctx.set(b.dut.packets.valid, 1)
        await b.settle(20)
        assert not b.ctx.get(b.dut.packets.ready)  # the last IU still waits for a place
        b.ctx.set(b.dut.packets.valid, 0)
        got = await b.replies()
        got += await b.replies()
        assert got == [(80 + i, CODE.INVALID_INFO_UNIT) for i in range(REPLIES_DEPTH + 1)]
    simulate(script)


def test_with_streams_ius_whose_tag_names_no_stream_are_dropped_and_counted():
    """Tags 33 and 0 with 32 streams: no stream could carry the answer, so nothing is carried
    out (the ABORT TASK of queued tag 1 removes nothing) or answered, each counted; a command
    on stream 32 is queued. Without streams tag 33 is a tag like any other."""
    async def script(b):
        await b.send(command(1))
        await b.send(command(33))
        await b.send(command(0))
        await b.send(abort(33, task_tag=1))
        await b.send(uas.task_management_iu(0, uas.TaskFunction.LOGICAL_UNIT_RESET))
        await b.send(bytes((0x09, 0, 0, 40)) + bytes(12))  # no such IU, and a tag past 32
        assert await b.replies() == [] and b.strobes["bad_tag"] == 5
        assert b.strobes["aborted"] == 0 and b.strobes["clear_sense"] == 0
        await b.send(command(32))
        assert b.outstanding() == 2
        assert [(await b.take())[0], await b.done(), (await b.take())[0]] == [1, None, 32]
    simulate(script, width=4, max_tag=32)

    async def no_streams(b):
        await b.send(command(33))
        assert (await b.take())[0] == 33 and b.strobes["bad_tag"] == 0
    simulate(no_streams, width=4)
