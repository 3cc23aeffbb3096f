"""cocotb module run inside the simulator: the USB3 platform's requests, carried out on the link.

Started by :class:`~busprobe.sim.simulator.SimServer` for :mod:`busprobe.sim.usb3.backend`. It
powers the device up, trains the link to U0 and enumerates it (:class:`Usb3Session`), then
serves :class:`Usb3RpcHandler` over :mod:`busprobe.sim.rpc`: every control transfer and bulk
transfer the host driver makes is carried out by the simulated xHCI through the PIPE link
partner against the gateware. The simulation does not advance between requests, so simulated
time only flows while the host model works.
"""

from __future__ import annotations

import os
import time
from typing import Any

import cocotb
from busprobe.model.usb3_hosts import MAX_BURST_PACKETS, load_usb3_profile
from busprobe.protocol import usb3
from busprobe.sim.rpc import BusErrors, on_the_bus, serve
from busprobe.transport import EndpointStalled, InvalidRequest, TransferTimeout, TransportError

from ..usb_rpc import UsbRpcHandler
from .link import LinkError
from .protocol import DeviceStall, DeviceTimeout
from .session import Usb3Session
from .training import TrainingFailed

__all__ = ["ENV_PROFILE", "ENV_BURST", "Usb3RpcHandler"]

#: Environment variables naming the host-controller profile the simulated xHCI schedules by and
#: the cap on its burst window (packets).
ENV_PROFILE = "BUSPROBE_SIM_USB3_HOST"
ENV_BURST = "BUSPROBE_SIM_USB3_BURST"


#: The PIPE host model's errors, as the transport's.
BUS_ERRORS: BusErrors = (
    (DeviceTimeout, TransferTimeout),
    (DeviceStall, EndpointStalled),
    (ValueError, InvalidRequest),
    ((LinkError, TrainingFailed), TransportError),
    (AssertionError, TransferTimeout),  # the model's own "nothing came" checks (expect())
)


class Usb3RpcHandler(UsbRpcHandler):
    """The requests :class:`~busprobe.sim.usb3.backend.SimUsb3Platform` makes: endpoint 0 and
    the transfer queue (:class:`~busprobe.sim.usb_rpc.UsbRpcHandler`), on the 125 MHz PIPE
    clock; :meth:`rpc_counters` adds the link's own counters, :meth:`rpc_reset` a port reset.

    Parameters
    ----------
    session : Usb3Session
        Link in U0, device enumerated.
    """

    bus_errors = BUS_ERRORS

    def __init__(self, session: Usb3Session) -> None:
        super().__init__(session.host)
        self.session = session

    async def rpc_counters(self) -> dict[str, Any]:
        return {**await super().rpc_counters(), "link": dict(vars(self.session.link.counters))}

    async def rpc_reset(self) -> int:
        """A port reset (Hot Reset), then the standard enumeration again: the device's address,
        configuration, endpoints and streams start over, and so does the host controller."""
        await on_the_bus("port reset (Hot Reset)", self.session.hot_reset, BUS_ERRORS)
        self.host = self.session.host
        return self.cycle

    async def rpc_alloc_streams(self, endpoints: list[int], count: int) -> int:
        """Stream rings for Stream IDs 1..``count`` on each of ``endpoints``; the clock."""
        for endpoint in endpoints:
            self.session.host.enable_streams(endpoint, count)
        return self.cycle

    async def rpc_prime_pipes(self, endpoints: list[int]) -> int:
        """The streams allocated on ``endpoints`` are primed by pipe (the Prime Stream ID) and
        a selection with no transfer waiting is refused with NoStream (:mod:`.host_streams`),
        until they are allocated again; the clock."""
        for endpoint in endpoints:
            self.session.host.streams[endpoint].pipe_primes = True
        return self.cycle

    async def rpc_free_streams(self, endpoints: list[int]) -> int:
        for endpoint in endpoints:
            self.session.host.free_streams(endpoint)
        return self.cycle


@cocotb.test()
async def serve_usb3(dut: Any) -> None:
    """Power up, train, enumerate, then serve requests until the host shuts down or
    disconnects."""
    profile = load_usb3_profile(os.environ.get(ENV_PROFILE, "ideal")).with_burst(
        int(os.environ.get(ENV_BURST, MAX_BURST_PACKETS)))

    async def setup() -> tuple[Usb3RpcHandler, dict[str, Any]]:
        session = Usb3Session(dut, profile)
        started = time.perf_counter()
        await on_the_bus("link training and enumeration", session.power_up, BUS_ERRORS)
        return Usb3RpcHandler(session), {
            "cycle": session.partner.cycle, "profile": profile.name,
            "max_burst_in": profile.max_burst_in, "max_burst_out": profile.max_burst_out,
            "clock_hz": usb3.CLOCK_HZ, "power_up_wall_s": time.perf_counter() - started}

    await serve(setup)
