"""``sim:usb3``: the busprobe SuperSpeed gateware in Verilator, as a :class:`UsbPlatform`.

:func:`open_sim_usb3` returns the same :class:`~busprobe.backends.usb.UsbDeviceTransport` a
board gets, over :class:`SimUsb3Platform`: each control transfer and bulk stream crosses to the
simulator (:mod:`busprobe.sim.usb3.server`, through :class:`~busprobe.sim.simulator.SimServer`)
and is carried out there by the xHCI model through the PIPE link partner. Every IN byte comes
back to this process for the sweep's pattern check; :meth:`SimUsb3Platform.now` is simulated
time. The driver recognises the SuperSpeed device by its INFO answer, as on a board.

Selector options: ``host=ideal|vl805|small-burst|FILE.toml`` (host-controller profile, default
``ideal``), ``burst=1..16`` (cap on the host's burst window, default 16).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from busprobe.backends.usb import UsbDeviceTransport
from busprobe.protocol import usb3
from busprobe.targets import TargetDescription
from busprobe.transport import BusDescription, InvalidRequest, Sink, StreamResult

from ..simulator import SimServer
from .server import ENV_BURST, ENV_PROFILE
from .simulator_build import TOPLEVEL, build_usb3_simulator

__all__ = ["open_sim_usb3", "SimUsb3Platform", "SimUsb3Transport"]

#: The simulation moves >= 500 kB of bus data per wall second on a loaded 2-core machine (1 MiB
#: in ~2 s); a stream request gets 60 s plus 50 kB/s, so only a livelocked simulator meets the
#: bound (a dead or stopped one is caught within seconds by the watchdog).
_STREAM_BASE_S, _STREAM_RATE = 60.0, 50e3


class SimUsb3Transport(UsbDeviceTransport):
    """The USB device transport over the simulated SuperSpeed gateware, with the simulation's
    amortisation.

    The simulation is deterministic and runs at ~250-320 k cycles/s of the 125 MHz clock (~2.4
    ms of bus time, about 1 MiB at the link's rate, per wall second), so a repeat is one
    MiB: with the model's start-up (the first ACK TP's round trip, < 3 µs) that costs < 0.2 %
    of a 2.2 ms MiB. Each point is then a few MiB over its three repeats.
    """

    min_transfers = 1
    min_bytes = 1 << 20
    default_max_length = 1 << 20
    # 4 ms of bus time (~1.9 MB at 474.8 MB/s, ~4 s of wall time) bounds any point; short
    # transfers would otherwise spend minutes in the host model's per-transfer work.
    max_transfers = 1024
    max_bus_seconds = 0.004
    # 0.5 ms is four bus intervals: the device's whole-interval window has some to time.
    min_bus_seconds = 0.0005

    def __init__(self, platform: SimUsb3Platform) -> None:
        super().__init__(platform)
        # Known before the device is opened, so a description's directions and bus hold for a
        # transport not yet open; opening still checks the device's INFO says so.
        self.requests.protocol = usb3
        self.requests.max_packet_size = usb3.MAX_PACKET_SIZE


def open_sim_usb3(target: TargetDescription) -> SimUsb3Transport:
    """Factory of the ``sim:usb3`` row of :mod:`busprobe.buses` (options already checked)."""
    return SimUsb3Transport(SimUsb3Platform(target))


class SimUsb3Platform:
    """A :class:`~busprobe.backends.usb.UsbPlatform` whose bus is the SuperSpeed simulation.

    Parameters
    ----------
    target : TargetDescription
        What ``sim:usb3?...`` selects: host-controller profile (``host``), burst cap
        (``burst``), the bus and the hops the simulation models.

    Attributes
    ----------
    last_stream : dict
        What the last bulk stream cost in the simulator (cycles, wall seconds, NRDYs, ...).
    """

    #: busprobe's SuperSpeed gateware answers the vendor requests (no stock design here).
    vendor_requests = True

    def __init__(self, target: TargetDescription) -> None:
        self.target = target
        self.name = target.text
        self.host = target.options["host"]
        self.burst = target.options["burst"]
        self.server: SimServer | None = None
        self.last_stream: dict[str, Any] = {}
        self._cycle = 0

    def open(self) -> None:
        build_dir = build_usb3_simulator()
        self.server = SimServer(build_dir, TOPLEVEL, "busprobe.sim.usb3.server", name=self.name,
                                env={ENV_PROFILE: self.host, ENV_BURST: str(self.burst)})
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
        """Simulated seconds (the PIPE cycle counter) as of the last request."""
        return self._cycle / usb3.CLOCK_HZ

    def bus(self) -> BusDescription:
        return self.target.require_bus()

    def topology(self) -> list[dict[str, Any]]:
        return self.target.hops_json()

    def control(self, request_type: int, request: int, value: int, index: int,
                length_or_data: int | bytes) -> bytes:
        data, self._cycle = self._server().call("control", request_type, int(request), value,
                                                index, length_or_data)
        return data

    def bulk(self, endpoint: int, length: int, count: int, queue_depth: int,
             outgoing: Sequence[bytes] | None, sink: Sink | None) -> StreamResult:
        timeout = _STREAM_BASE_S + length * count / _STREAM_RATE
        reply = self._server().call("stream", endpoint, length, count, queue_depth,
                                    list(outgoing) if outgoing is not None else None,
                                    timeout=timeout)
        chunks = reply.pop("in_data")
        self._cycle = reply["cycle"]
        self.last_stream = reply
        if sink is not None:
            for chunk in chunks:
                sink(chunk)
        return StreamResult(direction="in" if endpoint & 0x80 else "out", bytes=reply["bytes"],
                            transfers=reply["transfers"], start=reply["start"] / usb3.CLOCK_HZ,
                            end=reply["end"] / usb3.CLOCK_HZ,
                            short_transfers=reply["short_transfers"])

    def loopback(self, length: int, count: int, queue_depth: int, outgoing: Sequence[bytes],
                 sink: Sink | None) -> StreamResult:
        """The SuperSpeed gateware has no loopback mode (the transport refuses it first)."""
        raise InvalidRequest(f"{self.name}: the SuperSpeed device has no loopback mode")

    def bot(self, cbws: Sequence[bytes], direction: str, length: int,
            outgoing: Sequence[bytes] | None,
            sink: Sink | None) -> tuple[StreamResult, list[bytes]]:
        """The SuperSpeed gateware has no BOT framing (the transport refuses it first)."""
        raise InvalidRequest(f"{self.name}: the SuperSpeed device has no BOT framing")
