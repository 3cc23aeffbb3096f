"""Keep file descriptor 1 clean: :func:`stdout_to_stderr` sends it to stderr for a while.

With ``--json -`` stdout carries only the data, yet a simulator build (make, Verilator, the C++
compiler) and the simulator process it starts write to file descriptor 1 of this process, not
to ``sys.stdout``; redirecting the descriptor catches them and their children too.
``sys.stdout`` goes with it, so Python text written meanwhile lands where a write to the
descriptor would, also where ``sys.stdout`` is not descriptor 1 (pytest's ``capfd``). The
result itself is written after the guard has ended (issue 47, item 6).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["stdout_to_stderr"]


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 (this process and what it starts meanwhile) and ``sys.stdout``
    at stderr."""
    sys.stdout.flush()
    saved = os.dup(1)
    saved_stdout = sys.stdout
    try:
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        yield
    finally:
        sys.stdout.flush()
        sys.stdout = saved_stdout
        os.dup2(saved, 1)
        os.close(saved)
