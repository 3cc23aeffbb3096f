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
from .multi_session import power_up_devices
from .session import Usb2Session

__all__ = ["ENV_PROFILE", "ENV_DEVICES", "ENV_ATTACH", "Usb2RpcHandler"]

#: Environment variable naming the host-controller profile the simulated host schedules by.
ENV_PROFILE = "BUSPROBE_SIM_HOST"
#: How many devices the model has (``sim:usb2?devices=N``, the multi top) and how they are
#: attached (``hub`` or ``ports``, :mod:`.multi_session`): each is then served on its own RPC
#: channel (:mod:`busprobe.sim.shared_clock`).
ENV_DEVICES = "BUSPROBE_SIM_DEVICES"
ENV_ATTACH = "BUSPROBE_SIM_ATTACH"


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
    shared : bool
        One of several devices in the simulation (no bus reset of its own).
    """

    bus_errors = BUS_ERRORS

    def __init__(self, session: Usb2Session, *, shared: bool = False) -> None:
        super().__init__(session.host)
        self.session = session
        self.shared = shared

    async def rpc_reset(self) -> int:
        """Bus reset, then the standard enumeration again (address, configuration)."""
        if self.shared:
            raise InvalidRequest("a port reset of one of several simulated devices is not "
                                 "modelled")
        self.host.cancel()
        await on_the_bus("bus reset", self.session.reset_and_enumerate, BUS_ERRORS)
        return self.cycle


@cocotb.test()
async def serve_usb2(dut: Any) -> None:
    """Power up, enumerate, then serve requests until the host shuts down or disconnects."""
    profile = load_profile(os.environ.get(ENV_PROFILE, "ideal"))
    devices = int(os.environ.get(ENV_DEVICES, "1"))

    async def setup() -> tuple[Usb2RpcHandler | list[Usb2RpcHandler], dict[str, Any]]:
        if devices > 1:
            sessions = await on_the_bus("enumeration", lambda: power_up_devices(
                dut, profile, devices, os.environ.get(ENV_ATTACH, "hub")), BUS_ERRORS)
            return [Usb2RpcHandler(s, shared=True) for s in sessions], {
                "cycle": sessions[0].phy.cycle, "profile": profile.name,
                "strings": sessions[0].descriptors.strings}
        session = Usb2Session(dut, profile)
        await on_the_bus("enumeration", session.power_up, BUS_ERRORS)
        return Usb2RpcHandler(session), {"cycle": session.phy.cycle, "profile": profile.name,
                                         "strings": session.descriptors.strings}

    await serve(setup)
