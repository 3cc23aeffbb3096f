"""Where a result goes (``--json``, ``--csv``, ``--plot``, ``report -o``, ``fit -o``, ``build
--json``): what the path is decides how it is written (docs/DESIGN.md §2.4, "Result files").

``-``
    Standard output. The command then sends every human line to stderr (:func:`is_stdout`).
``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``
    Written through this process's descriptor N, as the shell opened it (its offset, its
    ``>>``); ``N = 1`` is standard output.
a regular file, or a path that does not exist yet
    Replaced whole: written to a temporary file beside it, flushed to the disk, then renamed
    over it. An interrupted or failed write leaves the previous file as it was. A file that
    existed keeps its permissions.
a symbolic link
    Written through: the file it points at is replaced as above, the link stays a link.
a FIFO or a character device (a terminal, ``/dev/null``)
    Opened and written in place; a rename would replace the device node with a file.
a folder, a block device (a disk), a socket
    Refused: a result never lands on a disk device.

Every failure (no space, an I/O error, the reader of a pipe gone, ``/dev/full``) is a
:class:`ResultWriteError`: one line naming the path and the error (:mod:`busprobe.os_errors`),
never a success. Standard library only.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
from pathlib import Path

from .os_errors import describe

__all__ = ["ResultWriteError", "write_result", "check_writable", "is_stdout", "STDOUT"]

#: The path that means standard output.
STDOUT = "-"
#: Paths naming one of this process's open descriptors.
_FD_PATH = re.compile(r"/(?:dev/fd|proc/(?:self|thread-self|(?P<pid>\d+))/fd)/(?P<fd>\d+)")
_STD_NAMES = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


class ResultWriteError(ValueError):
    """A result could not be written; ``str()`` is the one line for the user."""


def _descriptor(path: str) -> int | None:
    """The descriptor ``path`` names in this process (``/proc/self/fd/3`` -> 3), else None."""
    if path in _STD_NAMES:
        return _STD_NAMES[path]
    match = _FD_PATH.fullmatch(path)
    if match is None or (match["pid"] is not None and int(match["pid"]) != os.getpid()):
        return None
    return int(match["fd"])


def is_stdout(path: str | os.PathLike[str] | None) -> bool:
    """Whether a result written to ``path`` goes to standard output (``-``, ``/dev/stdout``,
    ``/proc/self/fd/1``): human text must then go to stderr."""
    if path is None:
        return False
    text = os.fspath(path)
    return text == STDOUT or _descriptor(text) == 1


def _refusal(path: str, mode: int) -> str | None:
    if stat.S_ISDIR(mode):
        return f"cannot write {path}: it is a directory; name a file"
    if stat.S_ISBLK(mode):
        return (f"cannot write {path}: it is a block device (a disk); results go to files, "
                "pipes and terminals")
    if stat.S_ISSOCK(mode):
        return f"cannot write {path}: it is a socket; name a file, a FIFO or -"
    return None


def check_writable(path: str | os.PathLike[str] | None) -> None:
    """Fail now, not after the measurement, when ``path`` could not be written. Nothing is
    created: a run that fails before its first point leaves the file system as it was.

    Raises :class:`ResultWriteError`.
    """
    if path is None:
        return
    text = label = os.fspath(path)
    if text == STDOUT:
        return
    fd = _descriptor(text)
    if fd is not None:
        try:
            os.fstat(fd)
        except OSError as exc:
            raise ResultWriteError(describe(exc, f"cannot write {label}",
                                            f"descriptor {fd} is not open here")) from None
        return
    try:
        mode = os.stat(text).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None  # the folder checks below say which part is missing or not a folder
    except OSError as exc:
        raise ResultWriteError(describe(exc, f"cannot write {label}")) from None
    if mode is not None:
        refused = _refusal(label, mode)
        if refused:
            raise ResultWriteError(refused)
        if not os.access(text, os.W_OK):
            raise ResultWriteError(f"cannot write {label}: permission denied")
        if not stat.S_ISREG(mode):
            return  # a FIFO or a character device is written in place
    real = Path(os.path.realpath(text))
    folder = next(p for p in (real.parent, *real.parent.parents) if p.exists())
    if not folder.is_dir():
        raise ResultWriteError(f"cannot write {label}: {folder} is a file, not a directory")
    if not os.access(folder, os.W_OK):
        raise ResultWriteError(f"cannot write {label}: its folder {folder} is not writable "
                               "(the result is written beside it, then renamed over it)")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null: its reader is gone, and Python's own flush at exit
    must not print a second error about it."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def _to_stdout(data: bytes) -> None:
    """Through ``sys.stdout`` (whatever it is now: a test's capture, a redirected stream)."""
    try:
        sys.stdout.flush()
        binary = getattr(sys.stdout, "buffer", None)
        if binary is not None:
            binary.write(data)
        else:
            sys.stdout.write(data.decode())
        sys.stdout.flush()
    except OSError as exc:
        _silence_stdout()
        raise ResultWriteError(describe(exc, "cannot write stdout")) from None


def _to_descriptor(fd: int, data: bytes, label: str) -> None:
    if fd == 1:
        sys.stdout.flush()
    try:
        _write_all(fd, data)
    except OSError as exc:
        if fd == 1:
            _silence_stdout()
        raise ResultWriteError(describe(exc, f"cannot write {label}")) from None


def _in_place(path: str, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise ResultWriteError(describe(exc, f"cannot write {path}")) from None
    try:
        _write_all(fd, data)
    except OSError as exc:
        raise ResultWriteError(describe(exc, f"cannot write {path}")) from None
    finally:
        os.close(fd)


def _replace(path: str, data: bytes) -> None:
    """Write ``data`` beside the file ``path`` resolves to, then rename it over that file."""
    real = Path(os.path.realpath(path))
    tmp: str | None = None
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = stat.S_IMODE(real.stat().st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # what open() would give; mkstemp's 0600 is for secrets
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
        try:
            os.fchmod(fd, mode)
            _write_all(fd, data)
            os.fsync(fd)  # a full disk shows here at the latest, not after the rename
        finally:
            os.close(fd)
        os.replace(tmp, real)
        tmp = None
    except OSError as exc:
        raise ResultWriteError(describe(exc, f"cannot write {path}")) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def write_result(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` (text is UTF-8) to ``path`` as the module describes; raises
    :class:`ResultWriteError` with one line on any failure."""
    text = os.fspath(path)
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if text == STDOUT:
        _to_stdout(raw)
        return
    fd = _descriptor(text)
    if fd is not None:
        _to_descriptor(fd, raw, text)
        return
    try:
        mode = os.stat(text).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None  # a new file, or a link to one still to be made
    except OSError as exc:
        raise ResultWriteError(describe(exc, f"cannot write {text}")) from None
    if mode is not None:
        refused = _refusal(text, mode)
        if refused:
            raise ResultWriteError(refused)
        if not stat.S_ISREG(mode):
            _in_place(text, raw)
            return
    _replace(text, raw)
