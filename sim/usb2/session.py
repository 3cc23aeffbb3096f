"""A simulated USB 2.0 host with the busprobe device attached: power-up, reset, enumeration.

Used by the RPC server behind the sim Transport and by the cocotb tests, so both drive the
device exactly as a host would: bus reset and chirp, then the standard enumeration
(GET_DESCRIPTOR device/configuration/strings, SET_ADDRESS, SET_CONFIGURATION; USB 2.0 §9.4).
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass, field

from busprobe.model.usb2_hosts import HostProfile

from .controller import HostController
from .link import CYCLES_PER_US, UlpiHostModel
from .phy import UlpiPhyDriver

__all__ = ["Usb2Session", "Descriptors", "DEVICE_ADDRESS"]

log = logging.getLogger(__name__)

DEVICE_ADDRESS = 7
GET_DESCRIPTOR, SET_ADDRESS, SET_CONFIGURATION = 6, 5, 9
DESC_DEVICE, DESC_CONFIGURATION, DESC_STRING = 1, 2, 3
#: LUNA's ULPI translator waits 1 ms after reset before it uses the PHY (USB334x Tstart).
PHY_STARTUP_CYCLES = 1_100 * CYCLES_PER_US


@dataclass
class Descriptors:
    """What enumeration read, raw (the tests parse them with ``usb_protocol``)."""

    device: bytes = b""
    configuration: bytes = b""
    strings: dict[int, str] = field(default_factory=dict)


class Usb2Session:
    """Host model + device: the objects a test or the RPC server works with.

    Parameters
    ----------
    dut : cocotb handle
        ``usb2_sim_top`` (or one device's ports of the multi top).
    profile : HostProfile
        Host-controller profile the controller schedules by.
    address : int
        What enumeration assigns the device.
    host, phy : HostController, UlpiPhyDriver, optional
        The host controller and line the device is on and the driver of its PHY, when several
        devices share the simulation; by default its own.
    """

    def __init__(self, dut: object, profile: HostProfile, *, address: int = DEVICE_ADDRESS,
                 host: HostController | None = None, phy: UlpiPhyDriver | None = None) -> None:
        self.dut = dut
        self.phy = phy or UlpiPhyDriver(dut)
        if host is None:
            self.link = UlpiHostModel(self.phy)
            self.host = HostController(self.link, profile)
        else:  # one of several devices (busprobe.sim.usb2.multi_session)
            self.host, self.link = host, host.link
        self.address = address
        self.descriptors = Descriptors()

    async def power_up(self) -> None:
        """Clock, reset, PHY start-up time, then bus reset and enumeration."""
        await self.phy.start()
        await self.phy.wait_cycles(PHY_STARTUP_CYCLES)
        await self.reset_and_enumerate()

    async def reset_and_enumerate(self) -> None:
        await self.link.bus_reset()
        self.host.reset_state()
        await self.enumerate()

    async def get_descriptor(self, kind: int, index: int, length: int,
                             language: int = 0) -> bytes:
        return await self.host.control(0x80, GET_DESCRIPTOR, (kind << 8) | index, language,
                                       length)

    async def enumerate(self) -> Descriptors:
        """The standard enumeration sequence a USB 2.0 host performs (§9.1.2)."""
        host = self.host
        head = await self.get_descriptor(DESC_DEVICE, 0, 64)
        if len(head) < 8 or head[1] != DESC_DEVICE:
            raise ValueError(f"bad device descriptor {head.hex()}")
        await host.control(0x00, SET_ADDRESS, self.address, 0, 0)
        host.address = self.address
        device = await self.get_descriptor(DESC_DEVICE, 0, 18)
        config_head = await self.get_descriptor(DESC_CONFIGURATION, 0, 9)
        total = struct.unpack_from("<H", config_head, 2)[0]
        configuration = await self.get_descriptor(DESC_CONFIGURATION, 0, total)
        strings: dict[int, str] = {}
        languages = await self.get_descriptor(DESC_STRING, 0, 255)
        language = struct.unpack_from("<H", languages, 2)[0] if len(languages) >= 4 else 0x0409
        for index in (device[14], device[15], device[16]):  # iManufacturer, iProduct, iSerial
            if index:
                raw = await self.get_descriptor(DESC_STRING, index, 255, language)
                strings[index] = raw[2:raw[0]].decode("utf-16-le")
        await host.control(0x00, SET_CONFIGURATION, configuration[5], 0, 0)
        self.descriptors = Descriptors(device, configuration, strings)
        log.info("enumerated: %s", ", ".join(strings.values()))
        return self.descriptors
