"""USB Attached SCSI at high speed without streams, stepped transaction by transaction.

UAS moves each command over three pipes at once: the command IU on the command pipe (OUT), a
status transfer pending on the status pipe (IN) that the device answers with READ READY / WRITE
READY and, after the data, the SENSE IU, and the data on the data pipe. A closed form of that
(each stage one after the other, or all of them overlapped) misses what decides the figure: the
host controller polls the status pipe between the data packets, a READY and the SENSE before it
can share a microframe and a completion, and at a queue depth above one the next command's
READY follows the SENSE at once while its data still waits for the driver. So
:func:`uas_run` steps the very rules the simulated controller follows
(``sim/usb2/controller.py``: microframes with an SOF, a transaction only where its budget fits,
``max_per_uframe`` transactions per endpoint and microframe, NAKs counted, endpoints with work
taking turns one transaction each, the profile's gap after each; a transfer completes its
``completion_latency_us`` after its last handshake, on a microframe boundary when
``completion_on_uframe``; what the driver submits in answer goes ``resubmit_latency_us`` after
the completion it answers, and the bus never starts a transaction at or after a due completion
before the driver had its say), with

* the driver as Linux's ``uas`` (and busprobe's :class:`~busprobe.backends.usb.uas.UasRun`)
  drives it: each command a command IU and a status transfer submitted together; on READY the
  command's data transfer and a status transfer in the place of the one the READY took; the
  command is done when both its data and its SENSE completed, and the next command goes then,
  ``queue_depth`` commands outstanding;
* a device that is never the bottleneck: every OUT acknowledged, the READY of the oldest command
  waiting as soon as no command moves data, the data always there, the SENSE right behind the
  command's last data packet and the next command's READY right behind that; a status poll with
  nothing to say is NAKed.

Line time is the schedule's budget (:func:`~busprobe.protocol.usb2_wire.transaction_bits`,
unstuffed), as in
:func:`.usb2_schedule.run_transfers`; a NAKed IN holds the line for its token, a turnaround and
the NAK.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from ..protocol import uas
from ..protocol import usb2_wire as wire
from ..protocol.names import Direction
from ..protocol.usb2 import CLOCK_HZ
from .usb2_hosts import HostProfile

__all__ = ["UasTimes", "uas_run", "uas_period"]

_COMMAND, _STATUS, _DATA = "command", "status", "data"


@dataclass(frozen=True)
class UasTimes:
    """When a stepped UAS run started and its commands ended, in 60 MHz line cycles.

    Attributes
    ----------
    start : int
        The first submission.
    done : list of int
        Per command in the order given, when the driver had both its data and its SENSE.
    """

    start: int
    done: list[int]

    @property
    def end(self) -> int:
        return max(self.done)


@dataclass
class _Transfer:
    pipe: str
    command: int  # index of the command it serves (-1: a status transfer, any command's)
    packets: int
    last: int  # payload of its last packet
    ready_at: int


class _Timing:
    """The profile's and the wire's constants, in line cycles."""

    def __init__(self, profile: HostProfile, direction: str, max_packet_size: int) -> None:
        cycles = wire.bits_to_cycles
        self.profile, self.direction, self.mps = profile, direction, max_packet_size
        self.uframe = wire.UFRAME_CYCLES
        self.after_sof = cycles(wire.sof_bits()) + cycles(wire.IPD_HOST_BACK_TO_BACK_BITS)
        self.ipd = cycles(wire.IPD_MIN_BITS)
        self.gap = cycles(round(profile.inter_transaction_gap_ns * wire.BIT_RATE / 1e9))
        self.completion = round(profile.completion_latency_us * 1e-6 * CLOCK_HZ)
        self.resubmit = round(profile.resubmit_latency_us * 1e-6 * CLOCK_HZ)
        self.nak = cycles(wire.packet_bits(wire.Pid.IN) + wire.IPD_MIN_BITS
                          + wire.packet_bits(wire.Pid.NAK))
        self._lines: dict[tuple[str, int], int] = {}
        self.limits = {pipe: profile.max_per_uframe(self.pipe_direction(pipe))
                       for pipe in (_COMMAND, _STATUS, _DATA)}

    def pipe_direction(self, pipe: str) -> str:
        if pipe == _DATA:
            return self.direction
        return Direction.OUT if pipe == _COMMAND else Direction.IN

    def reserve(self, direction: str) -> int:
        return self.line(direction, self.mps)

    def line(self, direction: str, payload: int) -> int:
        key = (direction, payload)
        if key not in self._lines:
            self._lines[key] = wire.bits_to_cycles(wire.transaction_bits(direction,
                                                                         payload).total)
        return self._lines[key]

    def completes(self, end: int) -> int:
        done = end + self.completion
        if self.profile.completion_on_uframe:
            done = -(-done // self.uframe) * self.uframe
        return done


class _Bus:
    """The line: microframes, per-endpoint counts, and whose turn it is."""

    def __init__(self, timing: _Timing, start: int) -> None:
        self.t = timing
        self.uframe_start = start // timing.uframe * timing.uframe
        self.free_at = max(start, self.uframe_start + timing.after_sof)
        self.counts: dict[str, int] = {}
        self.order: list[str] = []
        self.turn = 0

    def advance(self, cycle: int) -> None:
        while cycle >= self.uframe_start + self.t.uframe:
            self.uframe_start += self.t.uframe
            self.counts.clear()
            self.free_at = max(self.uframe_start, self.free_at) + self.t.after_sof
        self.free_at = max(self.free_at, cycle)

    def start_within(self, reserve: int) -> int:
        """Where a transaction whose budget is ``reserve`` starts (the next microframe if it
        does not fit this one)."""
        self.advance(self.free_at)
        if self.free_at + reserve > self.uframe_start + self.t.uframe:
            self.advance(self.uframe_start + self.t.uframe)
        return self.free_at


class _Stepper:
    """One UAS run: the driver, the device and the bus (see the module docstring)."""

    def __init__(self, timing: _Timing, lengths: Sequence[int], queue_depth: int,
                 start: int) -> None:
        self.t, self.lengths, self.queue_depth = timing, list(lengths), queue_depth
        self.bus = _Bus(timing, start)
        self.queues: dict[str, deque[_Transfer]] = {}
        self.due: list[tuple[int, str, int]] = []  # (cycle, what, command)
        self.sent = 0
        self.data_done: set[int] = set()
        self.sense_done: set[int] = set()
        self.done: dict[int, int] = {}
        # The device: commands received and not yet announced, the one moving data, and what
        # its status pipe will say next, oldest first.
        self.waiting: deque[int] = deque()
        self.moving: int | None = None
        self.says: deque[tuple[str, int]] = deque()
        self.start = start

    # -- the driver -----------------------------------------------------------------------------
    def _submit(self, transfers: list[_Transfer]) -> None:
        for transfer in transfers:
            self.queues.setdefault(transfer.pipe, deque()).append(transfer)

    def _command(self, ready: int) -> list[_Transfer]:
        index = self.sent
        self.sent += 1
        return [_Transfer(_COMMAND, index, 1, uas.COMMAND_SIZE, ready),
                _Transfer(_STATUS, -1, 1, 0, ready)]

    def _answer(self, what: str, index: int, ready: int) -> list[_Transfer]:
        if what == "ready":
            length = self.lengths[index]
            packets = max(1, -(-length // self.t.mps))
            last = length - (packets - 1) * self.t.mps
            return [_Transfer(_DATA, index, packets, last, ready),
                    _Transfer(_STATUS, -1, 1, 0, ready)]
        (self.data_done if what == "data" else self.sense_done).add(index)
        if index in self.data_done and index in self.sense_done:
            self.done[index] = ready - self.t.resubmit  # the completion it answers
            if self.sent < len(self.lengths):
                return self._command(ready)
        return []

    def _reap(self) -> None:
        first = min(cycle for cycle, _, _ in self.due)
        now = [entry for entry in self.due if entry[0] == first]
        self.due = [entry for entry in self.due if entry[0] != first]
        answer: list[_Transfer] = []
        for _, what, index in now:
            answer += self._answer(what, index, first + self.t.resubmit)
        self._submit(answer)

    # -- the device ------------------------------------------------------------------------------
    def _announce(self) -> None:
        if self.moving is None and self.waiting:
            self.moving = self.waiting.popleft()
            self.says.append(("ready", self.moving))

    # -- the bus ---------------------------------------------------------------------------------
    def _limited(self, pipe: str) -> bool:
        return self.bus.counts.get(pipe, 0) >= self.t.limits[pipe]

    def _transact(self, pipe: str) -> None:
        transfer = self.queues[pipe][0]
        bus, t = self.bus, self.t
        direction = t.pipe_direction(pipe)
        start = bus.start_within(t.reserve(direction))
        finished: tuple[str, int] | None = None
        if pipe == _COMMAND:
            end = start + t.line("out", uas.COMMAND_SIZE)
            self.waiting.append(transfer.command)
            self._announce()
            finished = ("command", transfer.command)
        elif pipe == _STATUS and not self.says:
            end = start + t.nak
        elif pipe == _STATUS:
            what, index = self.says.popleft()
            size = uas.READY_SIZE if what == "ready" else uas.SENSE_HEADER_SIZE
            end = start + t.line("in", size)
            finished = (what, index)
        else:
            transfer.packets -= 1
            end = start + (t.line(direction, transfer.last) if transfer.packets == 0
                           else t.reserve(direction))
            if transfer.packets == 0:
                finished = ("data", transfer.command)
                self.says.append(("sense", transfer.command))
                self.moving = None
                self._announce()
        bus.counts[pipe] = bus.counts.get(pipe, 0) + 1
        bus.free_at = end + t.ipd + t.gap
        if finished is not None:
            self.queues[pipe].popleft()
            if finished[0] != "command":
                self.due.append((t.completes(end), *finished))

    def run(self) -> UasTimes:
        first: list[_Transfer] = []
        while self.sent < min(self.queue_depth, len(self.lengths)):
            first += self._command(self.start)
        self._submit(first)
        while len(self.done) < len(self.lengths):
            self._step()
        return UasTimes(self.start, [self.done[i] for i in range(len(self.lengths))])

    def _step(self) -> None:
        bus = self.bus
        before = min((cycle for cycle, _, _ in self.due), default=None)
        for pipe, queue in self.queues.items():
            if queue and pipe not in bus.order:
                bus.order.append(pipe)
        if not any(self.queues.values()):
            bus.order, bus.turn = [], 0
            self._reap()
            return
        order = bus.order[bus.turn:] + bus.order[:bus.turn]
        chosen = next((pipe for pipe in order if self.queues.get(pipe)
                       and not self._limited(pipe)
                       and self.queues[pipe][0].ready_at <= bus.free_at), None)
        if chosen is None:
            waiting = [self.queues[pipe][0].ready_at for pipe in order
                       if self.queues.get(pipe) and not self._limited(pipe)]
            target = (min(waiting) if waiting and min(waiting) > bus.free_at
                      else bus.uframe_start + self.t.uframe)
            if before is not None and before <= target:
                self._reap()
            else:
                bus.advance(target)
            return
        if before is not None and before <= bus.free_at:
            self._reap()
            return
        self._transact(chosen)
        bus.turn = (bus.order.index(chosen) + 1) % len(bus.order)


def uas_run(profile: HostProfile, direction: str, lengths: Sequence[int], *, queue_depth: int,
            start: int = 0, max_packet_size: int = 512) -> UasTimes:
    """Commands of ``lengths`` bytes (``direction`` ``in`` or ``out``), ``queue_depth``
    outstanding, the first submitted at cycle ``start``: when each was done (see the module
    docstring). ``end - start`` is what a host-timed run of them reads."""
    if direction not in (Direction.IN, Direction.OUT):
        raise ValueError(f"UAS moves data in or out, not {direction}")
    if queue_depth < 1 or not lengths or min(lengths) < 1:
        raise ValueError("a UAS run needs commands of at least one byte, queue depth >= 1")
    timing = _Timing(profile, direction, max_packet_size)
    return _Stepper(timing, lengths, queue_depth, start).run()


def uas_period(profile: HostProfile, direction: str, lengths: Sequence[int], *,
               queue_depth: int, max_packet_size: int = 512) -> float:
    """Seconds per round of ``lengths`` (one I/O's commands) in steady state: a run of enough
    rounds for the start-up to pass, averaged over the later half. Kept per arguments: a sweep
    asks for the same point's ceiling more than once, and inside an emulated guest one stepping
    takes seconds."""
    # A profile holds its sources (a dict): its repr is the key.
    key = (repr(profile), direction, tuple(lengths), queue_depth, max_packet_size)
    if key not in _PERIODS:
        if len(_PERIODS) >= 256:
            _PERIODS.clear()
        _PERIODS[key] = _steady_period(profile, direction, list(lengths), queue_depth,
                                       max_packet_size)
    return _PERIODS[key]


_PERIODS: dict[tuple[object, ...], float] = {}


def _steady_period(profile: HostProfile, direction: str, lengths: list[int],
                   queue_depth: int, max_packet_size: int) -> float:
    rounds = 12
    times = uas_run(profile, direction, list(lengths) * rounds, queue_depth=queue_depth,
                    max_packet_size=max_packet_size)
    per_round = len(lengths)
    half = rounds // 2
    ends = [max(times.done[r * per_round:(r + 1) * per_round]) for r in range(rounds)]
    return (ends[-1] - ends[half - 1]) / (rounds - half) / CLOCK_HZ
