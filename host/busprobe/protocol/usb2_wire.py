"""USB 2.0 high-speed line time: the one definition of what a packet costs on the wire.

Every figure here cites the USB 2.0 specification (revision 2.0, April 2000). The simulated host
controller (``busprobe.sim.usb2``) advances its clock by these numbers and the ceiling model
(:mod:`busprobe.model`) computes its closed forms from them, so the two cannot disagree.

Units are *bit times* at 480 Mb/s (:data:`BIT_TIME_S`) unless a name says otherwise; a ULPI clock
cycle (60 MHz) carries 8 bit times (:data:`BITS_PER_ULPI_CYCLE`).

What one packet costs (§8.3, §7.1.10, §7.1.13.2, §7.1.9)::

    SYNC (32) | PID (8) | fields | CRC (5 or 16) | EOP (8; 40 for SOF)
              '-------- bit stuffed (one 0 after six 1s) --------'
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from .names import Direction
from .usb2 import CLOCK_HZ

__all__ = [
    "BIT_RATE", "BIT_TIME_S", "BITS_PER_ULPI_CYCLE",
    "UFRAME_S", "UFRAME_BITS", "UFRAME_CYCLES", "SYNC_BITS", "EOP_BITS", "SOF_EOP_BITS",
    "PID_BITS", "TOKEN_FIELD_BITS", "CRC5_BITS", "CRC16_BITS",
    "IPD_MIN_BITS", "IPD_HOST_BACK_TO_BACK_BITS", "RESPONSE_MAX_BITS", "HOST_TIMEOUT_BITS",
    "SPEC_BULK_OVERHEAD_BYTES", "SPEC_MAX_BULK_PER_UFRAME",
    "Pid", "crc5", "crc16", "ones_runs", "stuff_bits", "pid_byte", "token_bytes", "sof_bytes",
    "data_bytes", "handshake_bytes", "packet_bits", "packet_bits_of", "sof_bits", "TransactionCost",
    "transaction_bits", "bulk_transactions_per_uframe", "bits_to_cycles", "cycles_to_seconds",
]

#: §7.1.11: high-speed signalling rate.
BIT_RATE = 480_000_000
BIT_TIME_S = 1.0 / BIT_RATE
#: UTMI+ Low Pin Interface rev 1.1 §3.2: 60 MHz clock (defined once, in the device contract:
#: :data:`busprobe.protocol.usb2.CLOCK_HZ`), 8 bits per clock at high speed.
BITS_PER_ULPI_CYCLE = BIT_RATE // CLOCK_HZ
#: §8.4.3.1 / §11.14: a microframe is 125 us.
UFRAME_S = 125e-6
UFRAME_BITS = 60_000
UFRAME_CYCLES = UFRAME_BITS // BITS_PER_ULPI_CYCLE  # 7500

#: §7.1.10: a high-speed transmitter sends a 32-bit SYNC (15 KJ pairs then KK).
SYNC_BITS = 32
#: §7.1.13.2: high-speed EOP is a byte of NRZI 01111111 without stuffing ...
EOP_BITS = 8
#: ... except on SOF packets, whose EOP is 40 bits long (disconnect detection).
SOF_EOP_BITS = 40
#: §8.3.1: PID plus its check nibble.
PID_BITS = 8
#: §8.4.1: token packet: ADDR (7) + ENDP (4) + CRC5 (5).
TOKEN_FIELD_BITS = 16
CRC5_BITS = 5
CRC16_BITS = 16

#: §7.1.18.2: after *receiving* a packet, a high-speed agent waits at least 8 bit times ...
IPD_MIN_BITS = 8
#: ... when a host sends two packets in a row (token then DATA), at least 88 bit times.
IPD_HOST_BACK_TO_BACK_BITS = 88
#: §7.1.18.2: a responding agent must start within 192 bit times of the previous EOP ...
RESPONSE_MAX_BITS = 192
#: §7.1.19.2: ... and a high-speed host times out after 736 bit times without a response.
HOST_TIMEOUT_BITS = 736

#: §5.8.4 Table 5-10: protocol overhead the spec budgets per HS bulk transaction (bytes) ...
SPEC_BULK_OVERHEAD_BYTES = 55
#: ... which fits 13 transactions of 512 bytes in a microframe's 7500 bytes.
SPEC_MAX_BULK_PER_UFRAME = 13


class Pid(enum.IntEnum):
    """Packet identifiers, §8.3.1 Table 8-1 (the low nibble; the byte adds its complement)."""

    OUT = 0x1
    IN = 0x9
    SOF = 0x5
    SETUP = 0xD
    DATA0 = 0x3
    DATA1 = 0xB
    DATA2 = 0x7
    MDATA = 0xF
    ACK = 0x2
    NAK = 0xA
    STALL = 0xE
    NYET = 0x6
    PING = 0x4

    @property
    def is_token(self) -> bool:
        return self in (Pid.OUT, Pid.IN, Pid.SETUP, Pid.PING)

    @property
    def is_data(self) -> bool:
        return self in (Pid.DATA0, Pid.DATA1, Pid.DATA2, Pid.MDATA)

    @property
    def is_handshake(self) -> bool:
        return self in (Pid.ACK, Pid.NAK, Pid.STALL, Pid.NYET)


def pid_byte(pid: Pid | int) -> int:
    """§8.3.1: the PID byte, low nibble the PID, high nibble its ones' complement."""
    pid = int(pid) & 0xF
    return pid | ((~pid & 0xF) << 4)


def crc5(value: int, nbits: int = 11) -> int:
    """§8.3.5.1: CRC5 (x^5 + x^2 + 1) of the ``nbits`` LSB-first bits of ``value``.

    Returns the 5 bits as sent, first-sent bit in bit 0 (inverted remainder, MSB first).
    """
    crc = 0x1F
    for i in range(nbits):
        bit = (value >> i) & 1
        feedback = bit ^ (crc >> 4)
        crc = ((crc << 1) & 0x1F) ^ (0x05 if feedback else 0)
    crc ^= 0x1F
    # The remainder goes out MSB first: reverse it so bit 0 is sent first.
    return int(f"{crc:05b}"[::-1], 2)


def _crc16_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_CRC16_TABLE = _crc16_table()


def crc16(data: bytes | bytearray | memoryview) -> int:
    """§8.3.5.2: CRC16 (x^16 + x^15 + x^2 + 1) of ``data``; the value to append little-endian.

    Reflected, initial 0xFFFF, final inversion (CRC-16/USB); table-driven, a byte per step.
    """
    crc = 0xFFFF
    table = _CRC16_TABLE
    for byte in bytes(data):
        crc = (crc >> 8) ^ table[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFF


def ones_runs(data: bytes | bytearray | memoryview, *,
              after_sync: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Start bit index and length of every run of 1 bits in ``data`` sent LSB first.

    With ``after_sync`` the SYNC's final 1 is bit index 0 and the data starts at index 1.
    """
    import numpy as np  # here, not at import: busprobe.protocol.patterns says why

    bits = np.unpackbits(np.frombuffer(bytes(data), dtype=np.uint8), bitorder="little")
    if after_sync:
        bits = np.concatenate((np.ones(1, dtype=np.uint8), bits))
    edges = np.diff(np.concatenate(([0], bits.astype(np.int8), [0])))
    starts = np.flatnonzero(edges == 1)
    return starts, np.flatnonzero(edges == -1) - starts


def stuff_bits(data: bytes | bytearray | memoryview, *, after_sync: bool = True) -> int:
    """§7.1.9: number of zero bits the transmitter inserts into ``data`` (sent LSB first).

    A 0 follows every run of six 1s, and that 0 ends the run, so a run of ``L`` ones gets
    ``L // 6`` stuffed bits. Stuffing starts with the SYNC pattern (§7.1.9.1), whose last bit
    is a 1, so a run at the start counts it when ``after_sync``.
    """
    _, lengths = ones_runs(data, after_sync=after_sync)
    return int((lengths // 6).sum())


def token_bytes(pid: Pid, address: int, endpoint: int) -> bytes:
    """§8.4.1: PID, ADDR (7 bits), ENDP (4 bits), CRC5 over ADDR+ENDP."""
    if not 0 <= address < 128 or not 0 <= endpoint < 16:
        raise ValueError(f"bad token address {address} endpoint {endpoint}")
    fields = address | (endpoint << 7)
    fields |= crc5(fields) << 11
    return bytes((pid_byte(pid), fields & 0xFF, fields >> 8))


def sof_bytes(frame_number: int) -> bytes:
    """§8.4.3: SOF PID, 11-bit frame number, CRC5."""
    fields = frame_number & 0x7FF
    fields |= crc5(fields) << 11
    return bytes((pid_byte(Pid.SOF), fields & 0xFF, fields >> 8))


def data_bytes(pid: Pid, payload: bytes | bytearray | memoryview) -> bytes:
    """§8.4.4: DATAx PID, payload, CRC16 (little-endian)."""
    crc = crc16(payload)
    return bytes((pid_byte(pid),)) + bytes(payload) + bytes((crc & 0xFF, crc >> 8))


def handshake_bytes(pid: Pid) -> bytes:
    """§8.4.5: a handshake is its PID alone."""
    return bytes((pid_byte(pid),))


def packet_bits_of(packet: bytes | bytearray | memoryview, *, sof: bool = False) -> int:
    """Line time of a packet given as its bytes from PID to CRC: SYNC + stuffed bits + EOP."""
    eop = SOF_EOP_BITS if sof else EOP_BITS
    return SYNC_BITS + 8 * len(packet) + stuff_bits(packet) + eop


def packet_bits(pid: Pid, payload: bytes | bytearray | memoryview = b"", *,
                stuffing: bool = True) -> int:
    """Line time of one packet with PID ``pid`` (§8.4).

    For data packets ``payload`` is the data; for tokens and SOF it is ignored (the 16 field bits
    are counted, stuffing assumed absent unless the real bytes are passed to
    :func:`packet_bits_of`). ``stuffing=False`` gives the unstuffed minimum the spec's budget uses.
    """
    pid = Pid(pid)
    if pid.is_data:
        body = 8 + 8 * len(payload) + CRC16_BITS
        stuffed = stuff_bits(data_bytes(pid, payload)) if stuffing else 0
        return SYNC_BITS + body + stuffed + EOP_BITS
    if pid.is_handshake:
        return SYNC_BITS + PID_BITS + EOP_BITS
    eop = SOF_EOP_BITS if pid == Pid.SOF else EOP_BITS
    return SYNC_BITS + PID_BITS + TOKEN_FIELD_BITS + eop


def sof_bits() -> int:
    """Line time of an SOF packet (§8.4.3.1, EOP 40 bits)."""
    return packet_bits(Pid.SOF)


@dataclass(frozen=True)
class TransactionCost:
    """Line time of one bulk transaction, broken down (all in bit times).

    Attributes
    ----------
    token, data, handshake : int
        The three packets (``handshake`` 0 when none is sent).
    gaps : int
        Inter-packet delays and turnarounds between them.
    """

    token: int
    data: int
    handshake: int
    gaps: int

    @property
    def total(self) -> int:
        return self.token + self.data + self.handshake + self.gaps


def transaction_bits(direction: str, payload: bytes | bytearray | memoryview | int, *,
                     turnaround_bits: int = IPD_MIN_BITS,
                     stuffing: bool = True) -> TransactionCost:
    """Line time of one bulk IN or OUT transaction (§8.5.2) with the given data.

    ``payload`` is the data (exact stuffing) or a byte count (no stuffing). ``turnaround_bits``
    is the time between a received EOP and the response (8..192 bit times, §7.1.18.2); the host's
    own token-to-DATA gap on OUT is the back-to-back minimum of 88 bit times.
    """
    if not IPD_MIN_BITS <= turnaround_bits <= RESPONSE_MAX_BITS:
        raise ValueError(f"turnaround {turnaround_bits} bit times outside 8..192 (§7.1.18.2)")
    if isinstance(payload, int):
        payload, stuffing = bytes(payload), False
    token = packet_bits(Pid.IN if direction == Direction.IN else Pid.OUT)
    data = packet_bits(Pid.DATA0, payload, stuffing=stuffing)
    handshake = packet_bits(Pid.ACK)
    if direction == Direction.IN:
        gaps = 2 * turnaround_bits  # device answers the token, host answers the data
    elif direction == Direction.OUT:
        gaps = IPD_HOST_BACK_TO_BACK_BITS + turnaround_bits
    else:
        raise ValueError(f"direction must be 'in' or 'out', not '{direction}'")
    return TransactionCost(token, data, handshake, gaps)


def bulk_transactions_per_uframe(payload_size: int = 512, *, direction: str = "in",
                                 gap_bits: int = IPD_MIN_BITS,
                                 turnaround_bits: int = IPD_MIN_BITS) -> int:
    """Most bulk transactions of ``payload_size`` bytes that fit in one microframe after its SOF.

    Counts unstuffed line time (as the spec's §5.8.4 budget does), ``gap_bits`` of idle between
    transactions (the host's inter-transaction delay, at least the 8-bit IPD), and stops at the
    spec's 13 (Table 5-10), which the physics alone would exceed by a fraction.
    """
    available = UFRAME_BITS - sof_bits() - gap_bits
    per = transaction_bits(direction, payload_size, turnaround_bits=turnaround_bits).total
    fits = available // (per + gap_bits)
    return min(fits, SPEC_MAX_BULK_PER_UFRAME if payload_size == 512 else fits)


def bits_to_cycles(bits: int) -> int:
    """Whole ULPI cycles (8 bit times each) that ``bits`` of line time occupy, rounded up."""
    return -(-bits // BITS_PER_ULPI_CYCLE)


def cycles_to_seconds(cycles: int | float) -> float:
    return cycles / CLOCK_HZ
