"""Streams of several targets at once: started together, on one clock, one thread each.

A point measured *together* runs every target's repeat in a thread of its own, each through
:class:`TogetherView`, a view of its transport whose :meth:`~TogetherView.stream` waits until
every target is ready, starts with the others, and does not return until every stream is done.
So the repeats of all targets overlap, every target's telemetry is cleared before any stream
starts and read after all have ended, and each repeat's figures share one window.

What "at once" means is the targets' :class:`SharedClock`:

* real devices (:class:`WallClock`): the threads leave one rendezvous together and each
  transport times its stream on the host's monotonic clock, which they all share;
* a simulation hosting several devices (:class:`busprobe.sim.channels.SimClock`): the threads
  meet on the host, then in the simulator (``@barrier``), which lets simulated time pass only
  while every stream has a request in progress: all start at the same simulated instant and
  are timed on the one simulated clock, whatever the host threads' own speed.

A target whose thread fails withdraws from the rendezvous, so the others go on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .transport import Sink, Source, StreamResult, Transport, TransportError

__all__ = ["SharedClock", "WallClock", "Rendezvous", "TogetherView", "StreamRecord",
           "RENDEZVOUS_TIMEOUT_S"]

#: Wall seconds a thread waits for the others at a rendezvous: longer than any repeat a sweep
#: allows (a simulated repeat runs for minutes at most), so only a hung target meets it.
RENDEZVOUS_TIMEOUT_S = 1800.0


class SharedClock(Protocol):
    """How the streams of targets measured together start together and are timed alike."""

    def join(self, indexes: list[int]) -> None:
        """All targets ``indexes`` are about to start (called once, by one thread)."""

    def start(self, index: int) -> None:
        """In target ``index``'s thread: return when its stream may start."""

    def leave(self, index: int) -> None:
        """In target ``index``'s thread: its stream ended (or failed)."""


class WallClock:
    """Real devices: the rendezvous starts them together; each transport times its stream on
    the host's monotonic clock (libusb and VFIO both do), which all threads share."""

    def join(self, indexes: list[int]) -> None:
        pass

    def start(self, index: int) -> None:
        pass

    def leave(self, index: int) -> None:
        pass


class Rendezvous:
    """A barrier of the targets still taking part; one may withdraw, the rest go on.

    Parameters
    ----------
    parties : list of int
        The targets' indexes.
    action : callable, optional
        Called with the parties present, by the last thread to arrive, before any is released.
    """

    def __init__(self, parties: list[int],
                 action: Callable[[list[int]], None] | None = None) -> None:
        self.parties = set(parties)
        self.action = action
        self._arrived: set[int] = set()
        self._generation = 0
        self._failure: BaseException | None = None
        self._cond = threading.Condition()

    def _complete(self) -> None:
        if self._arrived and self._arrived >= self.parties:
            if self.action is not None:
                try:
                    self.action(sorted(self.parties))
                except BaseException as exc:  # every waiter gets it, not only this thread
                    self._failure = exc
            self._arrived.clear()
            self._generation += 1
            self._cond.notify_all()

    def arrive(self, index: int, timeout: float = RENDEZVOUS_TIMEOUT_S) -> None:
        """Wait until every party still taking part has arrived."""
        with self._cond:
            generation = self._generation
            self._arrived.add(index)
            self._complete()
            if not self._cond.wait_for(lambda: self._generation != generation, timeout):
                self._arrived.discard(index)
                raise TransportError(f"the other targets did not reach the start of the point "
                                     f"within {timeout:.0f} s")
            if self._failure is not None:
                raise self._failure

    def withdraw(self, index: int) -> None:
        """``index`` takes no further part (its thread ended); the others need not wait."""
        with self._cond:
            self.parties.discard(index)
            self._arrived.discard(index)
            self._complete()


@dataclass
class StreamRecord:
    """What one target's stream of one repeat did, on the shared clock."""

    start: float
    end: float
    bytes: int


@dataclass
class TogetherView:
    """Target ``index``'s transport as a point measured together sees it.

    Everything is the transport's, except :meth:`stream`: it first asks the transport to get
    ready for the point (:meth:`Transport.prepare`: control requests that would otherwise go
    on the bus in the others' window), meets the others, starts with them (the
    :class:`SharedClock`), and after its stream waits until every stream has ended. Each
    stream's window is kept in :attr:`records` for the sum.
    """

    index: int
    transport: Transport
    clock: SharedClock
    starting: Rendezvous
    ending: Rendezvous
    records: list[StreamRecord | None] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:  # min_bytes, bus, clear_telemetry, ...
        return getattr(self.transport, name)

    def stream(self, direction: str, length: int, count: int, queue_depth: int,
               source: Source | None = None, sink: Sink | None = None) -> StreamResult:
        self.transport.prepare(direction, length)
        self.starting.arrive(self.index)
        record: StreamRecord | None = None
        try:
            self.clock.start(self.index)
            try:
                result = self.transport.stream(direction, length, count, queue_depth,
                                               source=source, sink=sink)
            finally:
                self.clock.leave(self.index)
            record = StreamRecord(result.start, result.end, result.bytes)
            return result
        finally:
            self.records.append(record)
            self.ending.arrive(self.index)

    def withdraw(self) -> None:
        """This target's thread ended: the others no longer wait for it."""
        self.starting.withdraw(self.index)
        self.ending.withdraw(self.index)
