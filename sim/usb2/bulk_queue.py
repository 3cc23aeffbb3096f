"""One bulk endpoint's queue of transfers, as a host controller works through it.

:class:`BulkQueue` holds the transfers submitted on one endpoint and does one transaction at a
time for the oldest; :meth:`HostController.stream <.controller.HostController.stream>` runs one
queue, :meth:`HostController.loopback <.controller.HostController.loopback>` two (OUT and IN)
taking turns on the bus. The timing rules are the controller module's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from busprobe.model import usb2_wire as wire
from busprobe.model.usb2_wire import Pid
from busprobe.protocol.usb2 import CLOCK_HZ as ULPI_CLOCK_HZ

from .link import LinkError

if TYPE_CHECKING:
    from .controller import HostController

__all__ = ["BulkQueue", "StreamOutcome", "TransferStall", "StreamStuck", "STUCK_UFRAMES",
           "cycles_from_us"]

#: A transfer that makes no progress for this many microframes (100 ms simulated, ~20 s of
#: simulation) is abandoned with a timeout, as libusb's transfer timeout would.
STUCK_UFRAMES = 800


class TransferStall(LinkError):
    """The device answered STALL."""


class StreamStuck(LinkError):
    """Transfers made no progress for :data:`STUCK_UFRAMES` microframes."""


@dataclass
class _Transfer:
    length: int
    ready_at: int
    data: bytearray = field(default_factory=bytearray)  # IN: received; OUT: to send
    offset: int = 0  # OUT: bytes ACKed
    zlp_sent: bool = False


@dataclass
class StreamOutcome:
    """What a stream of bulk transfers measured (cycles are 60 MHz line cycles)."""

    direction: str
    bytes: int
    transfers: int
    short_transfers: int
    start: int
    end: int
    naks: int
    nyets: int
    transactions: int
    repeats: int = 0  # IN packets dropped because their toggle said "already received"


def cycles_from_us(us: float) -> int:
    return round(us * ULPI_CLOCK_HZ / 1e6)


class BulkQueue:
    """``count`` bulk transfers of ``length`` bytes on one endpoint, ``queue_depth`` queued.

    Parameters
    ----------
    controller : HostController
        Owner of the link, the profile and the data toggles.
    direction : str
        ``in`` or ``out``.
    endpoint, length, count, queue_depth : int
        What to move.
    t0 : int
        Cycle at which the first ``queue_depth`` transfers are submitted.
    source, sink, zlp, max_packet_size
        As :meth:`HostController.stream <.controller.HostController.stream>` takes them.
    """

    def __init__(self, controller: HostController, direction: str, endpoint: int, length: int,
                 count: int, queue_depth: int, *, t0: int, max_packet_size: int = 512,
                 source: Callable[[int], bytes] | None = None,
                 sink: Callable[[bytes], None] | None = None, zlp: bool = False) -> None:
        profile = controller.profile
        self.controller, self.link = controller, controller.link
        self.direction, self.endpoint, self.length, self.count = direction, endpoint, length, count
        self.mps, self.source, self.sink, self.zlp = max_packet_size, source, sink, zlp
        self.limit = profile.max_per_uframe(direction)
        self.completion = cycles_from_us(profile.completion_latency_us)
        self.resubmit = cycles_from_us(profile.resubmit_latency_us)
        self.reserve = controller.reservation(direction, max_packet_size)
        self.t0 = self.end = t0
        self.pending: deque[_Transfer] = deque()
        self.submitted = self.moved = self.shorts = self.naks = self.nyets = 0
        self.transactions = self.repeats = 0
        self.ping_first = False
        self.last_progress = self.link.uframe
        for _ in range(min(queue_depth, count)):
            self._submit(t0)

    def _submit(self, ready_at: int) -> None:
        transfer = _Transfer(self.length, ready_at)
        if self.direction == "out":
            transfer.data = bytearray(self.source(self.length) if self.source
                                      else bytes(self.length))
        self.pending.append(transfer)
        self.submitted += 1

    @property
    def busy(self) -> bool:
        """Transfers remain."""
        return bool(self.pending)

    @property
    def ready_at(self) -> int:
        """Cycle from which the oldest transfer may go on the bus."""
        return self.pending[0].ready_at

    def at_limit(self) -> bool:
        """The profile's transactions per microframe on this endpoint are used up."""
        return self.controller._count(self.endpoint, self.direction) >= self.limit

    def check_stuck(self) -> None:
        if self.link.uframe - self.last_progress > STUCK_UFRAMES:
            raise StreamStuck(f"bulk {self.direction} on endpoint {self.endpoint} made no "
                              f"progress for {STUCK_UFRAMES} microframes")

    async def transact(self) -> None:
        """One transaction for the oldest transfer; completes and resubmits as it ends."""
        transfer = self.pending[0]
        if self.direction == "in":
            done, result = await self._transact_in(transfer)
        else:
            done, result = await self._transact_out(transfer)
            if result is None:   # a NAKed PING: nothing else happened
                return
        self.controller._bump(self.endpoint, self.direction)
        if done:
            self._complete(result.end)

    async def _transact_in(self, transfer: _Transfer) -> tuple[bool, object]:
        controller, endpoint = self.controller, self.endpoint
        result = await self.link.transaction_in(controller.address, endpoint,
                                                reserve_cycles=self.reserve)
        self.transactions += 1
        if result.handshake == Pid.STALL:
            raise TransferStall(f"device STALLed bulk IN endpoint {endpoint}")
        if result.handshake == Pid.NAK:
            self.naks += 1
        elif result.data_pid is not None and result.handshake == Pid.ACK:
            self.last_progress = self.link.uframe
            if result.data_pid == controller.toggle(endpoint, "in"):
                controller.flip(endpoint, "in")
                transfer.data += result.payload
                if len(transfer.data) > self.length:
                    raise LinkError(f"device sent {len(transfer.data)} bytes into an IN "
                                    f"transfer of {self.length}")
                return (len(result.payload) < self.mps
                        or len(transfer.data) == self.length), result
            self.repeats += 1   # a repeat of a packet whose ACK the device missed (§8.6.4)
        return False, result

    async def _transact_out(self, transfer: _Transfer) -> tuple[bool, object | None]:
        controller, endpoint, link = self.controller, self.endpoint, self.link
        if self.ping_first:
            result = await link.ping(controller.address, endpoint)
            self.transactions += 1
            if result.handshake != Pid.ACK:
                self.naks += 1
                controller._bump(endpoint, self.direction)
                return False, None
            self.ping_first = False
        chunk = bytes(transfer.data[transfer.offset:transfer.offset + self.mps])
        result = await link.transaction_out(controller.address, endpoint,
                                            controller.toggle(endpoint, "out"), chunk,
                                            reserve_cycles=self.reserve)
        self.transactions += 1
        if result.handshake == Pid.STALL:
            raise TransferStall(f"device STALLed bulk OUT endpoint {endpoint}")
        if result.handshake not in (Pid.ACK, Pid.NYET):
            self.naks += 1
            self.ping_first = True
            return False, result
        self.last_progress = link.uframe
        controller.flip(endpoint, "out")
        if result.handshake == Pid.NYET:
            self.nyets += 1
            self.ping_first = True
        if not chunk:
            transfer.zlp_sent = True
        transfer.offset += len(chunk)
        return transfer.offset == self.length and (
            not self.zlp or self.length % self.mps or transfer.zlp_sent), result

    def _complete(self, last_handshake_end: int) -> None:
        link, profile = self.link, self.controller.profile
        transfer = self.pending.popleft()
        finished = last_handshake_end + self.completion
        if profile.completion_on_uframe:
            base = link.uframe_start
            while base < finished:
                base += wire.UFRAME_CYCLES
            finished = base
        self.end = max(self.end, finished)
        got = len(transfer.data) if self.direction == "in" else transfer.offset
        self.moved += got
        self.shorts += got < self.length
        if self.direction == "in" and self.sink is not None:
            self.sink(bytes(transfer.data))
        if self.submitted < self.count:
            self._submit(finished + self.resubmit)

    def outcome(self, direction: str | None = None) -> StreamOutcome:
        return StreamOutcome(direction or self.direction, self.moved, self.count, self.shorts,
                             self.t0, self.end, self.naks, self.nyets, self.transactions,
                             self.repeats)
