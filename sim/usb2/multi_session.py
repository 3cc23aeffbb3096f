"""Power-up and enumeration of several devices in one simulation (``sim:usb2?devices=N``).

Each device of the multi top (:mod:`.multi_top`) gets a :class:`~.session.Usb2Session` of its
own (its host controller, address and descriptors); what they share depends on ``attach``:

``hub``
    one :class:`~.hub.SharedLine` (one 480 Mb/s bus) behind a high-speed hub, one
    :class:`~.hub.HubBus` scheduling every device's transactions, a :class:`~.hub.HubPort`
    each;
``ports``
    a line and a :class:`~.controller.HostController` each, as on separate root ports of an
    xHCI controller (a root port is a bus of its own: nothing on the wire is shared) — unless
    the host profile says its root ports share one schedule
    (:attr:`~busprobe.model.usb2_hosts.HostProfile.root_ports_share_schedule`, EHCI): then
    the ports are attached as behind a hub, one line timeline and one scheduler taking a
    transaction at a time for every device, which is what one EHCI asynchronous schedule is
    (the root ports' separate wires change nothing: the controller is busy with one
    transaction at a time, and each port sees its own device's packets and every SOF).

The devices come out of reset together, every port is reset and chirps at once, and then the
host enumerates them one at a time, as a host does behind a hub (only the device being
enumerated answers address 0); device ``i`` gets address ``DEVICE_ADDRESS + i``.
"""

from __future__ import annotations

import cocotb
from busprobe.model.usb2_hosts import HostProfile
from cocotb.triggers import Combine

from .controller import HostController
from .hub import HubBus, HubPort, SharedLine
from .multi_top import DevicePorts
from .phy import UlpiPhyDriver
from .session import DEVICE_ADDRESS, PHY_STARTUP_CYCLES, Usb2Session

__all__ = ["ATTACH", "power_up_devices"]

#: How several devices are attached: one bus behind a hub, or a root port (a bus) each.
ATTACH = ("hub", "ports")


async def power_up_devices(dut: object, profile: HostProfile, devices: int,
                           attach: str) -> list[Usb2Session]:
    """Power up the ``devices`` devices of the multi top ``dut`` attached as ``attach`` says,
    and enumerate each; their sessions, in device order."""
    if attach not in ATTACH:
        raise ValueError(f"attach={attach}: one of {', '.join(ATTACH)}")
    phys = [UlpiPhyDriver(DevicePorts(dut, i)) for i in range(devices)]
    if attach == "hub" or profile.root_ports_share_schedule:
        line = SharedLine(phys)
        hub = HubBus(line)
        lines = [line]
        hosts: list[HostController] = [HubPort(hub, profile) for _ in phys]
    else:
        lines = [SharedLine([phy]) for phy in phys]
        hosts = [HostController(line, profile) for line in lines]
    sessions = []
    for i, (phy, host) in enumerate(zip(phys, hosts, strict=True)):
        sessions.append(Usb2Session(DevicePorts(dut, i), profile, address=DEVICE_ADDRESS + i,
                                    host=host, phy=phy))
    await UlpiPhyDriver.start_together(phys)
    await phys[0].wait_cycles(PHY_STARTUP_CYCLES)
    chirps = [cocotb.start_soon(session.link.chirp(session.phy)) for session in sessions]
    await Combine(*chirps)
    for chirp in chirps:
        chirp.result()  # a device that did not chirp: its LinkError
    for line in lines:
        await line.start()
        cocotb.start_soon(line.keep_sofs())
    for session in sessions:
        line = session.link
        assert isinstance(line, SharedLine)
        line.enumerating = session.phy
        line.routes[session.address] = session.phy
        session.host.reset_state()
        await session.enumerate()
        line.enumerating = None
    return sessions
