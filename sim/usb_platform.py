"""What the simulated USB platforms share: one simulator behind the RPC, its clock, EP0, streams.

:class:`SimUsbPlatform` is the part of a :class:`~busprobe.backends.usb.UsbPlatform` that does
not depend on the bus: it starts the simulator (:class:`~busprobe.sim.simulator.SimServer`),
keeps the simulated clock from every answer, and carries control transfers and bulk streams
across. ``sim:usb2`` (:mod:`busprobe.sim.usb2.backend`) and ``sim:usb3``
(:mod:`busprobe.sim.usb3.backend`) add what their simulation offers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from busprobe.targets import TargetDescription
from busprobe.transport import BusDescription, InvalidRequest, Sink, StreamResult

from .simulator import SimServer

__all__ = ["SimUsbPlatform"]


class SimUsbPlatform:
    """A USB platform whose bus is a simulation answering over the RPC.

    Subclasses set the class attributes and call :meth:`_start` from ``open``.

    Attributes
    ----------
    clock_hz : int
        The simulation's clock: the ``cycle`` of every answer counts it.
    stream_base_s, stream_rate : float
        A stream request's timeout: the base plus its bytes at this many per second, slower
        than any working simulator, so only a livelocked one meets it (a dead or stopped one
        is caught within seconds by the watchdog).
    last_stream : dict
        What the last bulk stream cost in the simulator (cycles, wall seconds, NAKs, ...).

    Parameters
    ----------
    target : TargetDescription
        What the ``sim:`` selector chose: its options, the bus and the hops it models.
    """

    clock_hz: int
    stream_base_s: float = 60.0
    stream_rate: float

    def __init__(self, target: TargetDescription) -> None:
        self.target = target
        self.name = target.text
        self.host = target.options["host"]
        self.server: SimServer | None = None
        self.last_stream: dict[str, Any] = {}
        self._cycle = 0

    def _start(self, build_dir: Path, toplevel: str, server_module: str,
               env: Mapping[str, str]) -> None:
        self.server = SimServer(build_dir, toplevel, server_module, name=self.name,
                                env=dict(env))
        self._cycle = self.server.info["cycle"]

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None

    def _server(self) -> SimServer:
        if self.server is None:
            raise InvalidRequest(f"{self.name}: transport is not open")
        return self.server

    def now(self) -> float:
        """Simulated seconds (the simulation's clock) as of the last request."""
        return self._cycle / self.clock_hz

    def bus(self) -> BusDescription:
        return self.target.require_bus()

    def topology(self) -> list[dict[str, Any]]:
        return self.target.hops_json()

    def control(self, request_type: int, request: int, value: int, index: int,
                length_or_data: int | bytes) -> bytes:
        data, self._cycle = self._server().call("control", request_type, int(request), value,
                                                index, length_or_data)
        return data

    def _timeout(self, moved: int) -> float:
        return self.stream_base_s + moved / self.stream_rate

    def _result(self, reply: dict[str, Any], direction: str, sink: Sink | None) -> StreamResult:
        """The stream a reply describes; its IN data goes to ``sink`` in order."""
        chunks = reply.pop("in_data")
        self._cycle = reply["cycle"]
        self.last_stream = reply
        if sink is not None:
            for chunk in chunks:
                sink(chunk)
        return StreamResult(direction=direction, bytes=reply["bytes"],
                            transfers=reply["transfers"], start=reply["start"] / self.clock_hz,
                            end=reply["end"] / self.clock_hz,
                            short_transfers=reply["short_transfers"])

    def bulk(self, endpoint: int, length: int, count: int, queue_depth: int,
             outgoing: Sequence[bytes] | None, sink: Sink | None) -> StreamResult:
        reply = self._server().call("stream", endpoint, length, count, queue_depth,
                                    list(outgoing) if outgoing is not None else None,
                                    timeout=self._timeout(length * count))
        return self._result(reply, "in" if endpoint & 0x80 else "out", sink)
