"""The one queue of bulk transfers every USB platform offers, and how a plan runs on it.

A :class:`~.platform.UsbPlatform` moves bulk data only as :class:`Transfer` s submitted to its
queue and :class:`Completion` s reaped from it, as libusb's asynchronous API and a host
controller's schedule do. What to submit, and what to do when one completes, is a
:class:`TransferPlan`: a small object with no I/O of its own (the bulk stream, the loopback
pair, Bulk-Only Transport's CBW / data / CSW in :mod:`.plans` and :mod:`.bot`). So every
protocol is written once, and :func:`run_plan` runs it on a board (libusb) and on the
simulated bus alike; the simulated host controllers run the same plans in their cocotb tests
(:mod:`busprobe.sim.transfer_engine`).

Timing: :meth:`TransferQueue.submit` returns the time its transfers were submitted and every
completion carries the time the host learned of it, both on the platform's clock (wall time on a
board, simulated time in simulation). A simulated host reacts to a completion after its driver's
resubmit latency; that is why plans hand back what they submit *in answer* to a completion.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...transport import TransferTimeout, TransportError

__all__ = ["Transfer", "Completion", "TransferQueue", "TransferPlan", "run_plan",
           "silence_for", "SLOWEST_RATE"]


@dataclass(frozen=True)
class Transfer:
    """One bulk transfer to submit.

    Attributes
    ----------
    endpoint : int
        Endpoint address; bit 7 set: IN.
    length : int
        Bytes asked for (IN) or sent (OUT: ``len(data)``).
    data : bytes or None
        What an OUT transfer sends.
    tag : object
        The plan's own: handed back in the transfer's completion.
    zlp : bool
        OUT: end with a zero-length packet when ``length`` is a multiple of the packet size
        (libusb's ``ADD_ZERO_PACKET``).
    stream_id : int
        The bulk stream it is queued on (``busprobe.protocol.streams``; 0: the endpoint has
        no streams), as libusb's ``libusb_transfer_set_stream_id``.
    """

    endpoint: int
    length: int
    data: bytes | None = None
    tag: Any = None
    zlp: bool = False
    stream_id: int = 0

    @property
    def incoming(self) -> bool:
        return bool(self.endpoint & 0x80)


@dataclass(frozen=True)
class Completion:
    """A transfer the platform finished.

    Attributes
    ----------
    transfer : Transfer
        As submitted.
    actual : int
        Bytes moved (fewer than asked: a short transfer).
    data : bytes
        What an IN transfer received (``b""`` for OUT).
    time : float
        When the host learned of the completion, on the platform's clock.
    stalled : bool
        The endpoint answered STALL; what to do about it is the plan's decision (an error for
        a stream, a status to pass on for a relay). Every other failure is raised by
        :meth:`TransferQueue.reap`.
    """

    transfer: Transfer
    actual: int
    data: bytes = b""
    time: float = 0.0
    stalled: bool = False


class TransferQueue(Protocol):
    """Bulk transfers in flight on one device (part of every USB platform)."""

    def submit(self, transfers: Sequence[Transfer]) -> float:
        """Queue ``transfers`` (each endpoint's in order); returns when, on the platform's
        clock."""

    def reap(self, timeout: float) -> list[Completion]:
        """Completions since the last call, waiting up to ``timeout`` seconds of the platform's
        clock for at least one (``[]`` when none came). Raises the transport error of a
        transfer that failed other than by a STALL."""

    def cancel(self) -> None:
        """Cancel every transfer in flight and wait until they are back; what completed and was
        not reaped is dropped."""

    def run_stream(self, plan: object, *, silence: float) -> tuple[float, float] | None:
        """Run the whole ``plan`` here and return its window, or None when this queue does not
        take that plan (then :func:`run_plan` runs it transfer by transfer). Default: None; the
        libusb queue runs a queued stream in native code (:mod:`.native_stream`)."""
        return None


class TransferPlan(Protocol):
    """What to submit, and what to submit next when a transfer completes (no I/O)."""

    def start(self) -> Sequence[Transfer]:
        """The transfers submitted at the start."""

    def completed(self, completion: Completion) -> Sequence[Transfer]:
        """Take one completion; return the transfers submitted in answer to it."""


#: The slowest working link :func:`silence_for` allows for: far below any real USB link, and on
#: an emulated machine below what QEMU's controllers move in the VM harness (~0.15-0.5 MB/s
#: there, with a simulated device behind them).
SLOWEST_RATE = {None: 1e6, "qemu": 50e3}


def silence_for(length: int, emulated: str | None = None) -> float:
    """Seconds without any completion after which a run of ``length``-byte transfers counts as
    stuck: 2 s plus one transfer at the slowest working rate (:data:`SLOWEST_RATE`; on an
    ``emulated`` machine, :func:`busprobe.emulation.emulated_host`, a slower one).

    Progress, not age, tells a stuck device: a transfer queued behind others waits for all of
    them, and behind a slow host that is longer than any bound fixed at submission (in the VM
    harness, an emulated controller at ~0.3 MB/s, libusb's per-transfer timeout fired on
    healthy queue-depth-8 streams).
    """
    return 2.0 + length / SLOWEST_RATE.get(emulated, SLOWEST_RATE[None])


def run_plan(queue: TransferQueue, plan: TransferPlan, *, what: str,
             silence: float) -> tuple[float, float]:
    """Run ``plan`` on ``queue`` until nothing is in flight.

    Returns the time of the first submission and of the last completion (the host-timed
    window). When no transfer completes for ``silence`` seconds the run fails with
    :class:`TransferTimeout`; on any failure every transfer still in flight is cancelled.

    The queue is offered the whole plan first (:meth:`TransferQueue.run_stream`: the libusb
    queue's native stream, :mod:`.native_stream`).
    """
    window = queue.run_stream(plan, silence=silence)
    if window is not None:
        return window
    first = list(plan.start())
    start = queue.submit(first)
    end, flying = start, len(first)
    try:
        while flying:
            done = queue.reap(silence)
            if not done:
                raise TransferTimeout(f"{what}: timed out: {flying} transfer(s) in flight, "
                                      f"none completed within {silence:.1f} s")
            answer: list[Transfer] = []
            for completion in done:
                flying -= 1
                end = max(end, completion.time)
                answer += plan.completed(completion)
            if answer:
                queue.submit(answer)
                flying += len(answer)
    except BaseException:
        try:
            queue.cancel()
        except TransportError:
            pass  # the device is gone with everything in flight: the first error tells
        raise
    return start, end
