"""The usbredir wire format (USB network redirection protocol, version 0.7), written from its spec.

A usbredir connection joins a *usb-host* (the side that has the device: here, the simulated
gateware) and a *usb-guest* (the side that uses it: QEMU's ``usb-redir`` device). Every packet
is a header and a type-specific header, then data; all integers little-endian, all structs
packed. The header is ``type u32, length u32, id`` where ``length`` counts everything after the
header and ``id`` is 32 bits until both hellos carried :attr:`Cap.IDS_64BIT`, 64 bits after.

Some type-specific headers grow with negotiated capabilities (both ends must advertise one for it
to count): ``device_connect`` gains ``device_version_bcd`` with
:attr:`Cap.CONNECT_DEVICE_VERSION`, ``ep_info`` gains ``max_packet_size`` with
:attr:`Cap.EP_INFO_MAX_PACKET_SIZE`, ``bulk_packet`` gains ``length_high`` with
:attr:`Cap.BULK_LENGTH_32BIT`. :class:`Negotiated` holds that state and sizes every header.

Only what a device server needs is here; other packet types are read past by their length.
The reader trusts nothing a peer sends: a header claiming more than its type can carry (a
4 GiB length), a stream that does not start with the hello or holds a second one, is a
:class:`ProtocolError` before anything is stored for it (docs/DESIGN.md §7.1).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field

__all__ = ["PacketType", "Status", "Cap", "Speed", "TransferType", "Negotiated", "Packet",
           "PacketReader", "ProtocolError", "max_length", "bulk_length", "MAX_BULK_DATA",
           "MAX_CONTROL_DATA", "HELLO_VERSION_LEN", "ENDPOINT_SLOTS", "endpoint_slot",
           "CONTROL", "BULK_16", "BULK_32", "CONNECT", "CONNECT_NO_VERSION", "INTERFACE_INFO",
           "CONFIGURATION_STATUS", "ALT_SETTING_STATUS", "SET_CONFIGURATION", "SET_ALT_SETTING",
           "GET_ALT_SETTING", "ALLOC_BULK_STREAMS", "FREE_BULK_STREAMS", "BULK_STREAMS_STATUS",
           "endpoints_of"]


class PacketType(enum.IntEnum):
    """``usb_redir_header.type``: control packets below 100, data packets from 100."""

    HELLO = 0
    DEVICE_CONNECT = 1
    DEVICE_DISCONNECT = 2
    RESET = 3
    INTERFACE_INFO = 4
    EP_INFO = 5
    SET_CONFIGURATION = 6
    GET_CONFIGURATION = 7
    CONFIGURATION_STATUS = 8
    SET_ALT_SETTING = 9
    GET_ALT_SETTING = 10
    ALT_SETTING_STATUS = 11
    START_ISO_STREAM = 12
    STOP_ISO_STREAM = 13
    ISO_STREAM_STATUS = 14
    START_INTERRUPT_RECEIVING = 15
    STOP_INTERRUPT_RECEIVING = 16
    INTERRUPT_RECEIVING_STATUS = 17
    ALLOC_BULK_STREAMS = 18
    FREE_BULK_STREAMS = 19
    BULK_STREAMS_STATUS = 20
    CANCEL_DATA_PACKET = 21
    FILTER_REJECT = 22
    FILTER_FILTER = 23
    DEVICE_DISCONNECT_ACK = 24
    START_BULK_RECEIVING = 25
    STOP_BULK_RECEIVING = 26
    BULK_RECEIVING_STATUS = 27
    CONTROL_PACKET = 100
    BULK_PACKET = 101
    ISO_PACKET = 102
    INTERRUPT_PACKET = 103
    BUFFERED_BULK_PACKET = 104


class Status(enum.IntEnum):
    """Result of a request (``status`` fields)."""

    SUCCESS = 0
    CANCELLED = 1
    INVAL = 2
    IOERROR = 3
    STALL = 4
    TIMEOUT = 5
    BABBLE = 6


class Cap(enum.IntEnum):
    """Capability bit numbers of the hello's capability words."""

    BULK_STREAMS = 0
    CONNECT_DEVICE_VERSION = 1
    FILTER = 2
    DEVICE_DISCONNECT_ACK = 3
    EP_INFO_MAX_PACKET_SIZE = 4
    IDS_64BIT = 5
    BULK_LENGTH_32BIT = 6
    BULK_RECEIVING = 7


class Speed(enum.IntEnum):
    LOW = 0
    FULL = 1
    HIGH = 2
    SUPER = 3
    UNKNOWN = 255


class TransferType(enum.IntEnum):
    """As in endpoint descriptors' bmAttributes (USB 2.0 Table 9-13), plus "no endpoint"."""

    CONTROL = 0
    ISO = 1
    BULK = 2
    INTERRUPT = 3
    INVALID = 255


#: Bytes of the hello's NUL-padded version string.
HELLO_VERSION_LEN = 64
#: interface_info/ep_info arrays: one slot per endpoint address (OUT 0-15, IN 16-31).
ENDPOINT_SLOTS = 32

_HEADER_32 = struct.Struct("<III")
_HEADER_64 = struct.Struct("<IIQ")
#: endpoint, request, requesttype, status, value, index, length
CONTROL = struct.Struct("<BBBBHHH")
#: endpoint, status, length, stream_id (16-bit lengths) ...
BULK_16 = struct.Struct("<BBHI")
#: ... plus length_high (:attr:`Cap.BULK_LENGTH_32BIT`)
BULK_32 = struct.Struct("<BBHIH")
#: speed, class, subclass, protocol, vendor, product, bcdDevice
CONNECT = struct.Struct("<BBBBHHH")
CONNECT_NO_VERSION = struct.Struct("<BBBBHH")
#: interface_count, then interface, class, subclass, protocol arrays of 32
INTERFACE_INFO = struct.Struct(f"<I{ENDPOINT_SLOTS}s{ENDPOINT_SLOTS}s{ENDPOINT_SLOTS}s"
                               f"{ENDPOINT_SLOTS}s")
CONFIGURATION_STATUS = struct.Struct("<BB")  # status, configuration
ALT_SETTING_STATUS = struct.Struct("<BBB")  # status, interface, alt
SET_CONFIGURATION = struct.Struct("<B")
SET_ALT_SETTING = struct.Struct("<BB")  # interface, alt
GET_ALT_SETTING = struct.Struct("<B")  # interface
#: endpoints (a mask of :func:`endpoint_slot` bits), no_streams
ALLOC_BULK_STREAMS = struct.Struct("<II")
FREE_BULK_STREAMS = struct.Struct("<I")  # endpoints
BULK_STREAMS_STATUS = struct.Struct("<IIB")  # endpoints, no_streams, status


def bulk_length(fields: tuple) -> int:
    """Length of a decoded bulk_packet header (16-bit, or 32-bit with ``length_high``)."""
    return fields[2] | (fields[4] << 16 if len(fields) > 4 else 0)


def endpoint_slot(address: int) -> int:
    """Index of endpoint ``address`` in ep_info's arrays (IN endpoints from 16)."""
    return ((address & 0x80) >> 3) | (address & 0x0F)


def endpoints_of(mask: int) -> list[int]:
    """The endpoint addresses of an ``endpoints`` mask (bit :func:`endpoint_slot` each)."""
    return [(slot & 0x0F) | (0x80 if slot & 0x10 else 0)
            for slot in range(ENDPOINT_SLOTS) if mask >> slot & 1]


@dataclass
class Negotiated:
    """What both ends agreed on; sizes headers. Before the peer's hello nothing is agreed.

    Parameters
    ----------
    ours : frozenset of Cap
        Capabilities this end advertises in its hello.
    """

    ours: frozenset[Cap]
    peer: frozenset[Cap] | None = None
    peer_version: str = ""

    def has(self, cap: Cap) -> bool:
        return self.peer is not None and cap in self.ours and cap in self.peer

    @property
    def header(self) -> struct.Struct:
        return _HEADER_64 if self.has(Cap.IDS_64BIT) else _HEADER_32

    @property
    def bulk(self) -> struct.Struct:
        return BULK_32 if self.has(Cap.BULK_LENGTH_32BIT) else BULK_16

    @property
    def connect(self) -> struct.Struct:
        return CONNECT if self.has(Cap.CONNECT_DEVICE_VERSION) else CONNECT_NO_VERSION

    # -- encoding ---------------------------------------------------------------------------

    def encode(self, kind: PacketType, packet_id: int, body: bytes = b"",
               data: bytes = b"") -> bytes:
        """One packet: header, type-specific header ``body``, then ``data``."""
        return self.header.pack(int(kind), len(body) + len(data), packet_id) + body + data

    def hello(self, version: str) -> bytes:
        caps = sum(1 << int(cap) for cap in self.ours)
        text = version.encode()[:HELLO_VERSION_LEN - 1].ljust(HELLO_VERSION_LEN, b"\0")
        return self.encode(PacketType.HELLO, 0, text + struct.pack("<I", caps))

    def bulk_body(self, endpoint: int, status: int, length: int, stream_id: int = 0) -> bytes:
        if self.has(Cap.BULK_LENGTH_32BIT):
            return BULK_32.pack(endpoint, status, length & 0xFFFF, stream_id, length >> 16)
        return BULK_16.pack(endpoint, status, length, stream_id)

    def ep_info(self, types: list[int], intervals: list[int], interfaces: list[int],
                max_packet_sizes: list[int], max_streams: list[int] | None = None) -> bytes:
        """``ep_info``: ``max_packet_sizes`` with :attr:`Cap.EP_INFO_MAX_PACKET_SIZE`, then
        ``max_streams`` (streams each endpoint offers, 0: none) with
        :attr:`Cap.BULK_STREAMS`."""
        body = bytes(types) + bytes(intervals) + bytes(interfaces)
        if self.has(Cap.EP_INFO_MAX_PACKET_SIZE):
            body += struct.pack(f"<{ENDPOINT_SLOTS}H", *max_packet_sizes)
        if self.has(Cap.BULK_STREAMS):
            body += struct.pack(f"<{ENDPOINT_SLOTS}I", *(max_streams or [0] * ENDPOINT_SLOTS))
        return self.encode(PacketType.EP_INFO, 0, body)


@dataclass
class Packet:
    """One decoded packet. ``fields`` is the type-specific header as a tuple (its struct's order),
    ``data`` what follows it."""

    type: int
    id: int
    fields: tuple = ()
    data: bytes = b""
    raw: bytes = field(default=b"", repr=False)

    @property
    def kind(self) -> PacketType | None:
        try:
            return PacketType(self.type)
        except ValueError:
            return None


class ProtocolError(ValueError):
    """The peer broke the protocol's framing or order (``str()`` says how); the stream cannot
    be trusted after it, so the connection ends."""


#: Most bytes a bulk packet may carry: one transfer. Linux's usbfs holds at most 16 MiB of
#: transfer buffers by default (``usbfs_memory_mb``), so no guest driver sends more in one.
MAX_BULK_DATA = 16 << 20
#: Most bytes a control transfer's data stage may have (``wLength`` is 16 bits).
MAX_CONTROL_DATA = 0xFFFF
#: Most capability words a hello may carry (32 would cover 1,024 capabilities; 7 exist).
MAX_CAPABILITY_WORDS = 32
#: Most bytes any other packet may claim: every other type-specific header is under 200.
MAX_OTHER = 4096


def max_length(kind: int, negotiated: Negotiated) -> int:
    """The most bytes after the header a packet of type ``kind`` may claim, checked before a
    byte of it is stored: a header claiming 4 GiB is refused, not waited for."""
    if kind == PacketType.HELLO:
        return HELLO_VERSION_LEN + 4 * MAX_CAPABILITY_WORDS
    if kind == PacketType.CONTROL_PACKET:
        return CONTROL.size + MAX_CONTROL_DATA
    if kind in (PacketType.BULK_PACKET, PacketType.BUFFERED_BULK_PACKET):
        return BULK_32.size + MAX_BULK_DATA
    if kind in (PacketType.ISO_PACKET, PacketType.INTERRUPT_PACKET):
        return MAX_OTHER + MAX_CONTROL_DATA  # not served here, but framed: read past
    return MAX_OTHER


class PacketReader:
    """Turns a byte stream into :class:`Packet` s; call :meth:`feed`, then :meth:`packets`.

    A hello updates ``negotiated`` at once, so the packets after it in the same bytes are read
    with the agreed header size. The stream must start with one hello and hold no second one
    (the header size would change under the reader), and no packet may claim more than
    :func:`max_length` allows: each is a :class:`ProtocolError` raised as soon as its header
    is read, so the bytes stored never exceed one packet's bound plus one :meth:`feed`.
    """

    def __init__(self, negotiated: Negotiated) -> None:
        self.negotiated = negotiated
        self._buffer = bytearray()
        self.hello_seen = False

    def feed(self, data: bytes) -> None:
        self._buffer += data

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as packets."""
        return len(self._buffer)

    def packets(self) -> list[Packet]:
        out = []
        while True:
            header = self.negotiated.header
            if len(self._buffer) < header.size:
                return out
            kind, length, packet_id = header.unpack_from(self._buffer)
            self._check(kind, length)
            if len(self._buffer) < header.size + length:
                return out
            raw = bytes(self._buffer[header.size:header.size + length])
            del self._buffer[:header.size + length]
            packet = self._decode(kind, packet_id, raw)
            if packet.kind == PacketType.HELLO:
                self._hello(packet)
            out.append(packet)

    def _check(self, kind: int, length: int) -> None:
        name = PacketType(kind).name.lower() if kind in PacketType._value2member_map_ \
            else f"type {kind}"
        if self.hello_seen and kind == PacketType.HELLO:
            raise ProtocolError("a second hello (the first one fixed the header size)")
        if not self.hello_seen and kind != PacketType.HELLO:
            raise ProtocolError(f"{name} packet before the hello")
        bound = max_length(kind, self.negotiated)
        if length > bound:
            raise ProtocolError(f"{name} packet claims {length} bytes, more than the {bound} "
                                "it may carry")

    def _hello(self, packet: Packet) -> None:
        self.hello_seen = True
        version = packet.raw[:HELLO_VERSION_LEN].split(b"\0", 1)[0].decode(errors="replace")
        words = packet.raw[HELLO_VERSION_LEN:]
        bits = int.from_bytes(words[:4], "little") if len(words) >= 4 else 0
        self.negotiated.peer = frozenset(cap for cap in Cap if bits >> int(cap) & 1)
        self.negotiated.peer_version = version

    def _decode(self, kind: int, packet_id: int, raw: bytes) -> Packet:
        shape = {PacketType.CONTROL_PACKET: CONTROL, PacketType.BULK_PACKET: self.negotiated.bulk,
                 PacketType.SET_CONFIGURATION: SET_CONFIGURATION,
                 PacketType.SET_ALT_SETTING: SET_ALT_SETTING,
                 PacketType.GET_ALT_SETTING: GET_ALT_SETTING,
                 PacketType.DEVICE_CONNECT: self.negotiated.connect,
                 PacketType.INTERFACE_INFO: INTERFACE_INFO,
                 PacketType.CONFIGURATION_STATUS: CONFIGURATION_STATUS,
                 PacketType.ALT_SETTING_STATUS: ALT_SETTING_STATUS,
                 PacketType.ALLOC_BULK_STREAMS: ALLOC_BULK_STREAMS,
                 PacketType.FREE_BULK_STREAMS: FREE_BULK_STREAMS,
                 PacketType.BULK_STREAMS_STATUS: BULK_STREAMS_STATUS}.get(kind)  # type: ignore
        if shape is None or len(raw) < shape.size:
            return Packet(kind, packet_id, (), b"", raw)
        return Packet(kind, packet_id, shape.unpack_from(raw), raw[shape.size:], raw)
