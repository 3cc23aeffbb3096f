"""A cocotb simulation in a child process, answering requests: the host side of :mod:`.rpc`.

Every simulated backend (``sim:usb2``, ``sim:pcie``) talks to its simulator through
:class:`SimServer`, so all of them share one launcher, one wire format and one watchdog:

* every wait for an answer is bounded in wall-clock time, and while it waits the watchdog
  (:mod:`.watchdog`) looks at the simulator process: one that died is reported at once with the
  signal or status that ended it, one that uses no CPU (stopped, wedged) within seconds. Either
  way the caller gets a one-line :class:`~busprobe.transport.DeviceGone`, never a hang;
* Ctrl-C while the simulator is busy kills it at once (its state is lost anyway) instead of
  waiting for the request to finish, and leaves nothing running;
* the simulator's chatter goes to a log file, never to our stdout (which may carry ``--json -``).
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from busprobe.transport import DeviceGone, InvalidRequest, TransferTimeout, TransportError

from .rpc import ENV_SOCKET, PeerClosed, RemoteError, recv, send
from .watchdog import ProcessWatch, describe_exit

__all__ = ["SimServer", "SimulatorClient", "CALL_TIMEOUT_S"]

log = logging.getLogger(__name__)

#: Wall-clock bound of one request unless the caller gives its own (a request is at most one
#: point's repeat; the watchdog catches a dead or stopped simulator long before this).
CALL_TIMEOUT_S = 300.0
#: Bound on the simulator's start-up: loading the model, power-up, enumeration or link training.
START_TIMEOUT_S = 120.0
_TICK_S = 0.2

# cocotb's runner raises RuntimeError("Command failed with return code: -9") when the simulator
# dies; the launcher writes that code where the host can read it, to name the signal.
_LAUNCHER = """
import json, re, sys
from cocotb_tools.runner import get_runner
a = json.loads(sys.argv[1])
try:
    get_runner("verilator").test(test_module=a["module"], hdl_toplevel=a["toplevel"],
        hdl_toplevel_lang="verilog", build_dir=a["build_dir"], test_dir=a["test_dir"],
        extra_env=a["env"], timescale=tuple(a["timescale"]) if a["timescale"] else None,
        results_xml=a["results"], plusargs=a["plusargs"])
except RuntimeError as exc:
    code = re.search(r"return code: (-?[0-9]+)", str(exc))
    open(a["status"], "w").write(code.group(1) if code else "1")
    sys.exit(1)
"""


class SimServer:
    """A cocotb simulation in a child process, answering :meth:`call` s.

    Parameters
    ----------
    build_dir : Path
        A simulator built by :func:`busprobe.sim.verilator_build.build_verilator_model`.
    toplevel : str
        Its HDL toplevel.
    module : str
        The cocotb test module whose test awaits :func:`busprobe.sim.rpc.serve`.
    name : str
        Prefix of every error message (the device selector).
    env : mapping
        Extra environment for the simulator (configuration for the server test).
    timescale : tuple, optional
        As the model was built with.
    start_timeout : float
        Wall seconds the simulator may take to start and set up.
    plusargs : sequence of str
        Simulator plusargs (``+name=value``), e.g. the firmware image of the PCIe SoC.

    Attributes
    ----------
    info : object
        What the server's ``setup`` returned.
    log_path : Path
        The simulator's output (kept when it failed, removed after a clean close).
    """

    def __init__(self, build_dir: Path, toplevel: str, module: str, *, name: str = "simulator",
                 env: Mapping[str, str] = {}, timescale: tuple[str, str] | None = None,
                 start_timeout: float = START_TIMEOUT_S, plusargs: Sequence[str] = ()) -> None:
        from busprobe.toolchain import apply_verilator_env

        apply_verilator_env()
        self.name = name
        self._dir = Path(tempfile.mkdtemp(prefix="busprobe-sim-"))
        self._status = self._dir / "status"
        path = str(self._dir / "rpc.sock")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        self._listener.listen(1)
        runs = Path(build_dir) / "runs"
        runs.mkdir(exist_ok=True)
        self.log_path = runs / f"server-{os.getpid()}-{id(self):x}.log"
        env = {"COCOTB_LOG_LEVEL": "WARNING", **env, ENV_SOCKET: path}
        args = {"module": module, "toplevel": toplevel, "build_dir": str(build_dir),
                "test_dir": str(self._dir), "env": env,
                "timescale": list(timescale) if timescale else None,
                "results": str(self._dir / "results.xml"), "status": str(self._status),
                "plusargs": list(plusargs)}
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, json.dumps(args)],
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self._sock: socket.socket | None = None
        self._watch: ProcessWatch | None = None
        self.failed = False
        # Several devices' threads at once (channels): one sends at a time, one reads at a
        # time and hands each thread its answer.
        self._send_lock = threading.Lock()
        self._answers_ready = threading.Condition()
        self._answers: dict[int | None, tuple[str, Any]] = {}
        self._reading = False
        self._channels_used = False
        try:
            self._sock = self._accept(start_timeout)
            _, hello = self._answer("start-up", start_timeout)
            self._watch = ProcessWatch(int(hello["pid"]))
            self.info = self._result(self._answer("start-up", start_timeout))
        except BaseException:
            self.close()
            raise

    # -- waiting, watched ---------------------------------------------------------------------

    def _accept(self, timeout: float) -> socket.socket:
        deadline = time.monotonic() + timeout
        self._listener.settimeout(_TICK_S)
        while True:
            try:
                sock, _ = self._listener.accept()
                sock.settimeout(None)
                return sock
            except TimeoutError:
                if self.proc.poll() is not None:
                    self._fail(DeviceGone, f"simulator {self._exit()} during start-up")
                if time.monotonic() > deadline:
                    self._fail(TransferTimeout, f"simulator did not start within {timeout:.0f} s")

    def _answer(self, what: str, timeout: float) -> Any:
        """The next message from the simulator, watched (see the module docstring)."""
        sock = self._sock
        if sock is None:
            raise DeviceGone(f"{self.name}: simulator is not running")
        deadline = time.monotonic() + timeout
        if self._watch is not None:
            self._watch.start()
        try:
            while not select.select([sock], [], [], _TICK_S)[0]:
                problem = self._watch.problem() if self._watch else \
                    ("exited" if self.proc.poll() is not None else None)
                if problem == "exited":
                    self._fail(DeviceGone, f"simulator {self._exit()} during {what}")
                if problem:
                    self._fail(DeviceGone, f"simulator {problem} during {what}; stopped it")
                if time.monotonic() > deadline:
                    self._fail(TransferTimeout, f"simulator gave no answer to {what} within "
                                                f"{timeout:.0f} s; stopped it")
            return recv(sock)
        except (PeerClosed, OSError):
            self._fail(DeviceGone, f"simulator {self._exit()} during {what}")
        except KeyboardInterrupt:
            # The request cannot be finished without waiting for it; its state is lost anyway.
            self.kill()
            raise

    def _exit(self) -> str:
        """How the simulator ended: its signal or status (the launcher writes it down)."""
        try:
            self.proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            return "stopped answering"
        try:
            code: int | None = int(self._status.read_text())
        except (OSError, ValueError):
            code = self.proc.returncode
        return describe_exit(code)

    def _fail(self, kind: type[TransportError], message: str) -> None:
        self.kill()
        self.failed = True
        raise kind(f"{self.name}: {message} (log: {self.log_path})")

    def _result(self, reply: tuple[str, Any]) -> Any:
        status, value = reply
        if status == "ok":
            return value
        kind, message = value
        if isinstance(kind, type) and issubclass(kind, Exception):
            raise kind(f"{self.name}: {message}")
        raise RemoteError(f"{self.name}: {kind}: {message}")

    # -- the public side ----------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The simulator process (not its launcher), once it said hello."""
        return self._watch.pid if self._watch is not None else None

    def call(self, method: str, *args: Any, timeout: float = CALL_TIMEOUT_S,
             channel: int | None = None) -> Any:
        """Run ``rpc_<method>(*args)`` in the simulator and return its result.

        ``channel`` names the device of a simulation hosting several (:mod:`.shared_clock`);
        threads may then call at once, each for its own channel, and each gets its own answer.

        Raises what the simulator raised (TransportError and ValueError subclasses keep their
        type), :class:`DeviceGone` if it died or stopped, :class:`TransferTimeout` after
        ``timeout`` wall seconds.
        """
        if self._sock is None:
            raise DeviceGone(f"{self.name}: simulator is not running")
        try:
            with self._send_lock:
                send(self._sock, (method, args) if channel is None else (method, args, channel))
        except OSError:
            self._fail(DeviceGone, f"simulator {self._exit()} before {method}")
        if channel is None and not self._channels_used:
            return self._result(self._answer(method, timeout))
        return self._result(self._channel_answer(channel, method, timeout))

    def _channel_answer(self, channel: int | None, what: str, timeout: float) -> Any:
        """The answer for ``channel``: one waiting thread reads the socket at a time and hands
        the others' answers over."""
        self._channels_used = True
        deadline = time.monotonic() + timeout
        with self._answers_ready:
            while True:
                if channel in self._answers:
                    return self._answers.pop(channel)
                if not self._reading:
                    self._reading = True
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    self._fail(TransferTimeout, f"simulator gave no answer to {what} within "
                                                f"{timeout:.0f} s; stopped it")
                self._answers_ready.wait(min(left, _TICK_S))
        try:
            while True:
                message = self._answer(what, max(deadline - time.monotonic(), _TICK_S))
                owner = message[2] if len(message) > 2 else None
                if owner == channel:
                    return message[:2]
                with self._answers_ready:
                    self._answers[owner] = message[:2]
                    self._answers_ready.notify_all()
        finally:
            with self._answers_ready:
                self._reading = False
                self._answers_ready.notify_all()

    def kill(self) -> None:
        """End the simulator now (and its launcher): nothing is left running."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def close(self) -> None:
        """Ask the server to finish, then make sure the child is gone (idempotent)."""
        try:
            if self._sock is not None:
                try:
                    send(self._sock, ("shutdown", ()))
                    self._answer("shutdown", 10.0)
                except (TransportError, OSError):  # it died while idle: nothing to ask
                    pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        finally:
            self.kill()
            self._listener.close()
            self._log.close()
            if not self.failed and self.proc.returncode == 0:
                self.log_path.unlink(missing_ok=True)
            for path in self._dir.iterdir():
                if path.is_file() or path.is_socket():
                    path.unlink()
            try:
                self._dir.rmdir()
            except OSError:  # cocotb left folders we did not expect; leave them
                pass


class SimulatorClient:
    """What a simulated platform keeps of its simulator: the running :class:`SimServer` (None
    while closed) and the one-line error for a request made before it opened.

    Attributes
    ----------
    name : str
        The device selector, prefix of every error message.
    server : SimServer or None
        The simulator, while open.
    """

    name: str
    server: SimServer | None = None

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None

    def _server(self) -> SimServer:
        if self.server is None:
            raise InvalidRequest(f"{self.name}: transport is not open")
        return self.server
