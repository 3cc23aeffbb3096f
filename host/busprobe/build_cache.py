"""Where busprobe keeps what it builds: generated Verilog, Verilator simulators, bitstreams.

:func:`build_root` is ``$BUSPROBE_BUILD_DIR`` if set, else ``$XDG_CACHE_HOME/busprobe``, else
``~/.cache/busprobe``; never a folder next to the sources, because an installed busprobe lives in
``site-packages`` (possibly read-only, shared by several users) and must work exactly like a
checkout. Everything below the root is named by a hash of its inputs' *contents* (sources, tool
versions, arguments), never of their paths, so checkouts and installed copies of the same code
share one cache and a changed design never picks up a stale build.

The checkout's ``Makefile`` and the test suite set ``BUSPROBE_BUILD_DIR`` to ``./build``, so
``make test``, ``make demo`` and ``make bench`` share their builds and ``make clean`` removes them.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ENV_BUILD_DIR", "build_root"]

#: Environment variable that chooses the build directory.
ENV_BUILD_DIR = "BUSPROBE_BUILD_DIR"


def build_root() -> Path:
    """The build directory (absolute; not created here)."""
    chosen = os.environ.get(ENV_BUILD_DIR)
    if chosen:
        return Path(chosen).expanduser().resolve()
    # XDG Base Directory spec: a relative XDG_CACHE_HOME is invalid and must be ignored.
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    cache = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return (cache / "busprobe").resolve()
