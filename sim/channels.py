"""The requests a simulation hosting several devices answers itself (:mod:`.shared_clock`):
a channel joins the shared clock, waits for the others to start together, leaves it. Spelled
here once for the simulator side and the host side (which must not import cocotb), with the
host side's :class:`SimClock`."""

from __future__ import annotations

from typing import Protocol

from busprobe.transport import InvalidRequest

__all__ = ["JOIN", "LEAVE", "BARRIER", "SimClock", "SimGroup"]

JOIN, LEAVE, BARRIER = "@join", "@leave", "@barrier"


class SimGroup(Protocol):
    """What :class:`SimClock` needs of the group of targets one simulation hosts
    (``sim:pcie?endpoints=N``, ``sim:usb2?devices=N``)."""

    name: str
    server: object | None  # busprobe.sim.simulator.SimServer while open


class SimClock:
    """The :class:`~busprobe.together.SharedClock` of the devices of one simulation: the
    simulator's own rendezvous (:mod:`busprobe.sim.shared_clock`) starts their streams at one
    simulated instant and lets time pass only while every stream has a request in progress.

    Parameters
    ----------
    group : SimGroup
        The targets' group; its ``server`` is the simulator while open.
    """

    def __init__(self, group: SimGroup) -> None:
        self.group = group

    def _call(self, request: str, index: int) -> None:
        server = self.group.server
        if server is None:
            raise InvalidRequest(f"{self.group.name}: simulator is not running")
        server.call(request, channel=index)  # type: ignore[attr-defined]

    def join(self, indexes: list[int]) -> None:
        for index in indexes:
            self._call(JOIN, index)

    def start(self, index: int) -> None:
        self._call(BARRIER, index)

    def leave(self, index: int) -> None:
        self._call(LEAVE, index)
