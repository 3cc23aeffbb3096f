"""Every way a user or a system ends a run is a Ctrl-C to the code, and only the first one counts.

``timeout``, a CI cancel, ``kill`` and a closed terminal send SIGTERM or SIGHUP, which by default
end Python at once: no partial result is saved and a simulator child may be left running. Inside
:func:`interruptible` they raise :class:`Terminated`, a :class:`KeyboardInterrupt`, so they take
the path Ctrl-C takes (the sweep saves its points with ``"complete": false``, simulators are
stopped). While that clean-up runs, further SIGINT/SIGTERM/SIGHUP are ignored: a second Ctrl-C
must not lose the points being written.

A signal that arrives inside a ctypes callback must not raise there: ctypes prints the exception
and drops it ("Exception ignored on calling ctypes callback function"), and python-libusb1 runs
every transfer's completion callback inside libusb's event handling, so the interrupt was lost,
the transfer's bookkeeping cut short and the sweep hung on it (the VM's Ctrl-C check behind
EHCI, once in many runs, 2026-12-05). There the signal is deferred, and the event loop raises it
with :func:`raise_deferred` once the callback has returned.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "interruptible", "exit_status", "raise_deferred"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: python-libusb1's ctypes entry for transfer callbacks (``usb1.USBTransfer``): a frame of it on
#: the stack means a signal's exception would be dropped (see module).
_CALLBACK_ENTRIES = frozenset({"__callbackWrapper"})
#: A signal that came inside a callback, for :func:`raise_deferred`.
_deferred: list[int] = []


def _inside_callback(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_name in _CALLBACK_ENTRIES:
            return True
        frame = frame.f_back
    return False


def _raise(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def raise_deferred() -> None:
    """Raise the signal that arrived inside a ctypes callback, if one did (an event loop calls
    this after each pass of libusb's event handling)."""
    if _deferred:
        _raise(_deferred.pop())


class Terminated(KeyboardInterrupt):
    """The run was ended by a signal other than SIGINT (``str()`` names it)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"terminated ({signal.Signals(signum).name})")


def exit_status(exc: KeyboardInterrupt) -> int:
    """128 + the signal's number, as shells report a process ended by it."""
    return 128 + (exc.signum if isinstance(exc, Terminated) else signal.SIGINT)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into :class:`Terminated`; the first signal only (see module)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    fired = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal fired
        if fired:
            return
        fired = True
        if _inside_callback(frame):
            _deferred.append(signum)
            return
        _raise(signum)

    previous = {signum: signal.signal(signum, handler) for signum in _SIGNALS}
    try:
        yield
    finally:
        _deferred.clear()
        for signum, old in previous.items():
            # Once interrupted the process is ending: a late second Ctrl-C must not turn a clean
            # exit (status 130, results saved) into a death by signal during shutdown.
            signal.signal(signum, signal.SIG_IGN if fired else old)
