"""The PCIe bench behind a hostile root complex: one DMA at a time, settled and accounted.

Used by the fault tests (``sim/pcie/tests/pcie_fault_cocotb.py``)::

    bench = HostileBench(tb, regs, seed=1, fault_rate=0.1, stray_rate=0.1)
    outcome = await bench.read(4096)     # the core reads a host buffer of the pattern
    if outcome.failed:
        await bench.recover()            # read path reset, as the host driver does it
    await bench.write(4096, strays=3)    # the core writes; stray packets arrive meanwhile
    assert await bench.counters() == bench.model.counts

After each DMA :meth:`HostileBench.settle` waits until the root has answered every read, the
core has taken every packet and, if a read is still owed data, its completion timeout has run
out, so the core's counters and the model's are comparable at any point between DMAs.
"""

from __future__ import annotations

from dataclasses import dataclass

import cocotb
from busprobe.gateware.pcie.sim_top import SIM_COMPLETION_TIMEOUT_S
from busprobe.protocol import pcie as proto
from busprobe.protocol.patterns import Pattern, PatternStream

from .faults import FaultInjector
from .guard_model import GuardModel

__all__ = ["HostileBench", "ReadOutcome", "COUNTERS"]

#: The guard's counters the model predicts.
COUNTERS = (*proto.LINK_ERRORS, "rd_cpl_discarded")
#: The guard holds a packet until its last beat (at most 67) before passing it on.
_GUARD_CYCLES = 200


@dataclass
class ReadOutcome:
    """What the core reported after a read."""

    failed: bool  # RD_FAILED
    checked: int  # bytes its checker compared
    pattern_errors: int


class HostileBench:
    """A started :class:`~busprobe.sim.pcie.testbench.PcieTestbench` with a fault injector.

    Parameters
    ----------
    tb : PcieTestbench
    regs : DmaRegisters
    seed : int
    fault_rate, stray_rate : float
        See :class:`~busprobe.sim.pcie.faults.FaultInjector`.
    timeout_s : float
        The core's completion timeout (as it was built or programmed).
    """

    def __init__(self, tb, regs, *, seed: int, fault_rate: float = 0.0, stray_rate: float = 0.0,
                 timeout_s: float = SIM_COMPLETION_TIMEOUT_S) -> None:
        self.tb, self.regs = tb, regs
        self.model = GuardModel(int(tb.ep.pcie_id), tb.config.mps)
        self.injector = FaultInjector(self.model, seed, fault_rate=fault_rate,
                                      stray_rate=stray_rate)
        self.injector.attach(tb.ep)
        self.timeout_s = timeout_s
        self.pattern = Pattern.PRBS31
        self.source = tb.alloc(8192)
        self.target = tb.alloc(8192)
        self.requests_at_settle = 0

    async def read(self, length: int, chunk: int = 4096) -> ReadOutcome:
        """The core reads ``length`` bytes of the pattern (at most 8 KiB), then settle."""
        regs = self.regs
        await regs.set_pattern(self.pattern)
        self.source.write(0, PatternStream(self.pattern).take(length))
        for offset in range(0, length, chunk):
            await regs.queue("reader", self.source.address + offset,
                             min(chunk, length - offset))
        await regs.enable("reader")
        await self.settle()
        await regs.enable("reader", False)
        return ReadOutcome(
            failed=bool(await regs._r("busprobe_rd_status") & proto.RD_FAILED),
            checked=await regs._r("busprobe_checked_bytes"),
            pattern_errors=await regs._r("busprobe_pattern_errors"))

    async def write(self, length: int, strays: int = 0) -> int:
        """The core writes ``length`` bytes of the pattern while ``strays`` stray packets
        arrive; returns the 32-bit words of host memory that are not the pattern."""
        regs, tb = self.regs, self.tb
        await regs.reset("writer")
        await regs.set_pattern(self.pattern)
        for offset in range(0, length, 4096):
            await regs.queue("writer", self.target.address + offset, min(4096, length - offset))
        start = tb.rc.write_bytes
        strays_sent = cocotb.start_soon(self._strays(strays, length))
        await regs.enable("writer")
        await regs.wait_host_written(start + length, timeout_s=length / 50e6 + 100e-6)
        await regs.enable("writer", False)
        await strays_sent
        await self.settle()
        return PatternStream(self.pattern).check(self.target.read(0, length)).errors

    async def _strays(self, count: int, length: int) -> None:
        """Stray packets while no read runs (so no tag they carry is a race with a read)."""
        rng = self.injector.rng
        for _ in range(count):
            await self.tb.wait_cycles(rng.randint(1, max(2, length // 64)))
            self.tb.ep.inject(*self.injector.deliver([self.injector.idle_stray()]))

    async def settle(self) -> None:
        """Wait until the root has answered every read, the core has taken every packet and
        the reads still owed data (dropped completions) have timed out."""
        tb, injector = self.tb, self.injector
        requests = -1
        while not (injector.answered and tb.ep.rx_idle() and injector.requests == requests):
            requests = injector.requests
            await tb.wait_cycles(_GUARD_CYCLES)
        await tb.wait_cycles(_GUARD_CYCLES)
        if any(not read.failed for read in self.model.reads.values()):
            await tb.wait_cycles(int(1.25 * self.timeout_s * proto.CLOCK_HZ) + _GUARD_CYCLES)
            self.model.expire()

    async def recover(self) -> None:
        """The host's way out of a failed read: engines off, read path reset."""
        await self.regs.read_reset()
        self.model.forget()

    async def counters(self) -> dict[str, int]:
        """The core's guard counters, the zero ones left out (as ``model.counts``)."""
        return await self.regs.link_errors()

