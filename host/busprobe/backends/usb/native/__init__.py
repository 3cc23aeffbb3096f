"""busprobe's native code for the libusb path, built on first use.

Two small C libraries live here as sources: ``usb_stream.c``, the queued bulk stream over
libusb's asynchronous API (what :class:`~busprobe.backends.usb.plans.QueuedStream` run by
:func:`~busprobe.backends.usb.transfers.run_plan` does, without a Python call per completion),
and ``null_libusb.c``, a zero-latency libusb that measures what the host path itself can
sustain (:mod:`busprobe.tool_ceiling`). Neither needs libusb's headers (``libusb_abi.h``
declares its stable ABI) nor a Python extension build: :func:`build` compiles one with the
system's C compiler (``$CC``, else ``cc``) into the build directory, named by a hash of its
sources, the compiler's version and what it links, and they are loaded with :mod:`ctypes`.
Where no compiler works the pure-Python path runs, and :func:`build` says why once.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shlex
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from ....build_cache import build_root

__all__ = ["build", "NativeUnavailable", "SOURCES"]

log = logging.getLogger(__name__)

#: Each library's C sources (the shared header is part of every hash).
SOURCES = {"usb_stream": ("usb_stream.c",), "null_libusb": ("null_libusb.c",)}
HEADER = "libusb_abi.h"


class NativeUnavailable(RuntimeError):
    """The native code cannot be built here (no compiler, or it failed); the reason, one line."""


def _compiler() -> list[str]:
    chosen = shlex.split(os.environ.get("CC", "cc")) or ["cc"]
    if shutil.which(chosen[0]) is None:
        raise NativeUnavailable(f"no C compiler ({chosen[0]} not found; set CC)")
    return chosen


def _version(compiler: list[str]) -> str:
    try:
        done = subprocess.run([*compiler, "--version"], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NativeUnavailable(f"{compiler[0]} --version failed: {exc}") from None
    return done.stdout.splitlines()[0] if done.stdout else compiler[0]


def build(name: str, *, link: str | None = None) -> Path:
    """Path of the shared library ``name`` (:data:`SOURCES`), compiled if not built yet.

    ``link`` is a shared library to link against by path (the null libusb links the real
    libusb, so whatever it does not define is libusb's own).
    """
    compiler = _compiler()
    here = resources.files(__name__)
    texts = [(here / source).read_bytes() for source in (*SOURCES[name], HEADER)]
    digest = hashlib.sha256()
    for part in (*texts, _version(compiler).encode(), (link or "").encode()):
        digest.update(hashlib.sha256(part).digest())
    target = build_root() / "native" / f"{name}-{digest.hexdigest()[:12]}" / f"lib{name}.so"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with resources.as_file(here) as folder:
        sources = [str(Path(folder) / source) for source in SOURCES[name]]
        command = [*compiler, "-O2", "-shared", "-fPIC", "-o", str(target) + ".tmp", *sources]
        if link:
            # Keep the dependency although nothing in the sources calls into it: a lookup in
            # this library then falls through to it.
            command += ["-Wl,--no-as-needed", link, f"-Wl,-rpath,{Path(link).parent}"]
        command.append("-ldl")
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise NativeUnavailable(f"building {name} failed: {last}")
    os.replace(str(target) + ".tmp", target)
    log.info("built %s", target)
    return target
