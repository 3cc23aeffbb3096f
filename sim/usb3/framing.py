"""SuperSpeed link-layer framing: header packets, link commands, data packet payloads, CRCs.

Pure functions (no simulator): what the host model puts on the wire and how it reads what the
partner captured (USB 3.2 §7.2). Symbol values come from LUNA (``physical/coding.py``), link
command and packet type codes from usb-protocol (``usb_protocol.types.superspeed``).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from luna.gateware.usb.usb3.physical.coding import EDB, END, EPF, SDP, SHP, SLC
from usb_protocol.types.superspeed import HeaderPacketType, LinkCommand

__all__ = ["crc5", "crc16", "crc32", "Framed", "HeaderPacket", "frame_header",
           "frame_command", "parse_header", "parse_command", "HEADER_SYMBOLS",
           "COMMAND_SYMBOLS", "DPP_OVERHEAD_SYMBOLS", "HeaderPacketType", "LinkCommand"]

#: Framed sizes in symbols (USB 3.2 §7.2.1, §7.2.2): HPSTART + 12-byte header + CRC-16 + link
#: control word; LCSTART + a 2-byte link command word sent twice; DPPSTART + CRC-32 + DPPEND.
HEADER_SYMBOLS = 4 + 12 + 2 + 2
COMMAND_SYMBOLS = 4 + 4
DPP_OVERHEAD_SYMBOLS = 4 + 4 + 4
SEQUENCE_NUMBERS = 8


def _reflect(value: int, width: int) -> int:
    return int(f"{value:0{width}b}"[::-1], 2)


def crc5(value: int) -> int:
    """CRC-5 of the 11 protected bits of a link control / link command word (USB 3.2
    §7.2.1.1.2: x^5 + x^2 + 1, seed all ones, bits sent LSB first, complemented)."""
    crc = 0x1F
    for i in range(11):
        feedback = (crc >> 4 & 1) ^ (value >> i & 1)
        crc = (crc << 1) & 0x1F
        if feedback:
            crc ^= 0x05
    return ~_reflect(crc, 5) & 0x1F


def _crc16_table() -> list[int]:
    # x^16 + x^12 + x^3 + x + 1 (USB 3.2 §7.2.1.1.1), fed LSB first: the reflected form.
    poly = _reflect(0x100B, 16)
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC16 = _crc16_table()


def crc16(data: bytes) -> int:
    """CRC-16 of a header packet's 12 bytes (USB 3.2 §7.2.1.1.1), as sent (low byte first)."""
    crc = 0xFFFF
    for byte in data:
        crc = (crc >> 8) ^ _CRC16[(crc ^ byte) & 0xFF]
    return ~crc & 0xFFFF


def crc32(data: bytes) -> int:
    """CRC-32 of a data packet payload: the IEEE 802.3 CRC (USB 3.2 §7.2.1.2.1)."""
    return zlib.crc32(data)


@dataclass(frozen=True)
class Framed:
    """Symbols for the partner's block queue: ``kmask`` bit i marks symbol i as a K symbol."""
    symbols: bytes
    kmask: int

    def __add__(self, other: Framed) -> Framed:
        return Framed(self.symbols + other.symbols,
                      self.kmask | other.kmask << len(self.symbols))

    def words(self) -> list[tuple[int, int]]:
        """The symbols as 4-symbol PIPE words: (data, the word's 4 K-symbol bits) each."""
        return [(int.from_bytes(self.symbols[i:i + 4], "little"), self.kmask >> i & 0xF)
                for i in range(0, len(self.symbols), 4)]


def _start(symbol: int) -> Framed:
    return Framed(bytes([symbol] * 3 + [EPF.value]), 0xF)


def frame_header(dws: tuple[int, int, int], sequence: int, *, delayed: bool = False,
                 payload: bytes | None = None, corrupt_crc16: bool = False,
                 corrupt_crc32: bool = False) -> Framed:
    """A header packet (and its data packet payload, which follows it back to back); the
    ``corrupt_*`` flags flip the CRC bits a wire error would (fault injection)."""
    body = struct.pack("<III", *dws)
    control = (sequence % SEQUENCE_NUMBERS) | int(delayed) << 9
    control |= crc5(control & 0x7FF) << 11
    crc = crc16(body) ^ (0xFFFF if corrupt_crc16 else 0)
    framed = _start(SHP.value) + Framed(body + struct.pack("<HH", crc, control), 0)
    if payload is not None:
        crc = crc32(payload) ^ (0xFFFF_FFFF if corrupt_crc32 else 0)
        framed = framed + _start(SDP.value) + Framed(payload + struct.pack("<I", crc), 0) \
            + Framed(bytes([END.value] * 3 + [EPF.value]), 0xF)
    return framed


def frame_command(command: LinkCommand, subtype: int = 0) -> Framed:
    """A link command: LCSTART and the link command word twice (USB 3.2 §7.2.2)."""
    word = (subtype & 0xF) | (int(command) & 0xF) << 7
    word |= crc5(word & 0x7FF) << 11
    return _start(SLC.value) + Framed(struct.pack("<HH", word, word), 0)


@dataclass
class HeaderPacket:
    """A header packet the device sent, checked.

    Attributes
    ----------
    dws : tuple of three ints
        DW0..DW2 (USB 3.2 §8.2).
    sequence : int
        Header sequence number from the link control word.
    delayed : bool
        The link control word's Delayed bit (a retransmitted header).
    crc_ok : bool
        CRC-16 and CRC-5 both intact.
    payload : bytes or None
        For a data packet header: the payload that followed, when its CRC-32 was intact.
    payload_crc_ok : bool
    nullified : bool
        The payload was ended with EDB (the device aborted it).
    start, end : int
        Cycles of the header's first symbol and of the payload's (or header's) last.
    """

    dws: tuple[int, int, int]
    sequence: int
    delayed: bool
    crc_ok: bool
    start: int
    end: int
    payload: bytes | None = None
    payload_crc_ok: bool = True
    nullified: bool = False

    @property
    def type(self) -> int:
        return self.dws[0] & 0x1F

    def field(self, dw: int, lsb: int, width: int) -> int:
        return self.dws[dw] >> lsb & ((1 << width) - 1)


def parse_header(data: bytes, start: int, end: int) -> HeaderPacket:
    dws = struct.unpack("<III", data[:12])
    crc, control = struct.unpack("<HH", data[12:16])
    ok = crc == crc16(data[:12]) and control >> 11 == crc5(control & 0x7FF)
    return HeaderPacket(dws, control & 0x7, bool(control >> 9 & 1), ok, start, end)


def attach_payload(header: HeaderPacket, data: bytes, end: int, *, nullified: bool) -> None:
    """Attach a captured data packet payload (payload + CRC-32) to its header."""
    payload, crc = data[:-4], int.from_bytes(data[-4:], "little") if len(data) >= 4 else -1
    header.end = end
    header.nullified = nullified
    header.payload_crc_ok = not nullified and crc == crc32(payload)
    header.payload = payload if header.payload_crc_ok else None


def parse_command(data: bytes) -> tuple[LinkCommand, int] | None:
    """(command, subtype) of a link command, or None if its copies differ or its CRC-5 fails."""
    word, replica = struct.unpack("<HH", data[:4])
    if word != replica or word >> 11 != crc5(word & 0x7FF):
        return None
    try:
        return LinkCommand(word >> 7 & 0xF), word & 0xF
    except ValueError:
        return None


# EDB is imported for the framing it names (the partner ends nullified payloads with it).
NULLIFIED_END = bytes([EDB.value] * 3 + [EPF.value])
