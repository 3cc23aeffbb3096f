"""Run a cocotb simulation as a server that a host-side backend drives over a socket.

A simulated backend keeps the real host driver in the host process and sends each register
access, memory access or "let time pass" request to the simulator, which executes it in
simulated time and answers. While the simulator waits for the next request it is blocked in
``recv``, so simulated time stands still while the host computes: the host is infinitely fast on
the simulated clock.

Host side: :class:`SimServer` builds nothing; it launches ``cocotb_tools.runner`` in a child
Python process (its chatter goes to a log file, not to our stdout, which may carry ``--json -``)
with ``BUSPROBE_RPC_SOCKET`` in the environment, accepts the connection and offers
:meth:`SimServer.call`. Simulator side: :func:`serve` (awaited from a cocotb test) connects back
and dispatches requests to a handler object's ``rpc_<name>`` coroutines.

Messages are length-prefixed pickles over a Unix socket private to the two processes.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from busprobe.transport import DeviceGone, TransportError

__all__ = ["SimServer", "serve", "ENV_SOCKET", "RemoteError"]

log = logging.getLogger(__name__)

ENV_SOCKET = "BUSPROBE_RPC_SOCKET"
_HEADER = struct.Struct("<I")


class RemoteError(TransportError):
    """The simulator side raised an exception that has no TransportError equivalent."""


def _send(sock: socket.socket, obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("peer closed the connection")
        buf += chunk
    return bytes(buf)


def _recv(sock: socket.socket) -> Any:
    (size,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    return pickle.loads(_recv_exact(sock, size))


_LAUNCHER = """
import json, sys
from cocotb_tools.runner import get_runner
a = json.loads(sys.argv[1])
get_runner("verilator").test(test_module=a["module"], hdl_toplevel=a["toplevel"],
    hdl_toplevel_lang="verilog",
    build_dir=a["build_dir"], test_dir=a["test_dir"], extra_env=a["env"],
    timescale=tuple(a["timescale"]), results_xml=a["results"])
"""


class SimServer:
    """A cocotb simulation in a child process, answering :meth:`call` s.

    Parameters
    ----------
    build_dir : Path
        A Verilator model built by :func:`busprobe.sim.toolchain.build_verilator_model`.
    toplevel : str
        Its HDL toplevel.
    module : str
        The cocotb test module holding the server test (it awaits :func:`serve`).
    env : mapping
        Extra environment for the simulator (configuration for the server test).
    timescale : tuple
        As the model was built with.
    start_timeout : float
        Wall seconds to wait for the simulator to connect.
    """

    def __init__(self, build_dir: Path, toplevel: str, module: str, *,
                 env: Mapping[str, str] = {}, timescale: tuple[str, str] = ("1ns", "1ps"),
                 start_timeout: float = 120.0) -> None:
        from busprobe.sim.toolchain import apply_verilator_env

        apply_verilator_env()
        self._dir = Path(tempfile.mkdtemp(prefix="busprobe-sim-"))
        path = str(self._dir / "rpc.sock")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        self._listener.listen(1)
        self.log_path = Path(build_dir) / f"server-{os.getpid()}-{id(self):x}.log"
        env = {"COCOTB_LOG_LEVEL": "WARNING", **env, ENV_SOCKET: path}
        args = {"module": module, "toplevel": toplevel, "build_dir": str(build_dir),
                "test_dir": str(self._dir), "env": env,
                "timescale": list(timescale), "results": str(self._dir / "results.xml")}
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, json.dumps(args)],
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self._sock: socket.socket | None = None
        try:
            self._sock = self._accept(start_timeout)
        except BaseException:
            self.close()
            raise

    def _accept(self, timeout: float) -> socket.socket:
        deadline = time.monotonic() + timeout
        self._listener.settimeout(0.2)
        while time.monotonic() < deadline:
            try:
                sock, _ = self._listener.accept()
                sock.settimeout(None)
                return sock
            except TimeoutError:
                if self.proc.poll() is not None:
                    raise DeviceGone(f"simulator exited with status {self.proc.returncode} "
                                     f"before connecting; see {self.log_path}") from None
        raise DeviceGone(f"simulator did not connect within {timeout:.0f} s; see "
                         f"{self.log_path}")

    def call(self, method: str, *args: Any) -> Any:
        """Run ``rpc_<method>(*args)`` in the simulator and return its result."""
        if self._sock is None:
            raise DeviceGone("simulator is not running")
        log.debug("rpc %s%s", method, args if len(repr(args)) < 200 else "(...)")
        try:
            _send(self._sock, (method, args))
            status, value = _recv(self._sock)
        except (EOFError, OSError) as exc:
            self._sock = None
            raise DeviceGone(f"simulator stopped ({exc}); see {self.log_path}") from None
        if status == "ok":
            return value
        kind, message = value
        if isinstance(kind, type) and issubclass(kind, Exception):
            raise kind(message)
        raise RemoteError(f"{kind}: {message}")

    def close(self) -> None:
        """Ask the server to finish, then make sure the child is gone."""
        if self._sock is not None:
            try:
                _send(self._sock, ("shutdown", ()))
                _recv(self._sock)
            except (EOFError, OSError):
                pass
            self._sock.close()
            self._sock = None
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # the simulator is the launcher's child: whole group
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._listener.close()
        self._log.close()
        for p in self._dir.iterdir():
            if p.is_file() or p.is_socket():
                p.unlink()
        try:
            self._dir.rmdir()
        except OSError:  # cocotb left files we did not expect; leave them
            pass


async def serve(handler: object) -> None:
    """Simulator side: connect to the host and answer requests until ``shutdown`` or EOF.

    Each request ``(name, args)`` runs ``await handler.rpc_<name>(*args)``. Exceptions go back to
    the host: :class:`TransportError`/``ValueError`` subclasses by type, others by name.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(os.environ[ENV_SOCKET])
    try:
        while True:
            try:
                name, args = _recv(sock)  # blocks the simulator: time stands still
            except EOFError:
                return
            if name == "shutdown":
                _send(sock, ("ok", None))
                return
            try:
                value = await getattr(handler, f"rpc_{name}")(*args)
                reply = ("ok", value)
            except (TransportError, ValueError) as exc:
                reply = ("err", (type(exc), str(exc)))
            except Exception as exc:  # report, keep serving
                reply = ("err", (type(exc).__name__, str(exc)))
            _send(sock, reply)
    finally:
        sock.close()
