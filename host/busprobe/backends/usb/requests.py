"""busprobe's vendor requests on endpoint 0: pattern, IN transfer length, info, telemetry.

The encoding (:mod:`busprobe.protocol.usb2`) and the telemetry decoding, written once and used by
:class:`~busprobe.backends.usb.transport.UsbDeviceTransport` over any platform's control
transfer (libusb on a board, the ULPI or PIPE host model in simulation). The USB 2.0 and the
SuperSpeed device answer the same requests; GET_INFO's magic says which one this is
(:data:`PROTOCOLS`), and its telemetry block is decoded with that protocol's layout.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from types import ModuleType

from ...protocol import usb2, usb3
from ...protocol.names import Direction
from ...protocol.patterns import Pattern
from ...transport import InvalidRequest, Telemetry, TransportError

__all__ = ["Control", "VENDOR_IN", "VENDOR_OUT", "VendorRequests", "decode_telemetry",
           "PROTOCOLS"]

#: The device protocols, by GET_INFO magic. Both INFO answers start with magic, version and max
#: packet size (:data:`busprobe.protocol.usb2.INFO_HEAD_FORMAT`), so that much tells them apart.
PROTOCOLS: dict[int, ModuleType] = {usb2.MAGIC: usb2, usb3.MAGIC: usb3}

#: ``control(request_type, request, value, index, length_or_data) -> bytes``: one control
#: transfer; IN requests pass a length and get the data back, OUT requests pass their data.
Control = Callable[[int, int, int, int, "int | bytes"], bytes]

#: bmRequestType: vendor, device recipient (USB 2.0 §9.3.1).
VENDOR_IN = 0xC0
VENDOR_OUT = 0x40


def decode_telemetry(data: bytes, protocol: ModuleType = usb2,
                     features: usb2.Feature | None = None) -> Telemetry:
    """A device's telemetry block, in ``protocol``'s layout (:mod:`busprobe.protocol.usb2` or
    :mod:`~busprobe.protocol.usb3`), as Telemetry.

    ``features`` are the optional parts a USB 2.0 bitstream has, as its GET_INFO said: the
    words of a group it leaves out (:data:`~busprobe.protocol.usb2.FEATURE_WORDS`) read 0 on
    the wire and are left out of ``raw``, so no report shows a 0 for something not counted.
    None keeps every word of the layout (the SuperSpeed one has no optional groups).

    Device-timed figures come from the protocol's whole-interval window (``device_window``):
    the bytes moved between the end of the first and the end of the second-to-last microframe
    (USB 2.0) or bus interval (SuperSpeed, ITPs) with data, over those 125 µs intervals. A
    direction whose data touched fewer than three intervals has no window, and no device
    figure: a partial interval cannot be timed without reading above the bus's limit.
    ``device_bytes`` is every byte the device counted (for the lost-data check).
    """
    raw = protocol.unpack_telemetry(data)
    if features is not None and protocol is usb2:
        raw = {name: raw[name] for name in usb2.present_words(features)}
    seconds: dict[str, float] = {}
    window_bytes: dict[str, int] = {}
    for direction in (Direction.IN, Direction.OUT):
        window = protocol.device_window(raw, direction)
        if window is not None:
            window_bytes[direction], seconds[direction] = window
    offset = raw["first_error_offset"]
    return Telemetry(
        raw=dict(raw), device_seconds=seconds,
        device_bytes={"in": raw["in_bytes"], "out": raw["out_bytes"]},
        window_bytes=window_bytes,
        errors={"out": raw["pattern_errors"]},
        first_error_offset={"out": None if offset == protocol.NO_ERROR_OFFSET else offset})


class VendorRequests:
    """The busprobe USB device's vendor requests over any control-transfer path.

    Parameters
    ----------
    control : Control
        Performs one control transfer on endpoint 0.
    name : str
        Prefix for error messages (the device selector).

    Attributes
    ----------
    protocol : module
        The protocol the device speaks (:mod:`busprobe.protocol.usb2` or ``usb3``), as its
        GET_INFO said (``usb2`` until :meth:`check_info`).
    info : dict
        The device's whole INFO answer: for USB 2.0 with ``features``, for SuperSpeed with
        burst, OUT buffers and clock.
    features : usb2.Feature or None
        The optional parts of a USB 2.0 bitstream (BOT, packet-shape and receive-drop counters)
        as its INFO said; None until :meth:`check_info` (or as a simulation's design preset
        it); none for a SuperSpeed device, which has its own fixed set.
    """

    def __init__(self, control: Control, *, name: str = "usb2 device") -> None:
        self._control = control
        self.name = name
        self.max_packet_size = usb2.MAX_PACKET_SIZE
        self.protocol: ModuleType = usb2
        self.info: dict[str, int] = {}
        self.features: usb2.Feature | None = None
        self._in_transfer: tuple[int, bool] | None = None

    def check_info(self) -> int:
        """Check GET_INFO (magic, protocol version), remember the protocol it names and the
        features (a SuperSpeed device before version 3 names none); return the device's max
        packet size."""
        # A USB 2.0 answer's length: the common head, then the USB 2.0 or SuperSpeed rest.
        data = bytes(self._control(VENDOR_IN, usb2.Request.GET_INFO, 0, 0, usb2.INFO_SIZE))
        try:
            magic, version, max_packet = struct.unpack_from(usb2.INFO_HEAD_FORMAT, data)
        except struct.error:
            magic = version = max_packet = 0
        protocol = PROTOCOLS.get(magic)
        # A protocol may name older versions it still drives (usb3: a version 1 device has no
        # loopback, the transport asks it for none).
        known = getattr(protocol, "KNOWN_VERSIONS", (getattr(protocol, "PROTOCOL_VERSION", 0),))
        if protocol is None or version not in known:
            expected = ", ".join(f"{p.MAGIC:#x} version {p.PROTOCOL_VERSION}"
                                 for p in PROTOCOLS.values())
            raise InvalidRequest(f"{self.name}: not a busprobe USB device of a known protocol "
                                 f"(magic {magic:#x}, version {version}; known: {expected}); "
                                 f"flash the matching bitstream")
        if protocol is usb3:
            data = bytes(self._control(VENDOR_IN, usb3.Request.GET_INFO, 0, 0, usb3.INFO_SIZE))
        try:
            self.info = protocol.unpack_info(data)
        except ValueError as exc:
            raise TransportError(f"{self.name}: {exc}") from None
        self.features = self.info["features"]
        self.protocol = protocol
        self.max_packet_size = max_packet
        return max_packet

    def set_pattern(self, pattern: Pattern) -> None:
        self._control(VENDOR_OUT, usb2.Request.SET_PATTERN, int(pattern), 0, b"")

    def clear_telemetry(self) -> None:
        self._control(VENDOR_OUT, usb2.Request.CLEAR_TELEMETRY, 0, 0, b"")

    def read_telemetry(self) -> Telemetry:
        data = self._control(VENDOR_IN, usb2.Request.GET_TELEMETRY, 0, 0,
                             self.protocol.TELEMETRY_SIZE)
        try:
            return decode_telemetry(bytes(data), self.protocol, self.features)
        except ValueError as exc:
            raise TransportError(f"{self.name}: {exc}") from None

    def set_data_mode(self, mode: usb2.DataMode) -> None:
        """What the bulk endpoints carry (restarts both pattern streams on the device)."""
        self._control(VENDOR_OUT, usb2.Request.SET_DATA_MODE, int(mode), 0, b"")

    def set_in_transfer(self, length: int, zlp: bool = False) -> None:
        """Make the device end each IN transfer after ``length`` bytes (sent only on change)."""
        if self._in_transfer == (length, zlp):
            return
        w_value, w_index = usb2.encode_in_transfer(length, zlp)
        self._control(VENDOR_OUT, usb2.Request.SET_IN_TRANSFER, w_value, w_index, b"")
        self._in_transfer = (length, zlp)

    def forget_state(self) -> None:
        """The device was reset: the next :meth:`set_in_transfer` is sent again."""
        self._in_transfer = None
