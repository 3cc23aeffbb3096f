"""Thin register-level DMA helper for the cocotb tests of the busprobe PCIe core.

Programs the LitePCIe DMA tables and busprobe's CSRs through BAR0 with the offsets of
:mod:`busprobe.protocol.pcie`, nothing more: the host driver proper (descriptor rings, completion,
telemetry decoding) is :mod:`busprobe.backends.pcie`'s and is exercised by the sim backend. The
descriptor tables are the driver's own
(:class:`~busprobe.backends.pcie.descriptor_table.DescriptorTable`: the writes that program an
engine and the room its table has), each register access awaited on the simulated BAR here.
"""

from __future__ import annotations

from busprobe.backends.pcie.descriptor_table import DescriptorTable
from busprobe.backends.pcie.platform import check_descriptor
from busprobe.protocol import pcie as proto
from busprobe.protocol.patterns import Pattern
from busprobe.transport import TransferTimeout

__all__ = ["DmaRegisters", "ENGINES"]

ENGINES = ("writer", "reader")


class DmaRegisters:
    """BAR0 programming of the DMA engines, pattern and telemetry.

    Parameters
    ----------
    tb : PcieTestbench
        Gives ``read32``/``write32`` (BAR0), ``wait_cycles`` and ``rc``.

    Attributes
    ----------
    tables : dict of str to DescriptorTable
        Each engine's table as programmed here.
    """

    def __init__(self, tb):
        self.tb = tb
        self.tables = {engine: DescriptorTable(engine, bar=None) for engine in ENGINES}
        # Whether each engine was enabled here: only a running engine makes room in its table.
        self._running = dict.fromkeys(ENGINES, False)

    async def _w(self, name: str, value: int) -> None:
        await self.tb.write32(proto.csr(name), value)

    async def _write_all(self, writes: list[tuple[int, int]]) -> None:
        for offset, value in writes:
            await self.tb.write32(offset, value)

    async def _r(self, name: str) -> int:
        return await self.tb.read32(proto.csr(name))

    async def reset(self, engine: str) -> None:
        """Disable ``engine`` (flushing its FIFOs), empty its table, select prog mode."""
        if engine not in ENGINES:
            raise ValueError(f"no DMA engine {engine!r}")
        self._running[engine] = False
        await self._write_all(self.tables[engine].stop_writes())

    async def queue(self, engine: str, address: int, length: int, *, irq: bool = False,
                    poll_cycles: int = 50) -> None:
        """Append one descriptor (``length`` bytes at bus ``address``) to ``engine``'s table,
        written as the table has room (:meth:`flush`)."""
        check_descriptor(address, length)
        flags = 0 if irq else proto.DESC_IRQ_DISABLE
        self.tables[engine].append(address, length, flags)
        await self.flush(engine, poll_cycles=poll_cycles)

    async def flush(self, engine: str, *, poll_cycles: int = 50) -> None:
        """Write ``engine``'s pending descriptors as its table has room, as the driver does: when
        it looks full, read ``table_loop_status`` (what the engine consumed since, running now or
        before) and, while the running engine has consumed none, again every ``poll_cycles``.
        A full table with the engine off never makes room: an error, not a hang."""
        table = self.tables[engine]
        while True:
            await self._write_all(table.push_writes())
            if not table.pending:
                return
            await self.poll(engine)
            if table.room:
                continue
            if not self._running[engine]:
                raise RuntimeError(f"{engine} table full ({proto.DMA_TABLE_DEPTH} descriptors) "
                                   "with the engine off: enable it before queueing more")
            await self.tb.wait_cycles(poll_cycles)

    async def poll(self, engine: str) -> int:
        """Descriptors ``engine`` consumed since its table's reset (``table_loop_status``)."""
        table = self.tables[engine]
        return table.saw_status(await self.tb.read32(table.reg("table_loop_status")))

    async def enable(self, engine: str, on: bool = True) -> None:
        self._running[engine] = on
        await self._w(f"pcie_dma0_{engine}_enable", proto.DMA_ENABLE if on else 0)

    async def set_loopback(self, on: bool) -> None:
        await self._w("pcie_dma0_loopback_enable", int(on))

    async def set_pattern(self, pattern: Pattern) -> None:
        await self._w("busprobe_pattern", int(pattern))

    async def clear_telemetry(self) -> None:
        await self._w("busprobe_telemetry_clear", 1)

    async def read_reset(self) -> None:
        """Both engines off and their tables emptied, then the read path's reset
        (``busprobe_read_reset``, which empties the reader's table and its ``loop_status`` in
        the core too), as the driver's reset does; returns once it is done and the failure flag
        is clear."""
        for engine in ENGINES:
            await self.reset(engine)
        await self._w("busprobe_read_reset", 1)
        while await self._r("busprobe_rd_status"):
            await self.tb.wait_cycles(16)

    async def set_completion_timeout(self, seconds: float) -> None:
        await self._w("busprobe_completion_timeout", round(seconds * proto.CLOCK_HZ))

    async def link_errors(self) -> dict[str, int]:
        """The receive guard's counters (:data:`~busprobe.protocol.pcie.LINK_ERRORS` and the
        completions discarded), by name, the ones that are 0 left out."""
        values = {}
        for name in (*proto.LINK_ERRORS, "rd_cpl_discarded"):
            value = await self._r(f"busprobe_{name}")
            if value:
                values[name] = value
        return values

    async def telemetry(self) -> dict[str, int]:
        """Every :data:`~busprobe.protocol.pcie.TELEMETRY` counter, by name."""
        return {name: await self._r(f"busprobe_{name}") for name, _ in proto.TELEMETRY}

    async def wait_counter(self, name: str, target: int, *, timeout_s: float,
                           poll_cycles: int = 200, not_before_s: float = 0.0) -> int:
        """Poll ``busprobe_<name>`` until it reaches ``target``; raise on simulated timeout.

        Polls are BAR0 reads that share the link with the DMA, so a caller that knows the
        transfer cannot end sooner (its bytes at the raw link rate) passes ``not_before_s``.
        """
        deadline = self.tb.now() + timeout_s
        if not_before_s > 0:
            await self.tb.wait_cycles(int(not_before_s * proto.CLOCK_HZ))
        while True:
            value = await self._r(f"busprobe_{name}")
            if value >= target:
                return value
            if self.tb.now() > deadline:
                raise TransferTimeout(f"PCIe DMA did not complete: {name} = {value} of {target} "
                                      f"after {timeout_s * 1e6:.0f} us simulated")
            await self.tb.wait_cycles(poll_cycles)

    async def wait_host_written(self, target: int, *, timeout_s: float) -> None:
        """Wait until the root complex has absorbed ``target`` bytes of DMA writes."""
        deadline = self.tb.now() + timeout_s
        while self.tb.rc.write_bytes < target:
            if self.tb.now() > deadline:
                raise TransferTimeout(f"PCIe DMA write did not complete: "
                                      f"{self.tb.rc.write_bytes} of {target} bytes reached the "
                                      f"host after {timeout_s * 1e6:.0f} us simulated")
            await self.tb.wait_cycles(50)
