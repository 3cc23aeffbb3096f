"""``sim:usb2`` Transport: the busprobe USB2 gateware in Verilator behind a simulated host.

``open_sim_usb2(selector)`` builds the simulator once (:mod:`busprobe.sim.usb2.simulator_build`),
starts it with the cocotb server (:mod:`busprobe.sim.usb2.server`) in a child process
and talks to it over a Unix socket (:mod:`busprobe.sim.usb2.rpc`). Vendor requests and telemetry go
through the same driver as the real board (:mod:`busprobe.backends.usb2_device`). Every IN byte
crosses into this process for the sweep's pattern check; :meth:`now` is simulated time.

Selector options: ``host=ideal|ehci|xhci|FILE.toml`` (host-controller profile, default
``ideal``), ``design=busprobe|stock`` (the stock LUNA reference design, for the benchmark).
"""

from __future__ import annotations

import logging
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from busprobe.backends.usb2_device import Usb2DeviceDriver
from busprobe.model.usb2_hosts import load_profile
from busprobe.model.usb2_wire import ULPI_CLOCK_HZ
from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern
from busprobe.selectors import Selector
from busprobe.transport import (
    BusDescription,
    DeviceGone,
    InvalidRequest,
    Sink,
    Source,
    StreamResult,
    Telemetry,
    TransferTimeout,
    Transport,
    TransportError,
)

from .rpc import ENV_SOCKET, ConnectionClosed, recv_message, send_message

__all__ = ["open_sim_usb2", "SimUsb2Transport"]

log = logging.getLogger(__name__)

#: Wall-clock limit for one request (a 4 MiB point at ~1 M cycles/s takes seconds, not minutes).
REQUEST_TIMEOUT_S = 600.0
START_TIMEOUT_S = 120.0
OPTIONS = ("host", "design")


def open_sim_usb2(selector: Selector) -> SimUsb2Transport:
    unknown = set(selector.options) - set(OPTIONS)
    if unknown:
        raise InvalidRequest(f"{selector.text}: unknown option(s) {', '.join(sorted(unknown))} "
                             f"(sim:usb2 takes {', '.join(OPTIONS)})")
    host = selector.options.get("host", "ideal")
    try:
        load_profile(host)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    design = selector.options.get("design", "busprobe")
    if design not in ("busprobe", "stock"):
        raise InvalidRequest(f"{selector.text}: design must be busprobe or stock, not {design!r}")
    return SimUsb2Transport(selector.text, host=host, design=design)


def _launch(build_dir: str, env: dict[str, str]) -> None:
    """Child process entry: run the simulator with the server module (cocotb's runner)."""
    from busprobe.sim.toolchain import apply_verilator_env
    from cocotb_tools.runner import get_runner

    apply_verilator_env()
    get_runner("verilator").test(
        test_module="busprobe.sim.usb2.server", hdl_toplevel="usb2_sim_top",
        hdl_toplevel_lang="verilog", build_dir=build_dir, test_dir=build_dir,
        extra_env=env, results_xml=str(Path(env["BUSPROBE_SIM_LOG"]).with_suffix(".xml")))


class SimUsb2Transport(Transport):
    """Transport to the simulated busprobe USB2 device (see the module docstring).

    Parameters
    ----------
    selector : str
        The selector text it was opened with.
    host : str
        Host-controller profile name or TOML path.
    design : str
        ``busprobe`` or ``stock``.
    """

    directions = ("in", "out")
    # The simulation is deterministic (no OS jitter to average out) and runs at ~250-320 k
    # cycles/s (~3 ms of bus time per wall second), so 2 transfers and 256 KiB amortise
    # start-up: with 1 MiB transfers the first submit's offset into a microframe costs < 0.4 %
    # of 2 MiB (measured >= 99.5 % of 53.248 MB/s).
    min_transfers = 2
    min_bytes = 256 << 10
    # Every profile's curve is flat well before 256 KiB at queue depth 4; the hardware ladder's
    # 4 MiB top would cost minutes of simulation per point and show nothing new.
    default_max_length = 256 << 10

    def __init__(self, selector: str, *, host: str = "ideal", design: str = "busprobe") -> None:
        self.selector = selector
        self.host = host
        self.design = design
        self._process: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._cycle = 0
        self._driver = Usb2DeviceDriver(self._control, name=selector)
        self.last_stream: dict[str, Any] = {}

    @property
    def bus(self) -> BusDescription:
        return BusDescription(kind="usb2-hs", speed="high", host_profile=self.host,
                              max_packet_size=usb2.MAX_PACKET_SIZE,
                              extra={"simulated": True, "design": self.design})

    def topology(self) -> list[dict[str, Any]]:
        return [{"hop": "host controller (simulated)", "profile": self.host},
                {"hop": "device", "design": self.design, "speed": "high",
                 "phy": "ULPI PHY model (sim/hdl/ulpi_phy.sv)"}]

    # -- process lifecycle ----------------------------------------------------------------------

    def open(self) -> None:
        from .simulator_build import build_usb2_simulator

        build_dir = build_usb2_simulator(self.design)
        self._tmp = tempfile.TemporaryDirectory(prefix="busprobe-sim-usb2-")
        path = os.path.join(self._tmp.name, "rpc.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(1)
        listener.settimeout(0.5)
        self._log = Path(self._tmp.name) / "sim.log"
        env = {ENV_SOCKET: path, "BUSPROBE_SIM_HOST": self.host,
               "BUSPROBE_SIM_LOG": str(self._log), "COCOTB_LOG_LEVEL": "WARNING"}
        code = (f"from busprobe.sim.usb2.backend import _launch; "
                f"_launch({str(build_dir)!r}, {env!r})")
        self._process = subprocess.Popen(
            [sys.executable, "-c", code], stdout=self._log.open("w"), stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, env={**os.environ, **env})
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while True:
                try:
                    self._sock, _ = listener.accept()
                    break
                except TimeoutError:
                    if self._process.poll() is not None:
                        raise DeviceGone(f"{self.selector}: simulator exited during start-up: "
                                         f"{self._last_log_line()}") from None
                    if time.monotonic() > deadline:
                        raise TransferTimeout(f"{self.selector}: simulator did not start "
                                              f"within {START_TIMEOUT_S:.0f} s") from None
        finally:
            listener.close()
        self._sock.settimeout(REQUEST_TIMEOUT_S)
        hello, _ = self._receive()
        self._check(hello)
        self._cycle = hello["cycle"]
        if self.design != "stock":
            self._driver.check_info()

    def close(self) -> None:
        if self._sock is not None:
            try:
                send_message(self._sock, {"op": "quit"})
                self._sock.settimeout(10)
                recv_message(self._sock)
            except (OSError, ConnectionClosed):
                pass
            self._sock.close()
            self._sock = None
        if self._process is not None:
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait()
            self._process = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def _last_log_line(self) -> str:
        try:
            lines = [line.strip() for line in self._log.read_text(errors="replace").splitlines()
                     if line.strip()]
        except OSError:
            return "no log"
        errors = [line for line in lines if "Error" in line or "error" in line]
        return (errors or lines or ["no output"])[-1][:300]

    # -- RPC ------------------------------------------------------------------------------------

    def _receive(self) -> tuple[dict[str, Any], bytes]:
        if self._sock is None:
            raise DeviceGone(f"{self.selector}: not open")
        # Wait for the answer while watching the child: a simulator that dies without closing
        # the socket (its grandchild still holding it) must not hang the host for minutes.
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        while not select.select([self._sock], [], [], 1.0)[0]:
            if self._process is not None and self._process.poll() is not None:
                detail = self._last_log_line()
                self._kill()
                raise DeviceGone(f"{self.selector}: simulator exited: {detail}")
            if time.monotonic() > deadline:
                self._kill()
                raise TransferTimeout(f"{self.selector}: simulator gave no answer within "
                                      f"{REQUEST_TIMEOUT_S:.0f} s")
        try:
            return recv_message(self._sock)
        except TimeoutError:
            self._kill()
            raise TransferTimeout(f"{self.selector}: simulator gave no answer within "
                                  f"{REQUEST_TIMEOUT_S:.0f} s") from None
        except (ConnectionClosed, OSError):
            detail = self._last_log_line()
            self._kill()
            raise DeviceGone(f"{self.selector}: simulator exited: {detail}") from None

    def _send(self, header: dict[str, Any], payload: bytes = b"") -> None:
        if self._sock is None:
            raise DeviceGone(f"{self.selector}: not open")
        try:
            send_message(self._sock, header, payload)
        except OSError:
            detail = self._last_log_line()
            self._kill()
            raise DeviceGone(f"{self.selector}: simulator exited: {detail}") from None

    def _kill(self) -> None:
        if self._process is not None:
            try:
                os.killpg(self._process.pid, signal.SIGKILL)  # the launcher and the simulator
            except ProcessLookupError:
                pass
            self._process.wait()
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _check(self, reply: dict[str, Any]) -> dict[str, Any]:
        if reply.get("ok"):
            if "cycle" in reply:
                self._cycle = reply["cycle"]
            return reply
        kind, error = reply.get("kind"), f"{self.selector}: {reply.get('error')}"
        if kind == "timeout":
            raise TransferTimeout(error)
        if kind in ("stall", "invalid"):
            raise InvalidRequest(error)
        raise TransportError(error)

    def _call(self, header: dict[str, Any], payload: bytes = b"") -> tuple[dict[str, Any], bytes]:
        self._send(header, payload)
        reply, data = self._receive()
        return self._check(reply), data

    def _control(self, request_type: int, request: int, value: int, index: int,
                 length_or_data: int | bytes) -> bytes:
        header = {"op": "control", "request_type": request_type, "request": int(request),
                  "value": value, "index": index,
                  "length": length_or_data if isinstance(length_or_data, int) else 0}
        payload = b"" if isinstance(length_or_data, int) else bytes(length_or_data)
        _, data = self._call(header, payload)
        return data

    # -- Transport ------------------------------------------------------------------------------

    def now(self) -> float:
        """Simulated seconds (the ULPI cycle counter at 60 MHz) as of the last request."""
        return self._cycle / ULPI_CLOCK_HZ

    # The stock LUNA design has no vendor requests: its IN stream is COUNTER from power-up (and
    # the sweep's checker starts there too), it has no telemetry, and it ends no IN transfer
    # with a short packet, so it is measured with lengths that are multiples of 512.

    def set_pattern(self, pattern: Pattern) -> None:
        if self.design == "stock":
            if pattern != Pattern.COUNTER:
                raise InvalidRequest(f"{self.selector}: the stock design only streams COUNTER")
            return
        self._driver.set_pattern(pattern)

    def clear_telemetry(self) -> None:
        if self.design != "stock":
            self._driver.clear_telemetry()

    def read_telemetry(self) -> Telemetry:
        if self.design == "stock":
            return Telemetry()
        return self._driver.read_telemetry()

    def bus_reset(self) -> None:
        """Reset the bus and enumerate again (the device loses its state)."""
        self._call({"op": "reset"})
        self._driver.forget_state()

    def stream(self, direction: str, length: int, count: int, queue_depth: int,
               source: Source | None = None, sink: Sink | None = None,
               zlp: bool = False) -> StreamResult:
        self.validate(direction, length, queue_depth)
        if direction == "in" and self.design != "stock":
            self._driver.set_in_transfer(length, zlp)
        elif source is None:
            raise InvalidRequest("an OUT stream needs a data source")
        self._send({"op": "stream", "direction": direction, "length": length, "count": count,
                    "queue_depth": queue_depth, "zlp": zlp})
        while True:
            reply, data = self._receive()
            op = reply.get("op")
            if op == "need":
                self._send({"op": "data"}, source(reply["length"]))  # type: ignore[misc]
            elif op == "data":
                if sink is not None:
                    sink(data)
            else:
                break
        self._check(reply)
        self.last_stream = reply
        return StreamResult(direction=direction, bytes=reply["bytes"],
                            transfers=reply["transfers"], start=reply["start"] / ULPI_CLOCK_HZ,
                            end=reply["end"] / ULPI_CLOCK_HZ,
                            short_transfers=reply["short_transfers"])
