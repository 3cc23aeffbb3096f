"""Transfer plans of the busprobe USB device: a queued bulk stream, and several at once.

:class:`QueuedStream` is what every USB sweep point does: ``count`` transfers of ``length``
bytes on one endpoint, ``depth`` of them in flight, each completion answered with the next.
:class:`Together` runs several plans on one device at once: the loopback pair (OUT and IN
queued together, :func:`loopback`). Bulk-Only Transport is :class:`~.bot.BotRun`. Each runs
with :func:`~.transfers.run_plan` on any platform.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...protocol import usb2
from ...protocol.names import Direction
from ...transport import EndpointStalled, Sink, StreamResult
from .transfers import Completion, Transfer

__all__ = ["QueuedStream", "Together", "loopback", "loopback_result"]


class QueuedStream:
    """``count`` bulk transfers of ``length`` bytes on ``endpoint``, ``depth`` in flight.

    IN data is kept in submission order (whatever order completions come in) and handed to a
    sink by :meth:`deliver` after the run, so the queue never waits for the host's pattern code;
    OUT data is made before the run, for the same reason.

    Parameters
    ----------
    endpoint : int
        Endpoint address (bit 7: IN).
    length, count, depth : int
        Transfer length, transfers in all, transfers in flight.
    outgoing : sequence of bytes, optional
        OUT: one buffer per transfer.
    zlp : bool
        OUT: end a transfer whose length is a multiple of the packet size with a ZLP.
    what : str
        Names the stream in errors.
    """

    def __init__(self, endpoint: int, length: int, count: int, depth: int, *,
                 outgoing: Sequence[bytes] | None = None, zlp: bool = False,
                 what: str = "bulk transfer") -> None:
        self.endpoint, self.length, self.count = endpoint, length, count
        self.depth, self.zlp, self.what = max(1, min(depth, count)), zlp, what
        self.incoming = bool(endpoint & 0x80)
        self.outgoing: Sequence[bytes] = outgoing or ()
        if not self.incoming and len(self.outgoing) != count:
            raise ValueError(f"{what}: {len(self.outgoing)} OUT buffers for {count} transfers")
        self.submitted = self.completed_count = self.moved = self.short = 0
        self.received: dict[int, bytes] = {}

    def _next(self) -> Transfer:
        index = self.submitted
        self.submitted += 1
        return Transfer(self.endpoint, self.length,
                        None if self.incoming else bytes(self.outgoing[index]), tag=index,
                        zlp=self.zlp)

    def start(self) -> list[Transfer]:
        return [self._next() for _ in range(self.depth)]

    def completed(self, completion: Completion) -> list[Transfer]:
        if completion.stalled:
            raise EndpointStalled(f"{self.what}: the endpoint stalled")
        self.completed_count += 1
        self.moved += completion.actual
        self.short += completion.actual < self.length
        if self.incoming:
            self.received[completion.transfer.tag] = completion.data
        return [self._next()] if self.submitted < self.count else []

    def absorb(self, actual: Sequence[int], data: bytes | bytearray) -> None:
        """Take the outcome of a run made elsewhere (:mod:`.native_stream`): each completed
        transfer's actual length, in submission order, and IN data at ``length`` strides."""
        view = memoryview(data)
        self.submitted = max(self.submitted, len(actual))
        for index, moved in enumerate(actual):
            self.completed_count += 1
            self.moved += moved
            self.short += moved < self.length
            if self.incoming:
                start = index * self.length
                self.received[index] = view[start:start + moved]

    def deliver(self, sink: Sink | None) -> None:
        """IN data to ``sink``, in submission order."""
        for index in sorted(self.received):
            if sink is not None:
                sink(self.received[index])
        self.received.clear()

    def result(self, start: float, end: float) -> StreamResult:
        direction = Direction.IN if self.incoming else Direction.OUT
        return StreamResult(direction, self.moved, self.completed_count, start, end,
                            short_transfers=self.short)


class Together:
    """Several plans on one device at once; each sees only its own completions."""

    def __init__(self, plans: Sequence[QueuedStream]) -> None:
        self.plans = list(plans)

    @staticmethod
    def _mark(index: int, transfers: Sequence[Transfer]) -> list[Transfer]:
        return [replace(transfer, tag=(index, transfer.tag)) for transfer in transfers]

    def start(self) -> list[Transfer]:
        return [t for i, plan in enumerate(self.plans) for t in self._mark(i, plan.start())]

    def completed(self, completion: Completion) -> list[Transfer]:
        index, tag = completion.transfer.tag
        own = replace(completion, transfer=replace(completion.transfer, tag=tag))
        return self._mark(index, self.plans[index].completed(own))


def loopback(length: int, count: int, depth: int, outgoing: Sequence[bytes], *, what: str,
             endpoints: tuple[int, int] = (usb2.EP_OUT, usb2.EP_IN)) -> Together:
    """``count`` OUT transfers of ``outgoing[i]`` and ``count`` IN transfers of ``length``
    bytes, both queues ``depth`` deep at once, for a device that returns OUT data on IN
    (``endpoints``: the OUT and the IN endpoint address)."""
    out_endpoint, in_endpoint = endpoints
    return Together([
        QueuedStream(out_endpoint, length, count, depth, outgoing=outgoing,
                     what=f"{what} out transfer"),
        QueuedStream(in_endpoint, length, count, depth, what=f"{what} in transfer")])


def loopback_result(pair: Together, start: float, end: float) -> StreamResult:
    """What came back (the IN stream), timed from the first submission to the last completion
    of either direction."""
    returned = pair.plans[1].result(start, end)
    return replace(returned, direction="loopback")
