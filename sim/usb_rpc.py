"""What every simulated USB bus answers over the RPC: endpoint 0 and the transfer queue.

:class:`UsbRpcHandler` is the simulator half of :class:`~busprobe.sim.usb_platform.
SimUsbPlatform`: control transfers and the transfer queue's submit, reap and cancel, carried out
by the bus's host-controller model (a :class:`~busprobe.sim.transfer_engine.TransferEngine`).
``sim:usb2`` and ``sim:usb3`` subclass it with their own table of host-model errors
(:data:`~busprobe.sim.rpc.BusErrors`) and whatever else their simulation offers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

from busprobe.backends.usb.transfers import Completion, Transfer

from .rpc import BusErrors, on_the_bus
from .transfer_engine import TransferEngine

__all__ = ["UsbRpcHandler"]


class UsbRpcHandler:
    """The requests a :class:`~busprobe.sim.usb_platform.SimUsbPlatform` makes (``rpc_<name>``).

    Every answer that lets simulated time pass carries the bus model's clock count after it,
    the platform's clock.

    Attributes
    ----------
    bus_errors : BusErrors
        The host model's exceptions, as the transport's errors.
    busy_wall_s : float
        Wall-clock seconds spent letting the bus work (reaps), for the benchmarks' cycles/s.
    """

    bus_errors: ClassVar[BusErrors] = ()

    def __init__(self, host: TransferEngine) -> None:
        self.host = host
        self.busy_wall_s = 0.0

    @property
    def cycle(self) -> int:
        return self.host.cycle

    async def rpc_control(self, request_type: int, request: int, value: int, index: int,
                          length_or_data: int | bytes) -> tuple[bytes, int]:
        if isinstance(length_or_data, bytes) and not length_or_data:
            length_or_data = 0  # an OUT request without a data stage
        data = await on_the_bus(f"control request {request:#04x}", lambda: self.host.control(
            request_type, request, value, index, length_or_data), self.bus_errors)
        return bytes(data or b""), self.cycle

    async def rpc_submit(self, transfers: Sequence[Transfer]) -> tuple[int, int]:
        """Queue ``transfers``; the cycle they were submitted at, and the clock."""
        return self.host.submit(list(transfers)), self.cycle

    async def rpc_reap(self, timeout_cycles: int) -> tuple[list[Completion], int]:
        """Completions due within ``timeout_cycles`` (``[]`` if none), and the clock."""
        started = time.perf_counter()
        try:
            done = await on_the_bus("bulk transfer", lambda: self.host.reap(
                self.cycle + timeout_cycles), self.bus_errors)
        finally:
            self.busy_wall_s += time.perf_counter() - started
        return done, self.cycle

    async def rpc_cancel(self) -> int:
        self.host.cancel()
        return self.cycle

    async def rpc_counters(self) -> dict[str, Any]:
        """The bus model's counters, its clock and :attr:`busy_wall_s`."""
        return {**self.host.counters, "cycle": self.cycle, "busy_wall_s": self.busy_wall_s}
