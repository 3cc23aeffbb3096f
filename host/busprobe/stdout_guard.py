"""Keep file descriptor 1 clean: :func:`stdout_to_stderr` sends it to stderr for a while.

With ``--json -`` stdout carries only the data, yet a simulator build (make, Verilator, the C++
compiler) and the simulator process it starts write to file descriptor 1 of this process, not
to ``sys.stdout``; redirecting the descriptor catches them and their children too.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["stdout_to_stderr"]


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 (this process and what it starts meanwhile) at stderr."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
