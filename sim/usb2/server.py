"""cocotb module run inside the simulator: the USB2 platform's requests, carried out on the bus.

Started by :class:`~busprobe.sim.simulator.SimServer` for :mod:`busprobe.sim.usb2.backend`. It
powers the device up and enumerates it, then serves :class:`Usb2RpcHandler` over
:mod:`busprobe.sim.rpc`: every control transfer and bulk stream the host driver makes is
carried out by the simulated host controller through the ULPI PHY model against the gateware.
The simulation does not advance between requests, so simulated time only flows while the host
model works (a control transfer, or a reap of the transfer queue).
"""

from __future__ import annotations

import os
from typing import Any

import cocotb
from busprobe.model.usb2_hosts import load_profile
from busprobe.sim.rpc import BusErrors, on_the_bus, serve
from busprobe.transport import EndpointStalled, InvalidRequest, TransferTimeout, TransportError

from ..usb_rpc import UsbRpcHandler
from .controller import StreamStuck, TransferStall
from .link import DeviceTimeout, LinkError
from .session import Usb2Session

__all__ = ["ENV_PROFILE", "Usb2RpcHandler"]

#: Environment variable naming the host-controller profile the simulated host schedules by.
ENV_PROFILE = "BUSPROBE_SIM_HOST"


#: The ULPI host model's errors, as the transport's.
BUS_ERRORS: BusErrors = (
    ((DeviceTimeout, StreamStuck), TransferTimeout),
    (TransferStall, EndpointStalled),
    (ValueError, InvalidRequest),
    (LinkError, TransportError),
)


class Usb2RpcHandler(UsbRpcHandler):
    """The requests :class:`~busprobe.sim.usb2.backend.SimUsb2Platform` makes (``rpc_<name>``):
    endpoint 0 and the transfer queue (:class:`~busprobe.sim.usb_rpc.UsbRpcHandler`), and a bus
    reset. The clock is the 60 MHz ULPI clock.

    Parameters
    ----------
    session : Usb2Session
        Powered up and enumerated.
    """

    bus_errors = BUS_ERRORS

    def __init__(self, session: Usb2Session) -> None:
        super().__init__(session.host)
        self.session = session

    async def rpc_reset(self) -> int:
        """Bus reset, then the standard enumeration again (address, configuration)."""
        self.host.cancel()
        await on_the_bus("bus reset", self.session.reset_and_enumerate, BUS_ERRORS)
        return self.cycle


@cocotb.test()
async def serve_usb2(dut: Any) -> None:
    """Power up, enumerate, then serve requests until the host shuts down or disconnects."""
    profile = load_profile(os.environ.get(ENV_PROFILE, "ideal"))

    async def setup() -> tuple[Usb2RpcHandler, dict[str, Any]]:
        session = Usb2Session(dut, profile)
        await on_the_bus("enumeration", session.power_up, BUS_ERRORS)
        return Usb2RpcHandler(session), {"cycle": session.phy.cycle, "profile": profile.name,
                                         "strings": session.descriptors.strings}

    await serve(setup)
