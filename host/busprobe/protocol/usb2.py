"""USB 2.0 HS device contract: identifiers, vendor requests and the telemetry block.

The gateware's request handler switches on :class:`Request`, packs :data:`TELEMETRY` in this order;
the host and the simulation decode it with :func:`unpack_telemetry`.
"""

from __future__ import annotations

import enum
import struct

from .patterns import NO_ERROR_OFFSET
from .telemetry import TelemetryLayout

__all__ = [
    "VID", "PID", "MANUFACTURER", "PRODUCT", "SERIAL",
    "EP_IN", "EP_OUT", "MAX_PACKET_SIZE", "CLOCK_HZ", "PROTOCOL_VERSION", "MAGIC",
    "Request", "DataMode", "IN_ZLP_FLAG", "encode_in_transfer", "decode_in_transfer",
    "TELEMETRY", "TELEMETRY_WORDS", "UFRAMES_PER_SECOND", "TELEMETRY_SIZE", "NO_ERROR_OFFSET",
    "unpack_telemetry", "pack_telemetry", "device_window", "INFO_FORMAT", "INFO_SIZE",
    "INFO_HEAD_FORMAT", "INFO_HEAD_SIZE", "pack_info", "unpack_info",
    "Feature", "FEATURE_WORDS", "NO_FEATURES", "ALL_FEATURES", "KNOWN_FEATURES", "present_words",
    "data_modes",
    "FULL_SPEED_MAX_PACKET_SIZE", "CONTROL_MAX_PACKET_SIZE",
]

VID = 0x1209  # pid.codes
PID = 0x0001  # pid.codes test PID, until one is allocated
MANUFACTURER = "busprobe"
PRODUCT = "busprobe USB2 HS"
SERIAL = "BP2-0001"

EP_IN = 0x81  # bulk IN, always-valid source
EP_OUT = 0x02  # bulk OUT, always-ready sink
MAX_PACKET_SIZE = 512
#: The bulk endpoints' wMaxPacketSize at full speed (the most USB 2.0 §5.8.3 allows there), as
#: the OTHER_SPEED_CONFIGURATION descriptor of the high-speed device describes them.
FULL_SPEED_MAX_PACKET_SIZE = 64
#: EP0's bMaxPacketSize0 (the only value USB 2.0 §5.5.3 allows at high speed).
CONTROL_MAX_PACKET_SIZE = 64
CLOCK_HZ = 60_000_000  # ULPI clock; the telemetry cycle counters count it

MAGIC = 0x3255_5042  # b"BPU2" little-endian
# 2: the whole-microframe timing window words; 3: dropped packets; 4: GET_INFO names features
PROTOCOL_VERSION = 4


class Request(enum.IntEnum):
    """Vendor requests (bmRequestType type=vendor, recipient=device)."""

    #: IN, :data:`INFO_SIZE` bytes: magic, protocol version, max packet size, :class:`Feature`
    #: bits (:data:`INFO_FORMAT`).
    GET_INFO = 0x00
    #: IN, :data:`TELEMETRY_SIZE` bytes, laid out as :data:`TELEMETRY`.
    GET_TELEMETRY = 0x01
    #: OUT, no data: zero every telemetry counter.
    CLEAR_TELEMETRY = 0x02
    #: OUT, no data, ``wValue`` = :class:`~busprobe.protocol.patterns.Pattern`: restart both the
    #: IN source and the OUT checker at the start of that pattern (buffered IN data is discarded).
    SET_PATTERN = 0x03
    #: OUT, no data: ``wValue | wIndex << 16`` = IN transfer length
    #: (see :func:`encode_in_transfer`). Takes effect at the next IN packet, which starts a new
    #: transfer; the IN pattern stream itself continues (it is not restarted).
    SET_IN_TRANSFER = 0x04
    #: OUT, no data, ``wValue`` = :class:`DataMode`: what the bulk endpoints carry. Restarts both
    #: pattern streams like SET_PATTERN and discards data buffered in either direction (SET_PATTERN
    #: does too): the first IN packet after it is the new mode's.
    SET_DATA_MODE = 0x05


class DataMode(enum.IntEnum):
    """What the bulk endpoints carry (:data:`Request.SET_DATA_MODE`)."""

    #: IN streams the pattern, OUT is checked against it (the default after reset).
    PATTERN = 0
    #: OUT data comes back on IN, byte for byte and packet for packet (both directions at once).
    LOOPBACK = 1
    #: USB mass storage Bulk-Only Transport framing: CBW on OUT, then the data, then a CSW on IN.
    BOT = 2
    #: Linux gadget zero's source/sink with ``pattern=1``, the data Linux's usbtest checks:
    #: IN sends :func:`~busprobe.protocol.patterns.mod63_bytes` in full packets (byte ``i`` of
    #: each packet is ``i % 63``); OUT bytes are taken and not checked (``pattern_errors``
    #: stays as it is). The IN packets are cut every :data:`MAX_PACKET_SIZE` bytes of the
    #: source: with SET_IN_TRANSFER framing a transfer whose length is not a multiple of it
    #: shifts the packets after it (SET_IN_TRANSFER 0 before usbtest).
    MOD63 = 3


class Feature(enum.IntFlag):
    """Optional parts of the gateware; GET_INFO says which a bitstream has.

    The default build leaves them out to stay as small as a stock LUNA device can be; the
    ``usb2-full`` design has them all. A telemetry word of a missing group reads 0 on the wire
    and is left out of what the host reports (:func:`present_words`): "not counted" is not 0.
    """

    #: :attr:`DataMode.BOT`: the mass-storage Bulk-Only Transport framer.
    BOT = 1
    #: The packet-shape counters: short packets and ZLPs each way, PINGs.
    PACKET_SHAPES = 2
    #: The receive-side drop counters: every packet received, the ones dropped and why, and
    #: OUT duplicates.
    RX_DROPS = 4
    #: The storage personality (``usb2-storage``, issue 28): the bulk endpoints carry a SCSI
    #: null disk (Bulk-Only Transport), not busprobe's streams, whatever the data mode.
    STORAGE = 8


#: The default build: no optional part.
NO_FEATURES = Feature(0)
ALL_FEATURES = Feature.BOT | Feature.PACKET_SHAPES | Feature.RX_DROPS
#: Every bit this host can decode (the storage bit names a personality, not an optional part
#: of the probe, so ``usb2-full`` does not have it).
KNOWN_FEATURES = ALL_FEATURES | Feature.STORAGE

#: Telemetry words counted only by a bitstream with the feature.
FEATURE_WORDS: dict[Feature, tuple[str, ...]] = {
    Feature.PACKET_SHAPES: ("in_short", "in_zlps", "out_short", "out_zlps", "pings"),
    Feature.RX_DROPS: ("rx_packets", "rx_bad_pids", "rx_malformed", "rx_crc_errors",
                       "rx_foreign", "out_duplicates"),
}

INFO_FORMAT = "<IHHI"  # magic, protocol version, max packet size, Feature bits
INFO_SIZE = struct.calcsize(INFO_FORMAT)
#: The head every busprobe USB device's INFO starts with, USB 2.0 or SuperSpeed (whose INFO
#: goes on differently, :data:`busprobe.protocol.usb3.INFO_FORMAT`): magic, protocol version,
#: max packet size. Its magic says which protocol the rest follows.
INFO_HEAD_FORMAT = "<IHH"
INFO_HEAD_SIZE = struct.calcsize(INFO_HEAD_FORMAT)


def pack_info(features: Feature = NO_FEATURES) -> bytes:
    """The GET_INFO answer of a bitstream with ``features`` (for models and tests)."""
    return struct.pack(INFO_FORMAT, MAGIC, PROTOCOL_VERSION, MAX_PACKET_SIZE, int(features))


def unpack_info(data: bytes) -> dict[str, int]:
    """Decode GET_INFO; raises ValueError if it is not this protocol's (``features`` as a
    :class:`Feature`; bits this host does not know are dropped)."""
    if len(data) != INFO_SIZE:
        raise ValueError(f"INFO is {len(data)} bytes, expected {INFO_SIZE}")
    magic, version, mps, features = struct.unpack(INFO_FORMAT, data)
    if magic != MAGIC:
        raise ValueError(f"INFO magic {magic:#010x} is not {MAGIC:#010x}")
    return {"magic": magic, "version": version, "max_packet_size": mps,
            "features": Feature(features & KNOWN_FEATURES)}

#: Bit of the 32-bit SET_IN_TRANSFER argument asking for a ZLP after a transfer whose length
#: is a multiple of the max packet size.
IN_ZLP_FLAG = 1 << 31


def encode_in_transfer(length: int, zlp: bool = False) -> tuple[int, int]:
    """``(wValue, wIndex)`` for SET_IN_TRANSFER.

    ``length`` 0 makes the source send full packets forever; otherwise it ends every ``length``
    bytes with a short packet (or, with ``zlp``, a zero-length packet when ``length`` is a multiple
    of :data:`MAX_PACKET_SIZE`), so the host sees transfer boundaries exactly where it asked.
    """
    if not 0 <= length < IN_ZLP_FLAG:
        raise ValueError(f"IN transfer length {length} out of range")
    arg = length | (IN_ZLP_FLAG if zlp else 0)
    return arg & 0xFFFF, arg >> 16


def decode_in_transfer(w_value: int, w_index: int) -> tuple[int, bool]:
    arg = w_value | (w_index << 16)
    return arg & ~IN_ZLP_FLAG, bool(arg & IN_ZLP_FLAG)


#: Telemetry words, in order; every word is an unsigned 32-bit little-endian counter that wraps.
#: (name, description). Counters are zeroed by CLEAR_TELEMETRY; ``first_error_offset`` and
#: ``pattern_errors`` are also restarted by SET_PATTERN.
TELEMETRY: tuple[tuple[str, str], ...] = (
    ("magic", "constant MAGIC, identifies the layout"),
    ("version", "constant PROTOCOL_VERSION"),
    ("in_bytes", "payload bytes sent on the IN endpoint and ACKed"),
    ("in_packets", "data packets sent on the IN endpoint and ACKed"),
    ("in_short", "short (non-zero, < max packet size) packets sent on IN"),
    ("in_zlps", "zero-length packets sent on IN"),
    ("in_naks", "IN tokens answered with NAK (the source was not ready)"),
    ("in_tokens", "IN tokens addressed to the IN endpoint"),
    ("in_tokens_max_uframe", "most IN tokens seen in one microframe"),
    ("out_bytes", "payload bytes received on the OUT endpoint and ACKed"),
    ("out_packets", "data packets received on the OUT endpoint and ACKed"),
    ("out_short", "short (non-zero) packets received on OUT"),
    ("out_zlps", "zero-length packets received on OUT"),
    ("out_naks", "OUT/PING tokens answered with NAK (the sink was full)"),
    ("out_nyets", "OUT packets answered with NYET"),
    ("out_tokens", "OUT tokens addressed to the OUT endpoint"),
    ("out_tokens_max_uframe", "most OUT tokens seen in one microframe"),
    ("pings", "PING tokens addressed to the OUT endpoint"),
    ("sofs", "start-of-frame packets seen"),
    ("data_uframes", "microframes in which at least one data packet moved on either endpoint"),
    ("pattern_errors", "32-bit words received on OUT that did not match the pattern"),
    ("first_error_offset", "OUT stream byte offset of the first mismatch, NO_ERROR_OFFSET if none"),
    ("in_first_cycle", "cycle counter when the first IN data packet started"),
    ("in_last_cycle", "cycle counter when the last IN data packet was ACKed"),
    ("out_first_cycle", "cycle counter when the first OUT data packet started"),
    ("out_last_cycle", "cycle counter when the last OUT data packet was ACKed"),
    # The timing window: whole microframes only, from the end of the first microframe that moved
    # data in that direction to the end of the second-to-last one (the first and the last are
    # partly idle). Bytes / (microframes x 125 us) over it can never exceed what the bus allows.
    ("in_window_start_bytes", "in_bytes at the end of the first microframe with IN data"),
    ("in_window_start_uframe", "sofs at the end of the first microframe with IN data"),
    ("in_window_end_bytes", "in_bytes at the end of the second-to-last microframe with IN data"),
    ("in_window_end_uframe", "sofs at the end of the second-to-last microframe with IN data"),
    ("out_window_start_bytes", "out_bytes at the end of the first microframe with OUT data"),
    ("out_window_start_uframe", "sofs at the end of the first microframe with OUT data"),
    ("out_window_end_bytes", "out_bytes at the end of the second-to-last microframe with OUT data"),
    ("out_window_end_uframe", "sofs at the end of the second-to-last microframe with OUT data"),
    # What the device received and dropped (protocol version 3). A dropped packet gets no
    # answer, so the host sees only a timeout; these say why. Each packet counts in one class.
    ("rx_packets", "packets received from the host, intact or not (SOFs included)"),
    ("rx_bad_pids", "packets dropped: PID check nibble wrong, or a PID no device acts on"),
    ("rx_malformed", "packets dropped: receive error, or a length that does not fit the PID "
                     "(babble: a data packet longer than PID + 512 + CRC16)"),
    ("rx_crc_errors", "packets dropped: token CRC5 or data CRC16 wrong"),
    ("rx_foreign", "intact packets ignored as not for this device: tokens for another address "
                   "or a missing endpoint, data not right after an OUT or SETUP token for it"),
    ("out_duplicates", "OUT data packets repeating the previous toggle: ACKed and dropped"),
)
#: Microframes per second: the SOF rate of a high-speed bus (USB 2.0 §8.4.3.1).
UFRAMES_PER_SECOND = 8000
#: The GET_TELEMETRY block (:class:`~.telemetry.TelemetryLayout`).
LAYOUT = TelemetryLayout(TELEMETRY, MAGIC, "this protocol", "uframe", UFRAMES_PER_SECOND)
TELEMETRY_WORDS = LAYOUT.count
TELEMETRY_SIZE = LAYOUT.size
unpack_telemetry = LAYOUT.unpack
pack_telemetry = LAYOUT.pack
#: Bytes and seconds of the device's whole-microframe window for "in"/"out", or None when the
#: data touched fewer than three microframes.
device_window = LAYOUT.window


def data_modes(features: Feature) -> tuple[DataMode, ...]:
    """The data modes a bitstream with ``features`` carries out (SET_DATA_MODE stalls any
    other): BOT only with its framer."""
    return ((DataMode.PATTERN, DataMode.LOOPBACK, DataMode.MOD63)
            + ((DataMode.BOT,) if features & Feature.BOT else ()))


def present_words(features: Feature) -> tuple[str, ...]:
    """The telemetry words a bitstream with ``features`` counts, in layout order."""
    absent = {name for feature, names in FEATURE_WORDS.items() if not feature & features
              for name in names}
    return tuple(name for name, _ in TELEMETRY if name not in absent)
