"""What every bus model's cocotb driver shares: its clock, its cycle count, its reset.

Each simulation top has a ``clk`` input, a synchronous active-high ``rst`` and a 64-bit
``cycle`` output counting ``clk`` (the models' time base: every packet is scheduled by cycle).
:class:`ClockedDriver` starts that clock — cocotb's GPI (C) clock: the default Python clock
costs an ``await`` per edge, which caps a simulation at the ~70 k cycles/s these models exist to
avoid — and waits by cycles. The ULPI PHY driver (USB 2.0) and the PIPE link partner driver
(SuperSpeed) subclass it.
"""

from __future__ import annotations

from typing import ClassVar

from cocotb.clock import Clock
from cocotb.triggers import Timer

__all__ = ["ClockedDriver"]

#: The clock running on each top (by id): a second session in the same test (a power-up of its
#: own) stops the first one's clock instead of adding one.
_RUNNING: dict[int, Clock] = {}


class ClockedDriver:
    """A cocotb driver of one simulation top.

    Attributes
    ----------
    period_ps : int
        The top's clock period (a class attribute of each bus's driver).

    Parameters
    ----------
    dut : cocotb handle
        The simulation top.
    """

    period_ps: ClassVar[int]

    def __init__(self, dut: object) -> None:
        self.dut = dut

    def _start_clock(self) -> None:
        dut = self.dut
        running = _RUNNING.pop(id(dut), None)
        if running is not None:
            try:
                running.stop()
            except RuntimeError:
                pass  # ended with its test
        clock = Clock(dut.clk, self.period_ps, unit="ps", impl="gpi")
        clock.start()
        _RUNNING[id(dut)] = clock

    async def _release_reset(self) -> None:
        """Hold ``rst`` (the caller set it and the inputs) for 10 cycles, then let go and wait
        two more."""
        await Timer(10 * self.period_ps, "ps")
        self.dut.rst.value = 0
        await Timer(2 * self.period_ps, "ps")

    @property
    def cycle(self) -> int:
        """The current cycle of the top's clock."""
        return int(self.dut.cycle.value)

    async def wait_until(self, cycle: int) -> None:
        """Let the simulation run until ``cycle`` (no-op if already there)."""
        now = self.cycle
        if cycle > now:
            await Timer((cycle - now) * self.period_ps, "ps")

    async def wait_cycles(self, cycles: int) -> None:
        await Timer(max(cycles, 1) * self.period_ps, "ps")
