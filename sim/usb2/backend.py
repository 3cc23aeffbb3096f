"""``sim:usb2``: the busprobe USB2 gateware in Verilator, as a :class:`UsbPlatform`.

:func:`open_sim_usb2` returns the same :class:`~busprobe.backends.usb.UsbDeviceTransport` a
board gets, over :class:`SimUsb2Platform`: each control transfer and bulk stream crosses to the
simulator (:mod:`busprobe.sim.usb2.server`, through :class:`~busprobe.sim.simulator.SimServer`)
and is carried out there by the host-controller model through the ULPI PHY model. Every IN byte
comes back to this process for the sweep's pattern check; :meth:`SimUsb2Platform.now` is
simulated time.

Selector options: ``host=ideal|ehci|xhci|FILE.toml`` (host-controller profile, default
``ideal``), ``design=busprobe|stock`` (the stock LUNA reference design, for the benchmark).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from busprobe.backends.usb import UsbDeviceTransport
from busprobe.protocol import usb2
from busprobe.targets import TargetDescription
from busprobe.transport import BusDescription, InvalidRequest, Sink, StreamResult

from ..simulator import SimServer
from .server import ENV_PROFILE
from .simulator_build import TOPLEVEL, build_usb2_simulator

__all__ = ["open_sim_usb2", "SimUsb2Platform", "SimUsb2Transport"]

#: The simulation moves >= 150 kB of bus data per wall second on a loaded 2-core machine; a
#: stream request gets 60 s plus 20 kB/s, so only a livelocked simulator meets the bound (a dead
#: or stopped one is caught within seconds by the watchdog).
_STREAM_BASE_S, _STREAM_RATE = 60.0, 20e3


class SimUsb2Transport(UsbDeviceTransport):
    """The USB device transport over the simulated gateware, with the simulation's amortisation.

    The simulation is deterministic (no OS jitter to average out) and runs at ~250-320 k
    cycles/s (~3 ms of bus time per wall second), so 2 transfers and 256 KiB amortise start-up:
    with 1 MiB transfers the first submit's offset into a microframe costs < 0.4 % of 2 MiB
    (measured >= 99.5 % of 53.248 MB/s). Every profile's curve is flat well before 256 KiB at
    queue depth 4; the hardware ladder's 4 MiB top would cost minutes of simulation per point.
    """

    min_transfers = 2
    min_bytes = 256 << 10
    default_max_length = 256 << 10
    # 10 ms of bus time (80 microframes, ~3 s of wall time) is enough for any point's figure to
    # settle; a 1-byte or a queue-depth-1 EHCI point would otherwise run for minutes.
    max_transfers = 1024
    max_bus_seconds = 0.01
    # 1 ms is 8 microframes: the device's whole-microframe window always has some to time.
    min_bus_seconds = 0.001


def open_sim_usb2(target: TargetDescription) -> SimUsb2Transport:
    """Factory of the ``sim:usb2`` row of :mod:`busprobe.buses` (options already checked)."""
    return SimUsb2Transport(SimUsb2Platform(target))


class SimUsb2Platform:
    """A :class:`~busprobe.backends.usb.UsbPlatform` whose bus is the simulation.

    Parameters
    ----------
    target : TargetDescription
        What ``sim:usb2?...`` selects: host-controller profile (``host``), gateware under test
        (``design``: ``busprobe``, or ``stock``, LUNA's reference endpoints without vendor
        requests), the bus and the hops the simulation models.

    Attributes
    ----------
    last_stream : dict
        What the last bulk stream cost in the simulator (cycles, wall seconds, NAKs, ...).
    """

    def __init__(self, target: TargetDescription) -> None:
        self.target = target
        self.name = target.text
        self.host = target.options["host"]
        self.design = target.options["design"]
        self.vendor_requests = self.design != "stock"
        self.server: SimServer | None = None
        self.last_stream: dict[str, Any] = {}
        self._cycle = 0

    def open(self) -> None:
        build_dir = build_usb2_simulator(self.design)
        self.server = SimServer(build_dir, TOPLEVEL, "busprobe.sim.usb2.server", name=self.name,
                                env={ENV_PROFILE: self.host})
        self._cycle = self.server.info["cycle"]

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None

    def _server(self) -> SimServer:
        if self.server is None:
            raise InvalidRequest(f"{self.name}: transport is not open")
        return self.server

    def now(self) -> float:
        """Simulated seconds (the ULPI cycle counter) as of the last request."""
        return self._cycle / usb2.CLOCK_HZ

    def bus(self) -> BusDescription:
        return self.target.require_bus()

    def topology(self) -> list[dict[str, Any]]:
        return self.target.hops_json()

    def control(self, request_type: int, request: int, value: int, index: int,
                length_or_data: int | bytes) -> bytes:
        data, self._cycle = self._server().call("control", request_type, int(request), value,
                                                index, length_or_data)
        return data

    def bus_reset(self) -> None:
        """Reset the bus and enumerate again, as a host does after a port reset (the usbredir
        export relays a guest's); the device's data toggles and address start over."""
        self._cycle = self._server().call("reset")

    def bot(self, cbws: Sequence[bytes], direction: str, length: int,
            outgoing: Sequence[bytes] | None,
            sink: Sink | None) -> tuple[StreamResult, list[bytes]]:
        """The commands run inside the simulator in one request (``bot_host``), so the time
        between stages is the host profile's, not this process's."""
        timeout = _STREAM_BASE_S + (length + 64) * len(cbws) / _STREAM_RATE
        reply = self._server().call("bot", list(cbws), direction, length,
                                    list(outgoing) if outgoing is not None else None,
                                    timeout=timeout)
        return self._result(reply, direction, sink), list(reply["csws"])

    def _result(self, reply: dict[str, Any], direction: str, sink: Sink | None) -> StreamResult:
        chunks = reply.pop("in_data")
        self._cycle = reply["cycle"]
        self.last_stream = reply
        if sink is not None:
            for chunk in chunks:
                sink(chunk)
        return StreamResult(direction=direction, bytes=reply["bytes"],
                            transfers=reply["transfers"], start=reply["start"] / usb2.CLOCK_HZ,
                            end=reply["end"] / usb2.CLOCK_HZ,
                            short_transfers=reply["short_transfers"])

    def loopback(self, length: int, count: int, queue_depth: int, outgoing: Sequence[bytes],
                 sink: Sink | None) -> StreamResult:
        timeout = _STREAM_BASE_S + 2 * length * count / _STREAM_RATE
        reply = self._server().call("loopback", length, count, queue_depth, list(outgoing),
                                    timeout=timeout)
        return self._result(reply, "loopback", sink)

    def bulk(self, endpoint: int, length: int, count: int, queue_depth: int,
             outgoing: Sequence[bytes] | None, sink: Sink | None) -> StreamResult:
        timeout = _STREAM_BASE_S + length * count / _STREAM_RATE
        reply = self._server().call("stream", endpoint, length, count, queue_depth,
                                    list(outgoing) if outgoing is not None else None,
                                    timeout=timeout)
        return self._result(reply, "in" if endpoint & 0x80 else "out", sink)
