"""A queued bulk stream run by native code over libusb's asynchronous API.

:class:`NativeStream` runs what :class:`~.plans.QueuedStream` describes — ``count`` transfers of
``length`` bytes on one endpoint, ``depth`` in flight, each completion answered with the next —
in ``native/usb_stream.c``, which answers every completion from libusb's callback with no Python
call in between. It is the same plan with the same outcome (the plan's counts and IN data, the
host-timed window on :func:`time.perf_counter`'s clock, the same errors); only the loop moves.
:func:`~.transfers.run_plan` hands a queued stream to it when the queue offers one
(:meth:`~.libusb_queue.LibusbTransferQueue.run_stream`); every other plan (loopback, BOT) runs
in Python.

Why: on this machine the Python loop over python-libusb1 sustains 65-90 k completions per
second at 4 KiB and queue depth 8 against a libusb that costs nothing
(:mod:`busprobe.tool_ceiling`); a SuperSpeed port at 4 KiB needs about 116 k, so the tool, not
the port, would set every small transfer's figure.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from typing import Any

from ...transport import EndpointStalled, TransferTimeout, TransportError
from .native import NativeUnavailable, build
from .plans import QueuedStream

__all__ = ["NativeStream", "StreamFailure", "native_stream_for"]

log = logging.getLogger(__name__)

OK, STALLED, FAILED, SUBMIT_ERROR, TIMEOUT, NO_MEMORY, STOPPED = range(7)


class _Result(ctypes.Structure):
    _fields_ = [("outcome", ctypes.c_int), ("index", ctypes.c_int), ("status", ctypes.c_int),
                ("completed", ctypes.c_int), ("start", ctypes.c_double),
                ("end", ctypes.c_double)]


class StreamFailure(Exception):
    """A transfer failed (libusb ``status``) or could not be submitted (libusb ``error``): the
    caller maps it as the Python path maps the same libusb codes."""

    def __init__(self, *, status: int | None = None, error: int | None = None) -> None:
        super().__init__(status if status is not None else error)
        self.status, self.error = status, error


class NativeStream:
    """``usb_stream.c`` bound to one loaded libusb.

    Parameters
    ----------
    libusb : ctypes.CDLL
        The libusb the native code calls (python-libusb1's, or the zero-latency stand-in).
    """

    _code: ctypes.CDLL | None = None

    def __init__(self, libusb: ctypes.CDLL) -> None:
        code = self._load()
        self._functions = ctypes.create_string_buffer(code.bp_sizes(0))
        if code.bp_bind(ctypes.c_void_p(libusb._handle), self._functions) != 0:
            raise NativeUnavailable("the libusb loaded lacks the asynchronous transfer API")
        self._stream = code.bp_stream

    @classmethod
    def _load(cls) -> ctypes.CDLL:
        if cls._code is None:
            code = ctypes.CDLL(str(build("usb_stream")))
            code.bp_sizes.restype = ctypes.c_size_t
            code.bp_sizes.argtypes = [ctypes.c_int]
            code.bp_bind.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            code.bp_stream.argtypes = [
                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                ctypes.c_double, ctypes.POINTER(_Result), ctypes.POINTER(ctypes.c_int)]
            code.bp_stream.restype = ctypes.c_int
            cls._code = code
        return cls._code

    def run(self, context: Any, handle: Any, plan: QueuedStream, *,
            silence: float) -> tuple[float, float]:
        """Run ``plan`` on the device ``handle`` (a ``libusb_device_handle *``) whose events
        ``context`` handles; returns the host-timed window and leaves the plan as
        :func:`~.transfers.run_plan` would. Raises :class:`EndpointStalled`,
        :class:`TransferTimeout`, or :class:`StreamFailure` for a libusb code."""
        count, length = plan.count, plan.length
        data = bytearray(count * length)
        if not plan.incoming:
            offset = 0
            for chunk in plan.outgoing:
                data[offset:offset + length] = chunk
                offset += length
        buffer = (ctypes.c_ubyte * len(data)).from_buffer(data) if data else None
        actual = (ctypes.c_int * count)()
        result, stop = _Result(), ctypes.c_int(0)
        # In a thread (ctypes lets go of the GIL), so that this one stays in Python and takes
        # Ctrl-C, SIGTERM and SIGHUP as the Python loop would: it asks the stream to stop,
        # which cancels the transfers in flight and waits for them, then re-raises. The wait is
        # on an event, not Thread.join: Python 3.11's join, interrupted by Ctrl-C, takes the
        # running thread's lock for one it acquired and marks the thread stopped (the bpo-45274
        # branch of Thread._wait_for_tstate_lock), so a second join returns at once.
        finished = threading.Event()

        def work() -> None:
            try:
                self._stream(self._functions, context, handle, plan.endpoint, int(plan.zlp),
                             length, count, plan.depth, buffer, actual, silence,
                             ctypes.byref(result), ctypes.byref(stop))
            finally:
                finished.set()

        worker = threading.Thread(target=work, name="busprobe-native-stream", daemon=True)
        try:
            worker.start()
            while not finished.wait(0.05):
                pass
        except BaseException:
            stop.value = 1
            if worker.ident is not None:  # started (an interrupt may come before)
                while not finished.wait(0.05):
                    pass
            raise
        plan.absorb(list(actual[:result.completed]), data)
        if result.outcome == STALLED:
            raise EndpointStalled(f"{plan.what}: the endpoint stalled")
        if result.outcome == TIMEOUT:
            raise TransferTimeout(f"{plan.what}: timed out: "
                                  f"{min(plan.depth, count - result.completed)} transfer(s) in "
                                  f"flight, none completed within {silence:.1f} s")
        if result.outcome == FAILED:
            raise StreamFailure(status=result.status)
        if result.outcome == SUBMIT_ERROR:
            raise StreamFailure(error=result.status)
        if result.outcome == NO_MEMORY:
            raise TransportError(f"{plan.what}: out of memory for {plan.depth} transfers")
        return result.start, result.end


def native_stream_for(libusb: ctypes.CDLL | None) -> NativeStream | None:
    """A :class:`NativeStream` over ``libusb``, or None (said in the log) where there is no
    such library (a stand-in ``usb1`` in tests) or the native code cannot be built."""
    if not isinstance(libusb, ctypes.CDLL):
        return None
    try:
        return NativeStream(libusb)
    except (NativeUnavailable, OSError) as exc:
        log.info("native stream unavailable, the Python loop runs: %s", exc)
        return None
