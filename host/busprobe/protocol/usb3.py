"""USB 3.0 SuperSpeed device contract: identifiers, endpoints, vendor requests, telemetry block.

The SuperSpeed device answers the same vendor requests as the USB 2.0 device
(:class:`busprobe.protocol.usb2.Request`, same codes, same meaning) so one host driver runs both;
what differs is defined here: the packet size (1024), the burst (``bMaxBurst``), the INFO answer
and a telemetry block extended with what SuperSpeed shows (ACK TPs and the NumP window they
grant, bursts, NRDY/ERDY, retries, header-credit stalls, ITPs and bus intervals with data).

The gateware (``gateware/usb3``) packs :data:`TELEMETRY` in this order; the host and the
simulation decode it with :func:`unpack_telemetry`. ``GET_INFO`` starts with the same three fields
as USB 2.0 (magic, version, max packet size), so a host tells the two devices apart by the magic.
"""

from __future__ import annotations

import struct

from .patterns import NO_ERROR_OFFSET
from .telemetry import TelemetryLayout
from .usb2 import (
    IN_ZLP_FLAG,
    NO_FEATURES,
    DataMode,
    Feature,
    Request,
    decode_in_transfer,
    encode_in_transfer,
)

__all__ = [
    "VID", "PID", "MANUFACTURER", "PRODUCT", "SERIAL", "EP_IN", "EP_OUT", "MAX_PACKET_SIZE",
    "MAX_BURST", "MAX_BURST_PACKETS", "OUT_BUFFER_PACKETS", "CONTROL_MAX_PACKET_SIZE",
    "CLOCK_HZ", "BUS_INTERVALS_PER_SECOND", "SKP_INTERVAL_SYMBOLS", "MAGIC", "PROTOCOL_VERSION",
    "KNOWN_VERSIONS",
    "Request", "DataMode", "SUPPORTED_DATA_MODES", "data_modes", "IN_ZLP_FLAG",
    "encode_in_transfer", "Feature", "NO_FEATURES", "STORAGE_PRODUCT",
    "decode_in_transfer", "INFO_FORMAT", "INFO_SIZE", "INFO_V2_SIZE", "pack_info", "unpack_info",
    "TELEMETRY", "TELEMETRY_WORDS", "TELEMETRY_SIZE", "TELEMETRY_INDEX", "TELEMETRY_INITIAL",
    "NO_ERROR_OFFSET",
    "unpack_telemetry", "pack_telemetry", "device_window",
]

VID = 0x1209  # pid.codes, as the USB 2.0 device: `usb:1209:0001` finds either
PID = 0x0001
MANUFACTURER = "busprobe"
PRODUCT = "busprobe USB3 SS"
#: iProduct of the SuperSpeed null disk (``usb3-storage``, issue 28).
STORAGE_PRODUCT = f"{PRODUCT} null disk"
SERIAL = "BP3-0001"

EP_IN = 0x81  # bulk IN, pattern source (the same numbers as USB 2.0)
EP_OUT = 0x02  # bulk OUT, checked sink
MAX_PACKET_SIZE = 1024  # the only wMaxPacketSize USB 3.2 §9.6.6 allows a SuperSpeed bulk endpoint
#: ``bMaxBurst`` of both bulk endpoints' companion descriptors: packets per burst minus one.
MAX_BURST = 15
MAX_BURST_PACKETS = MAX_BURST + 1
#: OUT packet buffers: the NumP the OUT endpoint advertises when all are free.
OUT_BUFFER_PACKETS = 16
#: bMaxPacketSize0 of a SuperSpeed device is the exponent 9 (512 bytes), USB 3.2 §9.6.1.
CONTROL_MAX_PACKET_SIZE = 512
#: The ``ss`` domain (PIPE 4 symbols × 125 MHz = 5 Gb/s after 8b/10b); cycle counters count it.
CLOCK_HZ = 125_000_000
#: The host sends an isochronous timestamp packet (ITP) every bus interval of 125 µs
#: (USB 3.2 §8.7): the SuperSpeed device's time base, as SOFs are at high speed.
BUS_INTERVALS_PER_SECOND = 8000
#: A transmitter owes one SKP ordered set (two SKP symbols at Gen 1) per 354 symbols it sends
#: (USB 3.2 §6.4.3): the lane's clock tolerance compensation.
SKP_INTERVAL_SYMBOLS = 354

MAGIC = 0x3355_5042  # b"BPU3" little-endian
#: 1: PATTERN only; 2: LOOPBACK too (OUT packets returned on IN); 3: INFO ends with the
#: features word (:class:`~busprobe.protocol.usb2.Feature`: ``STORAGE`` names the null disk).
#: The requests and telemetry layouts are the same in all, so the host drives any and asks a
#: version 1 device for no loopback.
PROTOCOL_VERSION = 3
KNOWN_VERSIONS = (1, 2, 3)

#: Data modes the SuperSpeed device implements (SET_DATA_MODE with any other value STALLs).
SUPPORTED_DATA_MODES = (DataMode.PATTERN, DataMode.LOOPBACK)


def data_modes(version: int) -> tuple[DataMode, ...]:
    """The data modes a device answering GET_INFO with protocol ``version`` carries out."""
    return SUPPORTED_DATA_MODES if version >= 2 else (DataMode.PATTERN,)

#: GET_INFO: magic, protocol version, max packet size (as USB 2.0), then the IN burst size in
#: packets, the OUT buffer count in packets, the clock the cycle counters count and (version 3)
#: the features (:class:`~busprobe.protocol.usb2.Feature`, the same bits as USB 2.0's).
INFO_FORMAT = "<IHHBBII"
INFO_SIZE = struct.calcsize(INFO_FORMAT)
#: A version 1 or 2 device's INFO: without the features word.
INFO_V2_SIZE = struct.calcsize(INFO_FORMAT[:-1])


def pack_info(features: Feature = NO_FEATURES) -> bytes:
    """The GET_INFO answer of a device speaking this protocol, with ``features``."""
    return struct.pack(INFO_FORMAT, MAGIC, PROTOCOL_VERSION, MAX_PACKET_SIZE, MAX_BURST_PACKETS,
                       OUT_BUFFER_PACKETS, CLOCK_HZ, int(features))


def unpack_info(data: bytes) -> dict[str, int]:
    """Decode GET_INFO (a version 1 or 2 device's has no features: none); raises ValueError if
    it is not this protocol's."""
    if len(data) not in (INFO_SIZE, INFO_V2_SIZE):
        raise ValueError(f"INFO is {len(data)} bytes, expected {INFO_SIZE}")
    fields = struct.unpack(INFO_FORMAT if len(data) == INFO_SIZE else INFO_FORMAT[:-1], data)
    magic, version, mps, burst, out_buffers, clock = fields[:6]
    if magic != MAGIC:
        raise ValueError(f"INFO magic {magic:#010x} is not {MAGIC:#010x}")
    return {"magic": magic, "version": version, "max_packet_size": mps,
            "max_burst_packets": burst, "out_buffer_packets": out_buffers, "clock_hz": clock,
            "features": Feature(fields[6] if len(fields) > 6 else 0)}


#: Telemetry words, in order; each an unsigned 32-bit little-endian counter that wraps
#: (name, description). CLEAR_TELEMETRY zeroes them; SET_PATTERN also restarts
#: ``pattern_errors`` and ``first_error_offset``. A "burst" is a run of data packets (DPs) sent
#: or received while the endpoint's NumP window stays open; it ends when the window closes
#: (NumP exhausted, EOB, a short packet or NRDY).
TELEMETRY: tuple[tuple[str, str], ...] = (
    ("magic", "constant MAGIC, identifies the layout"),
    ("version", "constant PROTOCOL_VERSION"),
    # Bulk IN (device -> host).
    ("in_bytes", "payload bytes of IN DPs the host acknowledged"),
    ("in_packets", "IN DPs the host acknowledged (cumulative ACKs count every packet retired)"),
    ("in_short", "short (non-zero, < 1024 B) IN DPs acknowledged"),
    ("in_zlps", "zero-length IN DPs acknowledged"),
    ("in_dps_sent", "IN DPs put on the link, retries included"),
    ("in_retries", "IN DPs sent again because an ACK TP asked for a retry (Rty)"),
    ("in_ack_tps", "ACK TPs for the IN endpoint (each requests NumP packets)"),
    ("in_nump_total", "sum of NumP over those ACK TPs"),
    ("in_nump_max", "largest NumP an ACK TP for the IN endpoint asked for"),
    ("in_bursts", "IN bursts: runs of DPs sent without the window closing (counted at their "
                  "first DP)"),
    ("in_burst_max", "most DPs in one IN burst (saturates at 31: a host that keeps "
                       "the window open makes one long burst)"),
    ("in_eobs", "IN DPs sent with End Of Burst set"),
    ("in_nrdys", "NRDY TPs sent for the IN endpoint (no data to send; not a stream's prime)"),
    ("in_erdys", "ERDY TPs sent for the IN endpoint (data ready after an NRDY)"),
    # Bulk OUT (host -> device).
    ("out_bytes", "payload bytes of OUT DPs received in sequence and acknowledged"),
    ("out_packets", "OUT DPs received in sequence and acknowledged"),
    ("out_short", "short (non-zero, < 1024 B) OUT DPs acknowledged"),
    ("out_zlps", "zero-length OUT DPs acknowledged"),
    ("out_dps_received", "OUT DPs addressed to the OUT endpoint, good or not"),
    ("out_bad_dps", "OUT DPs whose payload failed CRC-32 or framing: answered with a retry"),
    ("out_sequence_errors", "OUT DPs with an unexpected sequence number: answered with a retry"),
    ("out_ack_tps", "ACK TPs sent for the OUT endpoint"),
    ("out_nump_min", "smallest NumP advertised in an ACK TP (0xFFFFFFFF if none)"),
    ("out_nump_zero", "ACK TPs advertising NumP 0: every OUT buffer was full"),
    ("out_bursts", "OUT bursts (counted at their first DP): runs of good DPs, each starting "
                   "within 256 ns of the previous "
                   "one's end, or ended by a DP with EOB"),
    ("out_burst_max", "most DPs in one OUT burst (saturates at 31: a host that keeps "
                       "the window open makes one long burst)"),
    ("out_nrdys", "NRDY TPs sent for the OUT endpoint (not a stream's prime)"),
    ("out_erdys", "ERDY TPs sent for the OUT endpoint"),
    # Link and time base.
    ("header_credit_stalls", "ss cycles a header packet waited for a link header credit (LCRD)"),
    ("itps", "isochronous timestamp packets (ITPs) received: bus intervals elapsed"),
    ("data_intervals", "bus intervals in which at least one DP moved on either bulk endpoint"),
    ("pattern_errors", "32-bit words of the OUT stream that did not match the pattern"),
    ("first_error_offset", "OUT stream byte offset of the first mismatch, NO_ERROR_OFFSET if none"),
    ("in_first_cycle", "ss cycle counter when the first IN DP started"),
    ("in_last_cycle", "ss cycle counter when the last IN DP was acknowledged"),
    ("out_first_cycle", "ss cycle counter when the first OUT DP started"),
    ("out_last_cycle", "ss cycle counter when the last OUT DP was acknowledged"),
    # The timing window, as USB 2.0's but on bus intervals (ITPs): from the end of the first
    # interval that moved data in that direction to the end of the second-to-last one.
    ("in_window_start_bytes", "in_bytes at the end of the first bus interval with IN data"),
    ("in_window_start_interval", "itps at the end of the first bus interval with IN data"),
    ("in_window_end_bytes", "in_bytes at the end of the second-to-last interval with IN data"),
    ("in_window_end_interval", "itps at the end of the second-to-last interval with IN data"),
    ("out_window_start_bytes", "out_bytes at the end of the first bus interval with OUT data"),
    ("out_window_start_interval", "itps at the end of the first bus interval with OUT data"),
    ("out_window_end_bytes", "out_bytes at the end of the second-to-last interval with OUT data"),
    ("out_window_end_interval", "itps at the end of the second-to-last interval with OUT data"),
    # Bulk streams (``protocol.streams``; 0 on the endpoints without streams).
    ("in_stream_errors", "ACK TPs for the IN endpoint naming a stream it could not move "
                         "(0, past MaxStreams, or not the stream selected): answered NRDY"),
    ("out_stream_errors", "OUT DPs naming a stream the endpoint could not move: answered NRDY"),
)
#: Initial values that are not zero (CLEAR_TELEMETRY restores these too).
TELEMETRY_INITIAL = {"magic": MAGIC, "version": PROTOCOL_VERSION,
                     "out_nump_min": 0xFFFF_FFFF, "first_error_offset": NO_ERROR_OFFSET}
#: The GET_TELEMETRY block (:class:`~.telemetry.TelemetryLayout`).
LAYOUT = TelemetryLayout(TELEMETRY, MAGIC, "the USB3 protocol", "interval",
                         BUS_INTERVALS_PER_SECOND, TELEMETRY_INITIAL)
TELEMETRY_WORDS = LAYOUT.count
TELEMETRY_SIZE = LAYOUT.size
TELEMETRY_INDEX = LAYOUT.index
unpack_telemetry = LAYOUT.unpack
pack_telemetry = LAYOUT.pack
#: Bytes and seconds of the device's whole-interval window for "in"/"out", or None when the
#: data touched fewer than three bus intervals.
device_window = LAYOUT.window
