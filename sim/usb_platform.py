"""What the simulated USB platforms share: one simulator behind the RPC, its clock, EP0, transfers.

:class:`SimUsbPlatform` is the part of a :class:`~busprobe.backends.usb.UsbPlatform` that does
not depend on the bus: it starts the simulator (:class:`~busprobe.sim.simulator.SimServer`),
keeps the simulated clock from every answer, and carries control transfers and the transfer
queue's submit, reap and cancel across to the host-controller model
(:class:`~busprobe.sim.usb_rpc.UsbRpcHandler`). ``sim:usb2`` (:mod:`busprobe.sim.usb2.backend`)
and ``sim:usb3`` (:mod:`busprobe.sim.usb3.backend`) add what their simulation offers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from busprobe.backends.usb.platform import UsbPlatform
from busprobe.backends.usb.transfers import Completion, Transfer
from busprobe.targets import TargetDescription
from busprobe.transport import BusDescription

from .simulator import SimServer, SimulatorClient

__all__ = ["SimUsbPlatform"]


class SimUsbPlatform(SimulatorClient, UsbPlatform):
    """A USB platform whose bus is a simulation answering over the RPC.

    Subclasses set the class attributes and call :meth:`_start` from ``open``.

    Attributes
    ----------
    clock_hz : int
        The simulation's clock: the ``cycle`` of every answer counts it.
    stream_base_s, stream_rate : float
        A reap's wall-clock timeout: the base plus the bytes in flight at this many per second,
        slower than any working simulator, so only a livelocked one meets it (a dead or stopped
        one is caught within seconds by the watchdog).

    Parameters
    ----------
    target : TargetDescription
        What the ``sim:`` selector chose: its options, the bus and the hops it models.
    channel : int, optional
        Which device of a simulation hosting several this is (its RPC channel,
        :mod:`busprobe.sim.shared_clock`); the group that owns the simulator sets
        :attr:`server`. None: the simulation's only device, started by :meth:`_start`.
    """

    clock_hz: int
    emulated = None  # simulated time: never emulated hardware's slowness
    stream_base_s: float = 60.0
    stream_rate: float

    def __init__(self, target: TargetDescription, channel: int | None = None) -> None:
        self.target = target
        self.channel = channel
        self.name = target.text if channel is None else f"{target.text}#{channel}"
        self.host = target.options["host"]
        self.server: SimServer | None = None
        self._cycle = 0
        self._in_flight = 0  # bytes submitted and not yet reaped

    def _start(self, build_dir: Path, toplevel: str, server_module: str,
               env: Mapping[str, str]) -> None:
        self.server = SimServer(build_dir, toplevel, server_module, name=self.name,
                                env=dict(env))
        self._cycle = self.server.info["cycle"]

    def now(self) -> float:
        """Simulated seconds (the simulation's clock) as of the last request."""
        return self._cycle / self.clock_hz

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``server.call`` on this device's channel."""
        return self._server().call(method, *args, channel=self.channel, **kwargs)

    def bus(self) -> BusDescription:
        return self.target.require_bus()

    def topology(self) -> list[dict[str, Any]]:
        return self.target.hops_json()

    def control(self, request_type: int, request: int, value: int, index: int,
                length_or_data: int | bytes) -> bytes:
        data, self._cycle = self._call("control", request_type, int(request), value,
                                                index, length_or_data)
        return data

    def submit(self, transfers: Sequence[Transfer]) -> float:
        at, self._cycle = self._call("submit", list(transfers))
        self._in_flight += sum(transfer.length for transfer in transfers)
        return at / self.clock_hz

    def reap(self, timeout: float) -> list[Completion]:
        """Completions due within ``timeout`` simulated seconds; the wall-clock bound is the
        simulator's speed, see :attr:`stream_rate`."""
        done, self._cycle = self._call(
            "reap", round(timeout * self.clock_hz),
            timeout=self.stream_base_s + self._in_flight / self.stream_rate)
        self._in_flight -= sum(completion.transfer.length for completion in done)
        return done

    def alloc_streams(self, endpoints: Sequence[int], count: int) -> None:
        """Give bulk ``endpoints`` stream rings for Stream IDs 1..``count`` (libusb's
        ``libusb_alloc_streams``); a :class:`Transfer` then names its stream."""
        self._cycle = self._call("alloc_streams", list(endpoints), count)

    def free_streams(self, endpoints: Sequence[int]) -> None:
        self._cycle = self._call("free_streams", list(endpoints))

    def bus_reset(self) -> bool:
        """A port reset and enumeration again, as the host's driver does after one (the usbredir
        export relays a guest's): USB 2.0's bus reset, SuperSpeed's Hot Reset. Address,
        configuration, data toggles or sequence numbers, streams and every transfer in flight
        start over (the simulation's host drops them unanswered)."""
        self._cycle = self._call("reset")
        self._in_flight = 0
        return True

    def cancel(self) -> None:
        if self.server is not None:
            self._cycle = self._call("cancel")
        self._in_flight = 0

    def counters(self) -> dict[str, Any]:
        """The host model's bus counters (NAKs, retries, ...), its clock (``cycle``) and the
        wall-clock seconds it spent working (``busy_wall_s``), for benchmarks."""
        return self._call("counters")
