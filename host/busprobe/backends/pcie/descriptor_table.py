"""Host bookkeeping of one LitePCIe DMA engine's descriptor table (``writer`` or ``reader``).

The driver (:mod:`.driver`) queues each transfer's descriptors here; they go to the device as
the table has room, which the engine's ``table_loop_status`` tells (descriptors consumed).

The table says *which* register writes program the engine (:meth:`DescriptorTable.stop_writes`,
:meth:`DescriptorTable.push_writes`) and how much room it has (:attr:`DescriptorTable.room`,
kept by :meth:`DescriptorTable.saw_status` from ``table_loop_status``) apart from *how* the
registers are reached: the driver's blocking :class:`~.platform.Bar`
(:meth:`DescriptorTable.flush`, :meth:`DescriptorTable.poll`), or the cocotb tests' awaited BAR
of the simulated core (``sim/pcie/dma_regs.py``), so both program the engine with the same words
and the same room.
"""

from __future__ import annotations

from collections import deque

from ...protocol import pcie as proto
from ...transport import DeviceGone
from .platform import Bar, DmaBuffer, split_transfer

__all__ = ["DescriptorTable"]

_MASK32 = 0xFFFF_FFFF


class DescriptorTable:
    """One engine's table as the host has filled it.

    Parameters
    ----------
    name : str
        ``"writer"`` or ``"reader"`` (the LitePCIe engine, ``pcie_dma0_<name>_*`` registers).
    bar : Bar or None
        Where :meth:`flush` and :meth:`poll` go; ``None`` for a caller that reaches the registers
        itself (``sim/pcie/dma_regs.py`` awaits each access on the simulated BAR, with
        :meth:`push_writes` and :meth:`saw_status`).

    Attributes
    ----------
    pushed : int
        Descriptors written to the table since its reset.
    consumed : int
        Descriptors the engine took from the table (as of the last :meth:`poll` or
        :meth:`saw_status`).
    pending : deque of (address, length, flags)
        Descriptors queued but not yet written, for want of room.
    """

    def __init__(self, name: str, bar: Bar | None) -> None:
        self.name = name
        self.bar = bar
        self.pushed = 0
        self.consumed = 0
        self.value_word0: int | None = None  # length/flags word last written to table_value
        self.pending: deque[tuple[int, int, int]] = deque()  # (address, length, flags)

    def reg(self, what: str) -> int:
        """BAR0 offset of the engine's register ``what`` (e.g. ``"enable"``)."""
        return proto.csr(f"pcie_dma0_{self.name}_{what}")

    def stop_writes(self) -> list[tuple[int, int]]:
        """Forget every descriptor; the writes that disable the engine and empty its table."""
        self.pushed = self.consumed = 0
        self.value_word0 = None
        self.pending.clear()
        return [(self.reg("enable"), 0), (self.reg("table_loop_prog_n"), 0),
                (self.reg("table_reset"), 1)]

    def queue(self, buf: DmaBuffer, length: int) -> int:
        """Queue the descriptors of one transfer; returns the engine's count when it is done.

        The last descriptor of a transfer raises an MSI, and so does every half table's worth.
        """
        descs = split_transfer(buf.bus_address, length)
        half = proto.DMA_TABLE_DEPTH // 2
        for i, (address, size) in enumerate(descs):
            sequence = self.pushed + len(self.pending)
            # An MSI at the end of the transfer, and every half table so a long transfer's
            # remaining descriptors are pushed before the table runs dry.
            irq = i == len(descs) - 1 or sequence % half == half - 1
            flags = proto.DESC_LAST_DISABLE | (0 if irq else proto.DESC_IRQ_DISABLE)
            self.append(address, size, flags)
        return self.pushed + len(self.pending)

    def append(self, address: int, size: int, flags: int) -> None:
        """Queue one descriptor as given (written by :meth:`push_writes` when there is room)."""
        self.pending.append((address, size, flags))

    def descriptor_writes(self, address: int, size: int, flags: int) -> list[tuple[int, int]]:
        """The writes that put one descriptor in the table: ``table_value`` (length and flags,
        then the address's low word) and ``table_we`` (its high word, which pushes it)."""
        value, we = self.reg("table_value"), self.reg("table_we")
        writes = []
        # table_value keeps its words between descriptors: runs of equal-length descriptors
        # cost two MMIO writes each instead of three (less downstream link traffic).
        if self.value_word0 != size | flags:
            self.value_word0 = size | flags
            writes.append((value, size | flags))
        writes += [(value + 4, address & _MASK32), (we, address >> 32)]
        self.pushed += 1
        return writes

    @property
    def room(self) -> int:
        """Free slots in the engine's table: its depth less the descriptors written and not yet
        consumed (as far as the host knows)."""
        return proto.DMA_TABLE_DEPTH - (self.pushed - self.consumed)

    def push_writes(self) -> list[tuple[int, int]]:
        """Take pending descriptors while the table has :attr:`room`; the writes that push
        them."""
        room = self.room
        writes = []
        while self.pending and room > 0:
            writes += self.descriptor_writes(*self.pending.popleft())
            room -= 1
        return writes

    def flush(self) -> None:
        """Push pending descriptors while the table has room (known from loop_status)."""
        writes = self.push_writes()
        if writes:
            self.bar.write32_many(writes)

    def saw_status(self, status: int) -> int:
        """Account a ``table_loop_status`` value read from the engine (count << 16 | index);
        returns the descriptors consumed since the table reset."""
        if status == _MASK32:
            raise DeviceGone("BAR0 reads all ones mid-transfer: the device dropped off the bus")
        seen = ((status >> 16) << 16) | (status & 0xFFFF)
        # loop_status is 32 bits in prog mode (index wraps into count); extend past 2**32.
        self.consumed += (seen - self.consumed) & _MASK32
        return self.consumed

    def poll(self) -> int:
        """Descriptors consumed since the table reset (:meth:`saw_status` of a BAR read)."""
        return self.saw_status(self.bar.read32(self.reg("table_loop_status")))
