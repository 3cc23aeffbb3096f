"""An operating-system error as one line a person can act on: what failed, why, what to do.

Python's ``str(OSError)`` reads ``[Errno 98] Address already in use``: the number means nothing
to a user and nothing says what to do. :func:`describe` gives ``cannot listen on 127.0.0.1:4000:
the address is in use (EADDRINUSE); ...`` instead, with the errno's symbolic name kept for a
search. Callers that know the context pass their own advice (which option picks another port);
the table's is the fallback. The command line (:mod:`busprobe.cli`) sends every ``OSError`` that
reaches it through here (docs/DESIGN.md §5.1).
"""

from __future__ import annotations

import errno
import os

__all__ = ["describe", "reason"]

#: errno -> (what went wrong, what to do about it).
_TABLE: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("no space left on the device", "free some space or write elsewhere"),
    errno.EDQUOT: ("disk quota exceeded", "free some space or write elsewhere"),
    errno.EFBIG: ("the file is too large for its file system", "write elsewhere"),
    errno.EIO: ("input/output error: the device or file system failed",
                "check the disk (dmesg) or write elsewhere"),
    errno.EPIPE: ("the reading end was closed (broken pipe)",
                  "keep the reader open until busprobe ends"),
    errno.EACCES: ("permission denied", "choose a path you may write, or change its permissions"),
    errno.EPERM: ("operation not permitted", "run it as a user allowed to, or choose another path"),
    errno.EROFS: ("the file system is read-only", "write elsewhere"),
    errno.ENOENT: ("no such file or folder", "check the path (its folder must exist)"),
    errno.ENOTDIR: ("a part of the path is not a folder", "check the path"),
    errno.EISDIR: ("it is a folder", "name a file"),
    errno.ELOOP: ("too many symbolic links (a loop?)", "check where the links point"),
    errno.ENAMETOOLONG: ("the name is too long", "use a shorter path"),
    errno.ENXIO: ("no such device or address (a FIFO nobody reads?)",
                  "start the reader first, or write to a file"),
    errno.ENODEV: ("no such device", "check the path"),
    errno.EBUSY: ("the device or resource is busy", "stop what uses it, or choose another"),
    errno.ENOMEM: ("out of memory", "ask for less, or free memory"),
    errno.EMFILE: ("too many open files in this process", "raise the limit (ulimit -n)"),
    errno.ENFILE: ("too many open files on this computer", "close some programs"),
    errno.EADDRINUSE: ("the address is in use", "choose another port (port 0: any free one)"),
    errno.EADDRNOTAVAIL: ("this computer has no such address",
                          "use 127.0.0.1 or an address of this computer"),
    errno.ECONNREFUSED: ("the connection was refused", "check that the other end listens"),
    errno.ECONNRESET: ("the connection was reset by the other end", "try again"),
    errno.ETIMEDOUT: ("timed out", "check the other end and try again"),
    errno.EAGAIN: ("the resource is temporarily unavailable", "try again"),
}


def reason(exc: OSError) -> str:
    """``what went wrong (ENAME)`` for ``exc``, without the advice."""
    name = errno.errorcode.get(exc.errno or 0)
    known = _TABLE.get(exc.errno or 0)
    text = known[0] if known else (exc.strerror or str(exc) or type(exc).__name__)
    text = text[:1].lower() + text[1:]
    return f"{text} ({name})" if name else text


def describe(exc: OSError, what: str | None = None, advice: str | None = None) -> str:
    """One line: ``what: reason (ENAME); advice``.

    ``what`` says what failed (``cannot write r.json``); by default the error's own file name
    (``/dev/ttyUSB0``), else ``operating system error``. ``advice`` replaces the table's.
    """
    if what is None:
        what = (f"{os.fsdecode(exc.filename)}" if exc.filename is not None
                else "operating system error")
    known = _TABLE.get(exc.errno or 0)
    advice = advice if advice is not None else (known[1] if known else None)
    line = f"{what}: {reason(exc)}"
    return f"{line}; {advice}" if advice else line
