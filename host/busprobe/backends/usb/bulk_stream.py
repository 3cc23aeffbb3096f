"""Asynchronous bulk streaming with libusb: ``queue_depth`` transfers really outstanding at once.

Submit N transfers, resubmit each on completion until the count is reached, pump libusb events.
IN data is handed to the sink in submission order; OUT data is made before the clock starts.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ...transport import Sink, StreamResult, TransferTimeout
from .libusb import map_usb_error, transfer_status_error

__all__ = ["BulkStream", "run_together"]


class BulkStream:
    """One :meth:`~busprobe.backends.usb.libusb_platform.LibusbPlatform.bulk` call in flight.

    N transfers are kept outstanding and resubmitted until ``count`` have completed.

    libusb calls :meth:`_completed` from inside ``handleEvents``; python-libusb1 cannot pass an
    exception out of that callback, so failures are kept in :attr:`failure` and raised by
    :meth:`run`. The callback only copies data and resubmits, so the queue never waits for the
    host's pattern code: OUT data comes ready-made in ``outgoing`` and IN data is handed to
    the sink (checked) after the last completion. That holds ``count × length`` bytes in memory
    (at most 8 × 4 MiB with the default amortisation volume).
    """

    def __init__(self, usb1: Any, handle: Any, *, endpoint: int, length: int, count: int,
                 queue_depth: int, outgoing: Sequence[bytes] | None, what: str,
                 timeout_ms: int | None = None) -> None:
        self.usb1, self.handle, self.endpoint = usb1, handle, endpoint
        self.length, self.count, self.what = length, count, what
        self.incoming = bool(endpoint & usb1.ENDPOINT_IN)
        self.depth = min(queue_depth, count)
        # Progress, not age, tells a stuck device. A transfer queued behind others waits for all
        # of them, and on a slow host that is longer than any bound fixed at submission: in the
        # VM harness (an emulated controller, ~0.3 MB/s) libusb's per-transfer timeout fired on
        # healthy queue-depth-8 streams. So libusb transfers get none, and the stream gives up
        # when no transfer has completed for ``stall_ms``: 2 s plus one transfer at 1 MB/s, far
        # below any working USB 2.0 link (the cancelled transfers then end the stream).
        self.stall_ms = timeout_ms or 2000 + length // 1000
        self.submitted = self.completed = self.bytes = self.short = self.in_flight = 0
        self.received: dict[int, bytes] = {}
        self.delivered = 0
        self.failure: BaseException | None = None
        self.end = 0.0
        self.transfers: list[Any] = []
        self.outgoing: Sequence[bytes] = outgoing or ()
        if not self.incoming and len(self.outgoing) != count:
            raise ValueError(f"{what}: {len(self.outgoing)} OUT buffers for {count} transfers")
        self.last_completion = self.start = 0.0

    def _load(self, transfer: Any) -> None:
        """Point ``transfer`` at the next transfer of the stream."""
        transfer.setUserData(self.submitted)
        if not self.incoming:
            transfer.setBuffer(self.outgoing[self.submitted])
        self.submitted += 1

    def _submit(self, transfer: Any) -> None:
        try:
            transfer.submit()
        except self.usb1.USBError as exc:
            raise map_usb_error(exc, self.what) from None
        self.in_flight += 1

    def _completed(self, transfer: Any) -> None:
        self.in_flight -= 1
        try:
            status = transfer.getStatus()
            if self.failure is not None:
                return
            if status != self.usb1.TRANSFER_COMPLETED:
                self.failure = transfer_status_error(status, self.what)
                return
            self.end = self.last_completion = time.perf_counter()
            actual = transfer.getActualLength()
            self.completed += 1
            self.bytes += actual
            self.short += actual < self.length
            if self.incoming:
                self.received[transfer.getUserData()] = bytes(transfer.getBuffer()[:actual])
            if self.submitted < self.count:
                self._load(transfer)
                self._submit(transfer)
        except BaseException as exc:  # raised again by run(), see class doc
            self.failure = exc

    def _deliver(self, sink: Sink | None) -> None:
        while self.delivered in self.received:
            data = self.received.pop(self.delivered)
            self.delivered += 1
            if sink is not None:
                sink(data)

    def _cancel_all(self, context: Any) -> None:
        for transfer in self.transfers:
            if transfer.isSubmitted():
                try:
                    transfer.cancel()
                except self.usb1.USBError:
                    pass  # completed meanwhile, or the device is gone: either way it ends
        deadline = time.monotonic() + 2.0
        while self.in_flight > 0 and time.monotonic() < deadline:
            context.handleEventsTimeout(0.05)

    def run(self, context: Any, sink: Sink | None) -> StreamResult:
        return run_together(context, [(self, sink)])[0]

    def _start(self) -> None:
        for _ in range(self.depth):
            transfer = self.handle.getTransfer()
            buffer: Any = bytearray(self.length) if self.incoming else 0
            transfer.setBulk(self.endpoint, buffer, callback=self._completed, timeout=0)
            self.transfers.append(transfer)
        self.start = self.last_completion = time.perf_counter()
        for transfer in self.transfers:
            self._load(transfer)
            self._submit(transfer)

    def _close(self) -> None:
        for transfer in self.transfers:
            if not transfer.isSubmitted():
                transfer.close()

    def _result(self) -> StreamResult:
        direction = "in" if self.incoming else "out"
        return StreamResult(direction, self.bytes, self.completed, self.start,
                            self.end or self.start, short_transfers=self.short)


def run_together(context: Any, streams: Sequence[tuple[BulkStream, Sink | None]]
                 ) -> list[StreamResult]:
    """Run ``streams`` on one libusb context at once (a loopback keeps OUT and IN queued
    together); each stream's IN data goes to its sink after the last completion of all.

    The run fails when no transfer of any stream has completed for the longest ``stall_ms``
    of them, or when a stream fails; every transfer still in flight is then cancelled.
    """
    silence = max(stream.stall_ms for stream, _ in streams) / 1000
    try:
        for stream, _ in streams:
            stream._start()
        while any(stream.in_flight > 0 for stream, _ in streams):
            failed = next((stream.failure for stream, _ in streams
                           if stream.failure is not None), None)
            if failed is not None:
                raise failed
            context.handleEventsTimeout(0.1)
            latest = max(stream.last_completion for stream, _ in streams)
            if time.perf_counter() - latest > silence:
                flying = sum(stream.in_flight for stream, _ in streams)
                raise TransferTimeout(f"{streams[0][0].what}: timed out: {flying} transfer(s) "
                                      f"in flight, none completed within {silence:.1f} s")
        failed = next((stream.failure for stream, _ in streams if stream.failure is not None),
                      None)
        if failed is not None:
            raise failed
        for stream, sink in streams:
            stream._deliver(sink)
    except BaseException:
        for stream, _ in streams:
            stream._cancel_all(context)
        raise
    finally:
        for stream, _ in streams:
            stream._close()
    return [stream._result() for stream, _ in streams]
