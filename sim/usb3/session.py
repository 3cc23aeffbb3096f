"""A simulated SuperSpeed host with the device attached: power-up, training, enumeration.

Used by the cocotb tests (and the RPC server behind ``sim:usb3``), so both drive the device as an
xHCI root port and its driver would: link training to U0, the link's advertisement, then the
standard SuperSpeed enumeration (USB 3.2 §9.1.2, §9.4): GET_DESCRIPTOR device (with the default
address), SET_ADDRESS, device, configuration, BOS, SET_CONFIGURATION, SET_SEL, SET_ISOCH_DELAY.
"""

from __future__ import annotations

import logging
import math
import struct
from dataclasses import dataclass

from busprobe.model.usb3_hosts import Usb3HostProfile, load_usb3_profile
from usb_protocol.types import USBRequestType, USBStandardRequests
from usb_protocol.types.descriptors.standard import StandardDescriptorNumbers as DescriptorTypes

from .controller import SuperSpeedHostController
from .link import SuperSpeedLink
from .pipe import CLOCK_HZ, HostMode, PipePartnerDriver
from .protocol import SuperSpeedProtocol
from .recovery import recover_to_u0
from .training import TrainingResult, train_to_u0

__all__ = ["Usb3Session", "Descriptors", "DEVICE_ADDRESS"]

log = logging.getLogger(__name__)

DEVICE_ADDRESS = 9
#: Warm Reset LFPS length: tReset is 80..120 ms (USB 3.2 Table 6-30); LUNA's detector takes a
#: burst of at least 80 ms (physical/lfps.py, _ResetLFPS).
WARM_RESET_S = 100e-3
#: USB 3.2 §9.4.12 SET_SEL: U1SEL, U1PEL (µs), U2SEL, U2PEL (µs); the values xhci_hcd sends
#: when U1/U2 are disabled are irrelevant to a device that rejects LGO_Ux (LUNA's).
SEL_VALUES = (0, 0, 0, 0)
#: USB 3.2 §9.4.11 SET_ISOCH_DELAY wValue (ns): a single-hop root port's delay (assumption).
ISOCH_DELAY_NS = 40


@dataclass
class Descriptors:
    """What enumeration read, raw (tests parse them with usb-protocol)."""

    device: bytes = b""
    configuration: bytes = b""
    bos: bytes = b""


def _request_type(direction_in: bool) -> int:
    return (0x80 if direction_in else 0) | USBRequestType.STANDARD << 5


class Usb3Session:
    """Host model + device: the objects a test or the RPC server works with.

    Parameters
    ----------
    dut : cocotb handle
        ``usb3_sim_top``.
    profile : Usb3HostProfile, optional
        What the host controller schedules by (default: the built-in ``ideal``).
    """

    def __init__(self, dut: object, profile: Usb3HostProfile | None = None) -> None:
        self.dut = dut
        profile = profile or load_usb3_profile("ideal")
        self.partner = PipePartnerDriver(dut)
        self.link = SuperSpeedLink(self.partner, credit_return_cycles=round(
            profile.credit_return_ns * 1e-9 * CLOCK_HZ))
        self.protocol = SuperSpeedProtocol(self.link)
        self.host = SuperSpeedHostController(self.protocol, profile)
        self.descriptors = Descriptors()
        self.training: TrainingResult | None = None

    async def power_up(self) -> None:
        """Clock and reset, link training to U0, link advertisement, enumeration."""
        await self.partner.start()
        await self.bring_up_link()
        await self.enumerate()

    async def bring_up_link(self) -> None:
        self.training = await train_to_u0(self.partner)
        await self.link.start()
        log.info("U0 after %.1f us", self.training.u0_cycle / CLOCK_HZ * 1e6)

    async def warm_reset(self) -> None:
        """Warm Reset (USB 3.2 §7.5.5): LFPS held for tReset, then training and enumeration
        again on a fresh link layer (sequence numbers and credits start over)."""
        self.link.stop()
        self.partner.set_mode(HostMode.QUIET)
        await self.partner.flush()
        self.partner.hold_lfps()
        end = self.partner.cycle + math.ceil(WARM_RESET_S * CLOCK_HZ)
        while self.partner.cycle < end:
            # The device stays in U0 (or Recovery) until the burst ends; what it sends meanwhile
            # is dropped, as a resetting port would.
            await self.partner.capture(min(10_000, end - self.partner.cycle))
        self.partner.stop_lfps()
        self.partner.discard_captures()
        self._fresh_link()
        await self.bring_up_link()
        await self.enumerate()

    async def hot_reset(self) -> None:
        """A port reset (Hot Reset, USB 3.2 §7.5.12; :mod:`.recovery`): the
        device's link layer, address and configuration start over in microseconds (a Warm
        Reset's LFPS lasts 100 ms); then the link's advertisement and enumeration again on a
        fresh link layer and host controller (no transfer, stream or sequence number kept)."""
        self.host.cancel()
        self.link.stop()
        await self.partner.flush()
        self.training = await recover_to_u0(self.partner, hot_reset=True)
        self._fresh_link()
        await self.link.start()
        await self.enumerate()

    def _fresh_link(self) -> None:
        self.link = SuperSpeedLink(self.partner,
                                   credit_return_cycles=self.link.credit_return_cycles)
        self.protocol = SuperSpeedProtocol(self.link)
        self.host = SuperSpeedHostController(self.protocol, self.host.profile)

    async def get_descriptor(self, kind: int, index: int, length: int) -> bytes:
        return await self.protocol.control(_request_type(True), USBStandardRequests.GET_DESCRIPTOR,
                                           kind << 8 | index, 0, length)

    async def enumerate(self) -> Descriptors:
        """The enumeration sequence xhci_hcd + usbcore perform on a SuperSpeed device."""
        protocol = self.protocol
        protocol.address = 0
        head = await self.get_descriptor(DescriptorTypes.DEVICE, 0, 8)
        if len(head) < 8 or head[1] != DescriptorTypes.DEVICE:
            raise ValueError(f"bad device descriptor head {head.hex()}")
        await protocol.control(_request_type(False), USBStandardRequests.SET_ADDRESS,
                               DEVICE_ADDRESS, 0, 0)
        protocol.address = DEVICE_ADDRESS
        device = await self.get_descriptor(DescriptorTypes.DEVICE, 0, 18)
        bos_head = await self.get_descriptor(DescriptorTypes.BOS, 0, 5)
        bos = await self.get_descriptor(DescriptorTypes.BOS, 0,
                                        struct.unpack_from("<H", bos_head, 2)[0])
        config_head = await self.get_descriptor(DescriptorTypes.CONFIGURATION, 0, 9)
        configuration = await self.get_descriptor(
            DescriptorTypes.CONFIGURATION, 0, struct.unpack_from("<H", config_head, 2)[0])
        await protocol.control(_request_type(False), USBStandardRequests.SET_CONFIGURATION,
                               configuration[5], 0, 0)
        await protocol.control(_request_type(False), USBStandardRequests.SET_SEL, 0, 0,
                               struct.pack("<BBHH", *SEL_VALUES))
        await protocol.control(_request_type(False), USBStandardRequests.SET_ISOCH_DELAY,
                               ISOCH_DELAY_NS, 0, 0)
        self.descriptors = Descriptors(device, configuration, bos)
        return self.descriptors
