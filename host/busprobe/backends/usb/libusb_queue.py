"""The transfer queue on a board: libusb's asynchronous bulk transfers, really in flight at once.

:class:`LibusbTransferQueue` is :class:`~.transfers.TransferQueue` over python-libusb1: each
:class:`~.transfers.Transfer` becomes a libusb transfer (reused from a pool, never leaked), and
libusb's event loop, pumped by :meth:`~LibusbTransferQueue.reap`, hands completions back.
python-libusb1 cannot pass an exception out of its completion callback, so the callback only
records what happened; :meth:`~LibusbTransferQueue.reap` raises a failed transfer's error.

A queued stream (every sweep point) runs in native code where it can be built
(:meth:`~LibusbTransferQueue.run_stream`, :mod:`.native_stream`): python-libusb1 costs some
10 µs a transfer, more than a SuperSpeed port leaves at 4 KiB (``busprobe.tool_ceiling``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from ...protocol.names import Direction
from ...signals import raise_deferred
from ...transport import TransportError
from .libusb import map_usb_error, transfer_status_error
from .native_stream import NativeStream, StreamFailure, native_stream_for
from .plans import QueuedStream
from .transfers import Completion, Transfer, TransferQueue

__all__ = ["LibusbTransferQueue"]

log = logging.getLogger(__name__)

#: How long :meth:`LibusbTransferQueue.cancel` waits for cancelled transfers to come back.
CANCEL_WAIT_S = 2.0


class LibusbTransferQueue(TransferQueue):
    """Bulk transfers in flight on one opened device.

    Parameters
    ----------
    usb1 : module
        python-libusb1 (its constants and errors).
    context, handle : usb1 objects
        The libusb context whose events complete the transfers, and the device handle.
    name : str
        Prefix of error messages.
    native : bool
        Run queued streams in native code where it can be built (False: always in Python).
    """

    def __init__(self, usb1: Any, context: Any, handle: Any, *, name: str,
                 native: bool = True) -> None:
        self.usb1, self.context, self.handle, self.name = usb1, context, handle, name
        self._native: NativeStream | None | bool = native  # True: not looked for yet
        self.native_runs = 0  # streams run in native code
        self._idle: list[Any] = []
        self._flying: set[Any] = set()
        self._done: list[Completion] = []
        self._failure: TransportError | None = None
        self.created = 0  # libusb transfers allocated (the pool's size)

    def _what(self, transfer: Transfer) -> str:
        direction = Direction.IN if transfer.incoming else Direction.OUT
        return f"{self.name}: {direction} transfer"

    def submit(self, transfers: Sequence[Transfer]) -> float:
        now = time.perf_counter()
        for transfer in transfers:
            raw = self._idle.pop() if self._idle else self._new()
            buffer: Any = bytearray(transfer.length) if transfer.incoming else 0
            raw.setBulk(transfer.endpoint, buffer, callback=self._completed, timeout=0)
            if not transfer.incoming:
                raw.setBuffer(transfer.data)
            raw.setUserData(transfer)
            raw.setAddZeroPacket(transfer.zlp)
            try:
                raw.submit()
            except self.usb1.USBError as exc:
                self._idle.append(raw)
                raise map_usb_error(exc, self._what(transfer)) from None
            self._flying.add(raw)
        return now

    def run_stream(self, plan: object, *, silence: float) -> tuple[float, float] | None:
        """Run a :class:`~.plans.QueuedStream` in native code; None when the plan is another
        kind, the native stream is off or cannot be built here (then :func:`~.transfers.run_plan`
        runs it in Python)."""
        if not isinstance(plan, QueuedStream) or self._flying or self._native is False:
            return None
        # python-libusb1 (pinned: 3.4.0) keeps the raw pointers in private attributes (it has no
        # public accessor); a stand-in usb1 (the tests' fake bus) or another release of it has
        # none, and runs the Python loop.
        context = getattr(self.context, "_USBContext__context_p", None)
        handle = getattr(self.handle, "_USBDeviceHandle__handle", None)
        if context is None or handle is None:
            self._native = False
            _say_no_raw_pointers()
            return None
        if self._native is True:
            self._native = native_stream_for(getattr(self.usb1._libusb1, "libusb", None)) \
                or False
        if self._native is False:
            return None
        transfer = Transfer(plan.endpoint, plan.length, zlp=plan.zlp)
        self.native_runs += 1
        try:
            return self._native.run(context, handle, plan, silence=silence)
        except StreamFailure as failure:
            if failure.status is not None:
                raise transfer_status_error(failure.status, self._what(transfer)) from None
            error = self.usb1.STATUS_TO_EXCEPTION_DICT.get(failure.error, self.usb1.USBError)
            raise map_usb_error(error(failure.error), self._what(transfer)) from None

    def _new(self) -> Any:
        self.created += 1
        return self.handle.getTransfer()

    def _completed(self, raw: Any) -> None:
        self._flying.discard(raw)
        self._idle.append(raw)
        transfer: Transfer = raw.getUserData()
        status = raw.getStatus()
        usb1 = self.usb1
        if status == usb1.TRANSFER_CANCELLED:
            return
        if status in (usb1.TRANSFER_COMPLETED, usb1.TRANSFER_STALL):
            actual = raw.getActualLength()
            data = bytes(raw.getBuffer()[:actual]) if transfer.incoming else b""
            self._done.append(Completion(transfer, actual, data, time.perf_counter(),
                                         stalled=status == usb1.TRANSFER_STALL))
        elif self._failure is None:
            self._failure = transfer_status_error(status, self._what(transfer))

    def reap(self, timeout: float) -> list[Completion]:
        deadline = time.perf_counter() + timeout
        while not self._done and self._failure is None and self._flying:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            self.context.handleEventsTimeout(min(left, 0.1))
            raise_deferred()  # a Ctrl-C that came during a completion callback
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        done, self._done = self._done, []
        return done

    def cancel(self) -> None:
        for raw in list(self._flying):
            try:
                raw.cancel()
            except self.usb1.USBError:
                pass  # completed meanwhile, or the device is gone: either way it ends
        deadline = time.perf_counter() + CANCEL_WAIT_S
        while self._flying and time.perf_counter() < deadline:
            self.context.handleEventsTimeout(0.05)
        self._done.clear()
        self._failure = None

    def close(self) -> None:
        """Cancel what is in flight and free the pool."""
        self.cancel()
        for raw in self._idle:
            raw.close()
        self._idle.clear()


_said_no_raw_pointers = False


def _say_no_raw_pointers() -> None:
    """Say once per process that streams run in the Python loop: python-libusb1's private
    ``_USBContext__context_p`` / ``_USBDeviceHandle__handle`` are not there (not the pinned
    3.4.0, or a stand-in), so the tool's own ceiling is the Python loop's."""
    global _said_no_raw_pointers
    if not _said_no_raw_pointers:
        _said_no_raw_pointers = True
        log.warning("python-libusb1 has no _USBContext__context_p/_USBDeviceHandle__handle "
                    "(busprobe pins 3.4.0): bulk streams run in the Python loop, not the "
                    "native stream")
