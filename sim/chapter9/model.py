"""The vocabulary of the chapter 9 request matrix: requests, feature selectors, descriptor types,
the answers a row expects (:class:`Expect`), the rows (:class:`Case`) and the description of the
device they are made for (:class:`Chapter9Device`)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Expect", "Case", "Chapter9Device", "ANY", "ACK", "STALL", "data", "STATES", "State",
           "request_type", "IN", "OUT", "DEVICE", "INTERFACE", "ENDPOINT", "OTHER", "Req",
           "Feature", "Desc"]

State = Literal["default", "address", "configured"]
#: The device states chapter 9 distinguishes once a device is attached and powered (§9.1.1).
STATES: tuple[State, ...] = ("default", "address", "configured")

IN, OUT = 0x80, 0x00
DEVICE, INTERFACE, ENDPOINT, OTHER = 0, 1, 2, 3


class Req:
    """Standard request codes (USB 2.0 Table 9-4; USB 3.2 Table 9-4 adds the last two)."""

    GET_STATUS, CLEAR_FEATURE, SET_FEATURE, SET_ADDRESS = 0, 1, 3, 5
    GET_DESCRIPTOR, SET_DESCRIPTOR, GET_CONFIGURATION, SET_CONFIGURATION = 6, 7, 8, 9
    GET_INTERFACE, SET_INTERFACE, SYNCH_FRAME = 10, 11, 12
    SET_SEL, SET_ISOCH_DELAY = 48, 49
    NAMES = {0: "GET_STATUS", 1: "CLEAR_FEATURE", 3: "SET_FEATURE", 5: "SET_ADDRESS",
             6: "GET_DESCRIPTOR", 7: "SET_DESCRIPTOR", 8: "GET_CONFIGURATION",
             9: "SET_CONFIGURATION", 10: "GET_INTERFACE", 11: "SET_INTERFACE",
             12: "SYNCH_FRAME", 48: "SET_SEL", 49: "SET_ISOCH_DELAY"}


class Feature:
    """Feature selectors (USB 2.0 Table 9-6; USB 3.2 Table 9-7)."""

    ENDPOINT_HALT = 0
    FUNCTION_SUSPEND = 0          # interface (USB 3.2)
    DEVICE_REMOTE_WAKEUP = 1
    TEST_MODE = 2
    U1_ENABLE, U2_ENABLE, LTM_ENABLE = 48, 49, 50


class Desc:
    """Descriptor types (USB 2.0 Table 9-5; USB 3.2 Table 9-6)."""

    DEVICE, CONFIGURATION, STRING, INTERFACE, ENDPOINT = 1, 2, 3, 4, 5
    DEVICE_QUALIFIER, OTHER_SPEED_CONFIGURATION, INTERFACE_POWER = 6, 7, 8
    OTG, DEBUG, BOS = 9, 10, 15


def request_type(direction: int, recipient: int) -> int:
    """bmRequestType of a standard request (type 0)."""
    return direction | recipient


@dataclass(frozen=True)
class Expect:
    """What the device must do: send ``data`` (``kind`` "data"), complete a request without a
    data stage ("ack"), STALL it, at the data or the status stage ("stall"), or anything as
    long as it goes on answering ("any")."""

    kind: Literal["data", "ack", "stall", "any"]
    data: bytes = b""

    def __str__(self) -> str:
        return self.data.hex(" ") if self.kind == "data" else self.kind.upper()


ACK, STALL, ANY = Expect("ack"), Expect("stall"), Expect("any")


def data(raw: bytes) -> Expect:
    return Expect("data", bytes(raw))


@dataclass(frozen=True)
class Case:
    """One control transfer and the answer it must get.

    Attributes
    ----------
    state: str
        The device state the request is made in.
    request_type, request, value, index, length: int
        The SETUP packet (``length`` is wLength; an OUT data stage sends ``out_data``).
    expect: Expect
        The answer required.
    why: str
        The section that requires it.
    leaves: str
        The state the device is in after an accepted request (its own for most).
    then: tuple[Case, ...]
        Rows run right after an accepted one, checking its effect.
    """

    state: State
    request_type: int
    request: int
    value: int
    index: int
    length: int
    expect: Expect
    why: str
    out_data: bytes = b""
    leaves: State | None = None
    then: tuple[Case, ...] = field(default=(), repr=False)

    def __str__(self) -> str:
        name = Req.NAMES.get(self.request, f"request {self.request:#04x}")
        return (f"{self.state}: {name} type={self.request_type:#04x} wValue={self.value:#06x} "
                f"wIndex={self.index:#06x} wLength={self.length} -> {self.expect}")


@dataclass(frozen=True)
class Chapter9Device:
    """What the matrix needs to know of a device.

    Attributes
    ----------
    descriptors: dict[tuple[int, int], bytes]
        The device's own descriptors, by (type, index): device, configuration, strings (and
        BOS at SuperSpeed). What a high-speed device must add, the matrix derives from them
        (:meth:`required_descriptors`).
    endpoints: tuple[int, ...]
        The bulk endpoint addresses of configuration 1, interface 0 (alternate setting 0).
    device_status: bytes
        GET_STATUS(device) while no feature is set.
    superspeed: bool
        USB 3.2 rules (BOS, the link power features, FUNCTION_SUSPEND, SET_SEL).
    full_speed_packet: int
        The bulk endpoints' wMaxPacketSize at full speed (a high-speed device's other-speed
        configuration).
    """

    descriptors: dict[tuple[int, int], bytes]
    endpoints: tuple[int, ...]
    device_status: bytes = b"\0\0"
    superspeed: bool = False
    full_speed_packet: int = 64

    def required_descriptors(self) -> dict[tuple[int, int], bytes]:
        """Every descriptor GET_DESCRIPTOR must return: the device's own, and for a high-speed
        device the device qualifier (§9.6.2: the device descriptor's fields that do not change
        with speed) and the other-speed configuration of each configuration (§9.6.4: the same
        descriptors, its bulk endpoints with their full-speed packet size)."""
        required = dict(self.descriptors)
        if self.superspeed:
            return required
        device = self.descriptors[Desc.DEVICE, 0]
        required[Desc.DEVICE_QUALIFIER, 0] = struct.pack(
            "<BBHBBBBBB", 10, Desc.DEVICE_QUALIFIER, *struct.unpack_from("<H", device, 2),
            *device[4:8], device[17], 0)
        for (kind, number), raw in self.descriptors.items():
            if kind != Desc.CONFIGURATION:
                continue
            other, offset = bytearray(raw), 0
            other[1] = Desc.OTHER_SPEED_CONFIGURATION
            while offset < len(other):
                if other[offset + 1] == Desc.ENDPOINT and other[offset + 3] & 3 == 2:  # bulk
                    struct.pack_into("<H", other, offset + 4, self.full_speed_packet)
                offset += other[offset]
            required[Desc.OTHER_SPEED_CONFIGURATION, number] = bytes(other)
        return required

    @property
    def control_max_packet(self) -> int:
        device = self.descriptors[Desc.DEVICE, 0]
        return 1 << device[7] if self.superspeed else device[7]

    def absent_endpoints(self) -> tuple[int, ...]:
        """Endpoint addresses the device does not have: the other direction of each of its
        endpoints, and the next number up."""
        have = set(self.endpoints) | {0x00, 0x80}
        numbers = {address & 0x0F for address in have}
        candidates = [address ^ 0x80 for address in self.endpoints]
        candidates += [max(numbers) + 1, 0x80 | (max(numbers) + 1), 0x8F]
        return tuple(address for address in dict.fromkeys(candidates) if address not in have)
