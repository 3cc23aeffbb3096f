"""The cocotb DMA helper's descriptor tables (:class:`~busprobe.sim.pcie.dma_regs.DmaRegisters`)
keep the room the driver's :class:`~busprobe.backends.pcie.descriptor_table.DescriptorTable`
keeps: never more descriptors outstanding than the engine's table holds, the rest written as the
running engine consumes them (read from ``table_loop_status``), against a BAR that answers as
the engine would (no simulator)."""

from __future__ import annotations

import asyncio

import pytest
from busprobe.backends.pcie.descriptor_table import DescriptorTable
from busprobe.protocol import pcie as proto
from busprobe.sim.pcie.dma_regs import DmaRegisters


class _Engine:
    """BAR0 of a core whose writer engine takes ``per_wait`` descriptors per wait when enabled."""

    def __init__(self, per_wait: int) -> None:
        self.per_wait = per_wait
        self.table = DescriptorTable("writer", bar=None)  # for its register offsets only
        self.enabled = False
        self.pushed: list[int] = []  # each descriptor's address, as the engine got it
        self.consumed = 0
        self.most_outstanding = 0
        self._address_low = 0

    async def write32(self, offset: int, value: int) -> None:
        reg = self.table.reg
        if offset == reg("enable"):
            self.enabled = bool(value)
        elif offset == reg("table_reset"):
            self.pushed, self.consumed = [], 0
        elif offset == reg("table_value") + 4:
            self._address_low = value
        elif offset == reg("table_we"):
            self.pushed.append(value << 32 | self._address_low)
            outstanding = len(self.pushed) - self.consumed
            assert outstanding <= proto.DMA_TABLE_DEPTH, "a descriptor written into a full table"
            self.most_outstanding = max(self.most_outstanding, outstanding)

    async def read32(self, offset: int) -> int:
        assert offset == self.table.reg("table_loop_status")
        return self.consumed  # count << 16 | index: the same number below 2**16

    async def wait_cycles(self, cycles: int) -> None:
        if self.enabled:
            self.consumed = min(len(self.pushed), self.consumed + self.per_wait)


def test_a_full_table_is_refilled_as_the_running_engine_consumes():
    engine = _Engine(per_wait=100)
    regs = DmaRegisters(engine)
    addresses = [0x1000_0000 + 4096 * i for i in range(600)]

    async def run() -> None:
        await regs.reset("writer")
        await regs.enable("writer")
        for address in addresses:
            await regs.queue("writer", address, 4096)

    asyncio.run(run())
    assert engine.pushed == addresses  # every descriptor, in order
    assert engine.most_outstanding == proto.DMA_TABLE_DEPTH  # filled, never overfilled
    assert regs.tables["writer"].room == proto.DMA_TABLE_DEPTH - (600 - engine.consumed)


def test_a_full_table_with_the_engine_off_is_an_error_not_a_hang():
    engine = _Engine(per_wait=100)
    regs = DmaRegisters(engine)

    async def run() -> None:
        await regs.reset("writer")
        for i in range(proto.DMA_TABLE_DEPTH + 1):
            await regs.queue("writer", 4096 * i, 4096)

    with pytest.raises(RuntimeError, match="table full"):
        asyncio.run(run())
    assert len(engine.pushed) == proto.DMA_TABLE_DEPTH


def test_a_table_the_engine_emptied_before_it_was_disabled_has_room_again():
    engine = _Engine(per_wait=1000)
    regs = DmaRegisters(engine)

    async def run() -> None:
        await regs.reset("writer")
        for _ in range(3):  # three runs of 200 descriptors, the table never reset between them
            for i in range(200):
                await regs.queue("writer", 4096 * i, 4096)
            await regs.enable("writer")
            await engine.wait_cycles(1)  # the engine takes them all
            await regs.enable("writer", False)

    asyncio.run(run())
    assert len(engine.pushed) == 600 and engine.consumed == 600


def test_the_read_path_reset_forgets_both_tables_as_the_driver_does():
    engine = _Engine(per_wait=0)
    regs = DmaRegisters(engine)

    async def run() -> None:
        for i in range(10):
            await regs.queue("writer", 4096 * i, 4096)
        await regs.read_reset()

    engine.read32 = _status_then_done(engine.read32)
    asyncio.run(run())
    assert engine.pushed == [] and all(table.room == proto.DMA_TABLE_DEPTH and not table.pending
                                       for table in regs.tables.values())


def _status_then_done(read32):
    async def read(offset: int) -> int:
        if offset == proto.csr("busprobe_rd_status"):
            return 0  # the reset is done
        return await read32(offset)
    return read


def test_the_driver_table_gives_room_from_loop_status():
    table = DescriptorTable("reader", bar=None)
    for i in range(proto.DMA_TABLE_DEPTH + 3):
        table.append(4096 * i, 4096, 0)
    first = table.push_writes()
    assert table.pushed == proto.DMA_TABLE_DEPTH and table.room == 0 and len(table.pending) == 3
    assert first[0] == (table.reg("table_value"), 4096)  # the length word once, then 2 a row
    assert len(first) == 1 + 2 * proto.DMA_TABLE_DEPTH
    assert table.push_writes() == []
    assert table.saw_status(2) == 2 and table.room == 2  # the engine took two
    assert len(table.push_writes()) == 2 * 2 and len(table.pending) == 1 and table.room == 0
    table.stop_writes()
    assert table.room == proto.DMA_TABLE_DEPTH and not table.pending
