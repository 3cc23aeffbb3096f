"""Is the simulator alive, and is it working? Read from ``/proc``, without its cooperation.

A simulator that is answering a request runs flat out on one core, so its CPU time grows; one
that has died is gone (or a zombie); one that was stopped (``kill -STOP``, a debugger, a
suspended terminal job) or is wedged in the kernel uses no CPU at all. :class:`ProcessWatch`
tells the three apart, so a caller waiting for an answer can give up in seconds with the reason
instead of waiting out a timeout sized for the slowest legitimate request.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProcessWatch", "ProcessState", "describe_exit"]

#: ``/proc/PID/stat`` process states, as ``ps`` names them.
_STATES = {"R": "running", "S": "sleeping", "D": "in uninterruptible wait", "T": "stopped",
           "t": "stopped by a debugger", "Z": "a zombie", "X": "dead", "I": "idle"}


@dataclass(frozen=True)
class ProcessState:
    """One look at a process: its state letter and the CPU time it has used (clock ticks)."""

    state: str
    cpu_ticks: int

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X")

    @property
    def name(self) -> str:
        return _STATES.get(self.state, self.state)


def read_state(pid: int, proc: Path = Path("/proc")) -> ProcessState | None:
    """The state of ``pid``, or ``None`` when there is no such process."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may contain spaces and parentheses, the rest cannot.
    fields = text[text.rindex(")") + 2:].split()
    return ProcessState(fields[0], int(fields[11]) + int(fields[12]))  # utime + stime


class ProcessWatch:
    """Watches one process for death and for lack of progress while an answer is awaited.

    Parameters
    ----------
    pid : int
        The process (the simulator itself, not a launcher in front of it).
    stall_seconds : float
        How long it may use no CPU at all before :meth:`problem` calls it stuck. A busy
        simulator is never off-CPU that long, even on a loaded 2-core machine.
    """

    def __init__(self, pid: int, *, stall_seconds: float = 4.0) -> None:
        self.pid = pid
        self.stall_seconds = stall_seconds
        self._ticks: int | None = None
        self._since = time.monotonic()

    def start(self) -> None:
        """A request was just sent: progress is measured from now."""
        self._ticks, self._since = None, time.monotonic()

    def problem(self) -> str | None:
        """``None`` while the process is alive and working; else what is wrong, in words."""
        state = read_state(self.pid)
        if state is None or not state.alive:
            return "exited"
        now = time.monotonic()
        if state.cpu_ticks != self._ticks:
            self._ticks, self._since = state.cpu_ticks, now
            return None
        if now - self._since > self.stall_seconds:
            return (f"is {state.name} and made no progress for "
                    f"{now - self._since:.0f} s")
        return None


def describe_exit(returncode: int | None) -> str:
    """``"killed by SIGKILL"`` / ``"exited with status 3"`` for a ``subprocess`` return code."""
    if returncode is None:
        return "exited"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"
