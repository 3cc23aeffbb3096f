"""The simulated host controller's side of the transfer queue, for USB 2.0 and SuperSpeed alike.

A :class:`~busprobe.backends.usb.platform.UsbPlatform` moves bulk data as transfers submitted
and completions reaped (:mod:`busprobe.backends.usb.transfers`). :class:`TransferEngine` is
that queue inside a simulated host controller: it keeps each endpoint's submitted transfers in
order, lets the bus model (a subclass: the ULPI host, the SuperSpeed xHCI) work on them, and
hands completions back when the simulated host learns of them. The simulated backends carry
``submit`` and ``reap`` over the RPC, and the cocotb tests run the very same transfer plans
in-process with :meth:`TransferEngine.run` / :meth:`TransferEngine.stream`.

Timing (the ceiling models step the same rules):

* A transfer *completes* when its last handshake ends plus the profile's completion latency
  (a subclass may round it, e.g. to a microframe boundary); that is the completion's *due*
  time, when the host learns of it.
* The simulated host is infinitely fast, but its driver reacts to a completion after the
  profile's resubmit latency: transfers submitted in answer to a reaped completion may go on
  the bus ``resubmit`` after its due time. Transfers submitted with no completion to answer (a
  run's first, or after a control request) may go at once.
* :meth:`TransferEngine.reap` lets the bus work until the earliest due completion, but never
  starts work on the bus at or after that moment before the host had its say: what it submits
  in answer is in the queue before the next transaction is chosen, exactly as if the driver
  had resubmitted from its completion callback.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from busprobe.backends.usb.plans import QueuedStream, loopback
from busprobe.backends.usb.transfers import Completion, Transfer, TransferPlan
from busprobe.protocol.names import Direction

__all__ = ["TransferEngine", "Pending", "Due", "StreamOutcome"]


@dataclass
class Pending:
    """A submitted transfer, as the bus model works on it."""

    transfer: Transfer
    ready_at: int  # cycle from which it may go on the bus
    received: bytearray = field(default_factory=bytearray)  # IN: data so far
    offset: int = 0  # OUT: bytes acknowledged
    zlp_sent: bool = False
    order: int = 0  # submissions before it (the host's doorbells ring in this order)


@dataclass
class Due:
    """A finished transfer, due to the host at ``cycle``."""

    completion: Completion
    cycle: int


@dataclass
class StreamOutcome:
    """What :meth:`TransferEngine.stream` measured: clock cycles of the bus model, and how much
    each of its :attr:`TransferEngine.counters` moved during the stream (``naks``,
    ``retries``, ...)."""

    direction: str
    bytes: int
    transfers: int
    short_transfers: int
    start: int
    end: int
    counters: dict[str, int]


class TransferEngine:
    """Transfers in flight in a simulated host controller (see the module docstring).

    Subclasses provide the bus: :attr:`cycle`, :meth:`_idle_start`, :meth:`_work` and
    :meth:`_advance_to` (and may round :meth:`_completes_at` or note :meth:`_new_run`), and
    count what they do in :attr:`counters`.

    Attributes
    ----------
    clock_hz : int
        The bus model's clock.
    queues : dict
        Endpoint address -> its submitted transfers, oldest first.
    counters : dict
        Bus events since the engine started (NAKs, retries, ...), by name.
    resubmit_cycles : int
        The driver's reaction time to a completion.
    """

    clock_hz: int

    def __init__(self, *, resubmit_cycles: int, counters: tuple[str, ...]) -> None:
        self.queues: dict[int, deque[Pending]] = {}
        self.due: list[Due] = []
        self.counters = dict.fromkeys(counters, 0)
        self.resubmit_cycles = resubmit_cycles
        self._answering: int | None = None  # due cycle of the completions last reaped
        self._submitted = 0

    # -- what the bus model provides ----------------------------------------------------------
    @property
    def cycle(self) -> int:
        raise NotImplementedError

    def _idle_start(self) -> int:
        """Cycle at which a transfer submitted now, answering nothing, may start."""
        raise NotImplementedError

    async def _work(self, before: int | None) -> bool:
        """Do the bus's next piece of work on the queues if it starts before ``before`` (any
        time if None); False when there is none."""
        raise NotImplementedError

    async def _advance_to(self, cycle: int) -> None:
        """Let the bus idle up to ``cycle``."""
        raise NotImplementedError

    def _new_run(self) -> None:
        """Transfers that answer no completion are being submitted: a new run starts."""

    # -- the queue ----------------------------------------------------------------------------
    def host_acted(self) -> None:
        """The host did something else (a control request): the next submission answers no
        completion."""
        self._answering = None

    def submit(self, transfers: list[Transfer]) -> int:
        """Queue ``transfers``; returns the cycle the host submitted them at."""
        if self._answering is not None:
            at, ready = self._answering, self._answering + self.resubmit_cycles
        else:
            self._new_run()
            at = ready = self._idle_start()
        for transfer in transfers:
            self._submitted += 1
            self.queues.setdefault(transfer.endpoint, deque()).append(
                Pending(transfer, ready, order=self._submitted))
        return at

    def busy(self) -> bool:
        return any(self.queues.values())

    def finish(self, pending: Pending, last_handshake_end: int, *, actual: int,
               stalled: bool = False) -> None:
        """``pending`` is done on the bus: it leaves its queue and is due to the host. (The
        oldest, except on an endpoint with bulk streams, where the device chooses the order.)"""
        queue = self.queues[pending.transfer.endpoint]
        del queue[next(i for i, queued in enumerate(queue) if queued is pending)]
        cycle = self._completes_at(last_handshake_end)
        data = bytes(pending.received) if pending.transfer.incoming else b""
        self.due.append(Due(Completion(pending.transfer, actual, data, cycle / self.clock_hz,
                                       stalled), cycle))

    def _completes_at(self, last_handshake_end: int) -> int:
        return last_handshake_end

    async def reap(self, until: int | None = None) -> list[Completion]:
        """Let the bus work until the earliest due completion; return every completion due
        then (see the module docstring). With ``until``, return ``[]`` if none is due by that
        cycle."""
        while True:
            bound = self.bound(until)
            if bound is None and not self.busy():
                raise ValueError("reap with no transfer in flight")
            if await self._work(bound):
                continue
            assert bound is not None  # _work(None) finds work while anything is queued
            await self._advance_to(bound)
            return self.collect(bound)

    def bound(self, until: int | None) -> int | None:
        """Where a reap up to ``until`` stops the bus: the earliest due completion, or
        ``until`` if sooner (None: neither)."""
        first = min((due.cycle for due in self.due), default=None)
        if until is None:
            return first
        return until if first is None else min(until, first)

    def collect(self, bound: int) -> list[Completion]:
        """The completions due at the earliest due cycle, if that is by ``bound`` (the bus got
        there); ``[]`` otherwise. The host's next submission answers them."""
        first = min((due.cycle for due in self.due), default=None)
        if first is None or first > bound:
            self._answering = None
            return []
        ready = [due for due in self.due if due.cycle == first]
        self.due = [due for due in self.due if due.cycle != first]
        self._answering = first
        return [due.completion for due in ready]

    def cancel(self) -> None:
        """Drop every transfer queued or due (what a transfer had moved is lost)."""
        self.queues.clear()
        self.due.clear()

    # -- plans in-process (cocotb tests) ------------------------------------------------------
    async def run(self, plan: TransferPlan) -> tuple[int, int]:
        """Run ``plan`` as :func:`~busprobe.backends.usb.transfers.run_plan` does over the RPC;
        returns the cycles of its first submission and of its last completion."""
        first = list(plan.start())
        start = self.submit(first)
        end, flying = start, len(first)
        try:
            while flying:
                answer: list[Transfer] = []
                for completion in await self.reap():
                    flying -= 1
                    end = max(end, round(completion.time * self.clock_hz))
                    answer += plan.completed(completion)
                if answer:
                    self.submit(answer)
                    flying += len(answer)
        except BaseException:
            self.cancel()
            raise
        return start, end

    async def stream(self, direction: str, endpoint: int, length: int, count: int,
                     queue_depth: int, *, source: Callable[[int], bytes] | None = None,
                     sink: Callable[[bytes], None] | None = None,
                     zlp: bool = False) -> StreamOutcome:
        """``count`` bulk transfers of ``length`` bytes on ``endpoint`` (its number),
        ``queue_depth`` in flight: :class:`~busprobe.backends.usb.plans.QueuedStream`, the
        plan every sweep point runs. OUT data comes from ``source(length)``; IN data goes to
        ``sink`` in order after the last completion."""
        address = endpoint | 0x80 if direction == Direction.IN else endpoint
        outgoing = None if direction == Direction.IN else [
            source(length) if source is not None else bytes(length) for _ in range(count)]
        plan = QueuedStream(address, length, count, queue_depth, outgoing=outgoing, zlp=zlp,
                            what=f"bulk {direction} on endpoint {endpoint}")
        return await self._measure(direction, plan, plan, sink)

    async def loopback(self, out_endpoint: int, in_endpoint: int, length: int, count: int,
                       queue_depth: int, *, source: Callable[[int], bytes],
                       sink: Callable[[bytes], None] | None = None) -> StreamOutcome:
        """``count`` OUT transfers and ``count`` IN transfers of ``length`` bytes, both queues
        ``queue_depth`` deep at once (:func:`~busprobe.backends.usb.plans.loopback`): what a
        device looping OUT back to IN returns, timed from the first submission to the last
        completion of either direction."""
        pair = loopback(length, count, queue_depth, [source(length) for _ in range(count)],
                        what="loopback", endpoints=(out_endpoint, in_endpoint | 0x80))
        return await self._measure("loopback", pair, pair.plans[1], sink)

    async def _measure(self, direction: str, plan: TransferPlan, stream: QueuedStream,
                       sink: Callable[[bytes], None] | None) -> StreamOutcome:
        """Run ``plan``; ``stream`` is the part of it whose bytes count."""
        before = dict(self.counters)
        start, end = await self.run(plan)
        stream.deliver(sink)
        return StreamOutcome(direction, stream.moved, stream.completed_count, stream.short,
                             start, end, {k: v - before[k] for k, v in self.counters.items()})
