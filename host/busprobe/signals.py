"""Every way a user or a system ends a run is a Ctrl-C to the code, and only the first one counts.

``timeout``, a CI cancel, ``kill`` and a closed terminal send SIGTERM or SIGHUP, which by default
end Python at once: no partial result is saved and a simulator child may be left running. Inside
:func:`interruptible` they raise :class:`Terminated`, a :class:`KeyboardInterrupt`, so they take
the path Ctrl-C takes (the sweep saves its points with ``"complete": false``, simulators are
stopped). While that clean-up runs, further SIGINT/SIGTERM/SIGHUP are ignored: a second Ctrl-C
must not lose the points being written.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "interruptible", "exit_status"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


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
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    previous = {signum: signal.signal(signum, handler) for signum in _SIGNALS}
    try:
        yield
    finally:
        for signum, old in previous.items():
            # Once interrupted the process is ending: a late second Ctrl-C must not turn a clean
            # exit (status 130, results saved) into a death by signal during shutdown.
            signal.signal(signum, signal.SIG_IGN if fired else old)
