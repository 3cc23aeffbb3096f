"""``busprobe sim serve`` as a child process of the harness: started, watched, killed.

The exporter runs with ``-v`` so each bulk batch it carries out is a log line; the harness
uses them to "unplug" the device (SIGKILL the exporter, as a yanked cable would end it) at a
known point of a guest's sweep, never by a timer.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["Exporter"]

_READY = re.compile(r"as usbredir on (\S+):(\d+)$")


class Exporter:
    """The simulated device on a usbredir TCP port of 127.0.0.1.

    Parameters
    ----------
    log : Path
        Where its stderr goes (and is watched from).
    selector : str
        The simulated target to export.
    name : str
        Its QEMU chardev id (one per device a guest gets).
    start_timeout : float
        Wall seconds to wait for the ready line (includes a first simulator build).
    """

    def __init__(self, log: Path, *, selector: str = "sim:usb2", name: str = "busprobe",
                 start_timeout: float = 600.0) -> None:
        self.log_path = log
        self.name = name
        self.killed_at: float | None = None
        self._watchers: list[Callable[[str], bool]] = []
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.port: int | None = None
        self._started = time.monotonic()
        self._log = open(log, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "busprobe", "-v", "sim", "serve", "--device", selector,
             "--usbredir", "127.0.0.1:0"],
            stdout=self._log, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self._reader = threading.Thread(target=self._read, name="exporter-log", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + start_timeout
        while not self._ready.wait(0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"busprobe sim serve did not start (log: {log})")

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            # Wall seconds since the start: where a guest's enumeration spends its time.
            self._log.write(f"{time.monotonic() - self._started:9.3f} {line}\n")
            self._log.flush()
            match = _READY.search(line)
            if match:
                self.port = int(match.group(2))
                self._ready.set()
            with self._lock:
                self._watchers = [w for w in self._watchers if not w(line)]

    def when(self, watcher: Callable[[str], bool]) -> None:
        """Call ``watcher(line)`` for each later log line until it returns True."""
        with self._lock:
            self._watchers.append(watcher)

    def qemu_args(self, bus: str) -> list[str]:
        """QEMU arguments attaching the export to USB bus ``bus`` (``"hc.0"``)."""
        return ["-chardev", f"socket,id={self.name},host=127.0.0.1,port={self.port}",
                "-device", f"usb-redir,chardev={self.name},bus={bus}"]

    def kill(self) -> None:
        """SIGKILL, as an unplugged cable ends a device: no goodbye on the socket."""
        self.killed_at = time.monotonic()
        try:
            os.kill(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def stop(self, timeout: float = 30.0) -> int | None:
        """End it: SIGTERM (the service stops its simulator and exits 0), then SIGKILL; the exit
        status (-9 when :meth:`kill` unplugged it before)."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if sig is not None and self.proc.poll() is None:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
                break
            except subprocess.TimeoutExpired:
                continue
        self._reader.join(10)
        self._log.close()
        return self.proc.returncode
