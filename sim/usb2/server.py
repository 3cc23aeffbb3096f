"""cocotb module run inside the simulator: serves the sim Transport's requests over a socket.

Started by :mod:`busprobe.sim.usb2.backend` with ``COCOTB_TEST_MODULES`` pointing here. It powers
the device up, enumerates it, then answers one request at a time; the simulation does not
advance between requests, so simulated time only flows while the host model works.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from typing import Any

import cocotb
from busprobe.model.usb2_hosts import load_profile
from busprobe.model.usb2_wire import ULPI_CLOCK_HZ
from busprobe.protocol import usb2

from .controller import StreamStuck, TransferStall
from .link import DeviceTimeout, LinkError
from .rpc import ENV_SOCKET, ConnectionClosed, recv_message, send_message
from .session import Usb2Session

log = logging.getLogger(__name__)

ENV_PROFILE = "BUSPROBE_SIM_HOST"


def _error_kind(exc: Exception) -> str:
    if isinstance(exc, DeviceTimeout | StreamStuck):
        return "timeout"
    if isinstance(exc, TransferStall):
        return "stall"
    if isinstance(exc, ValueError):
        return "invalid"
    return "link"


class _Server:
    def __init__(self, session: Usb2Session, sock: socket.socket) -> None:
        self.session = session
        self.sock = sock
        self.wall = 0.0

    def now(self) -> dict[str, Any]:
        return {"cycle": self.session.phy.cycle}

    async def handle(self, header: dict[str, Any], payload: bytes) -> tuple[dict, bytes]:
        op = header["op"]
        session = self.session
        if op == "control":
            data: bytes | int = payload if not header["request_type"] & 0x80 \
                else header["length"]
            result = await session.host.control(header["request_type"], header["request"],
                                                header["value"], header["index"], data)
            return {"ok": True, **self.now()}, result
        if op == "stream":
            return await self.stream(header), b""
        if op == "reset":
            await session.reset_and_enumerate()
            return {"ok": True, **self.now()}, b""
        if op == "now":
            return {"ok": True, **self.now()}, b""
        if op == "info":
            return {"ok": True, "strings": session.descriptors.strings,
                    "device": session.descriptors.device.hex(),
                    "configuration": session.descriptors.configuration.hex(), **self.now()}, b""
        raise ValueError(f"unknown request {op!r}")

    async def stream(self, header: dict[str, Any]) -> dict[str, Any]:
        direction = header["direction"]
        sock = self.sock

        def source(length: int) -> bytes:
            send_message(sock, {"op": "need", "length": length})
            _, data = recv_message(sock)
            if len(data) != length:
                raise ValueError(f"source gave {len(data)} bytes, not {length}")
            return data

        def sink(data: bytes) -> None:
            send_message(sock, {"op": "data"}, data)

        endpoint = (usb2.EP_IN if direction == "in" else usb2.EP_OUT) & 0x7F
        started = time.perf_counter()
        cycle0 = self.session.phy.cycle
        outcome = await self.session.host.stream(
            direction, endpoint, header["length"], header["count"], header["queue_depth"],
            max_packet_size=usb2.MAX_PACKET_SIZE, source=source, sink=sink,
            zlp=bool(header.get("zlp")))
        wall = time.perf_counter() - started
        cycles = self.session.phy.cycle - cycle0
        return {"ok": True, "bytes": outcome.bytes, "transfers": outcome.transfers,
                "short_transfers": outcome.short_transfers, "start": outcome.start,
                "end": outcome.end, "naks": outcome.naks, "nyets": outcome.nyets,
                "transactions": outcome.transactions, "wall_seconds": wall,
                "sim_cycles": cycles, **self.now()}

    async def serve(self) -> None:
        while True:
            try:
                header, payload = recv_message(self.sock)
            except ConnectionClosed:
                return
            if header.get("op") == "quit":
                send_message(self.sock, {"ok": True})
                return
            try:
                reply, data = await self.handle(header, payload)
            except (LinkError, ValueError) as exc:
                reply, data = {"ok": False, "kind": _error_kind(exc), "error": str(exc)}, b""
            send_message(self.sock, reply, data)


@cocotb.test()
async def serve(dut: Any) -> None:
    """Power up, enumerate, then serve requests until the client quits or disconnects."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(os.environ[ENV_SOCKET])
    profile = load_profile(os.environ.get(ENV_PROFILE, "ideal"))
    session = Usb2Session(dut, profile)
    try:
        await session.power_up()
    except (LinkError, ValueError) as exc:
        send_message(sock, {"ok": False, "kind": _error_kind(exc),
                            "error": f"device did not enumerate: {exc}"})
        sock.close()
        return
    send_message(sock, {"ok": True, "clock_hz": ULPI_CLOCK_HZ, "profile": profile.name,
                        "strings": session.descriptors.strings,
                        "cycle": session.phy.cycle})
    try:
        await _Server(session, sock).serve()
    finally:
        sock.close()
