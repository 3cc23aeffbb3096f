"""PCIe data link layer on the wire: DLLP types, LCRC-32, DLLP CRC-16 and framing (Gen1/Gen2).

The reference procedures that the soft endpoint's gateware (:mod:`busprobe.gateware.pcie.soft`)
and the symbol-level link partner (:mod:`busprobe.sim.pcie.symbol`) are both checked against.

Framing (PCIe Base 3.0 §4.2.2), in packed symbols (:mod:`.pcie_symbols`)::

    TLP   STP  seq[15:8]  seq[7:0]  TLP bytes ...  LCRC[0..3]  END
    DLLP  SDP  DLLP bytes 0..3  CRC[0..1]  END

where the 16-bit sequence field is 4 reserved zero bits and the 12-bit sequence number. A
transmitter that nullifies a TLP it has started (§3.5.2.1) sends the LCRC inverted and EDB for
END; the receiver discards it silently.

LCRC (§3.5.2.1, Figure 3-21): polynomial 04C1_1DB7h, seed FFFF_FFFFh, over the sequence field and
the TLP, bit 0 of each byte first; the remainder is complemented and its bits mapped so that its
x^31 term goes out first. That is the Ethernet FCS procedure: the four bytes are
``zlib.crc32(seq + tlp)`` least significant byte first (:func:`lcrc`; :func:`lcrc_bitwise` is the
spec's bit-serial procedure, kept to show they agree).

DLLP CRC (§3.6.2.1, Figure 3-12): polynomial 100Bh, seed FFFFh, over the 4 DLLP bytes, bit 0
first, complemented, x^15 term first: the bit-reflected register (polynomial D008h) sent least
significant byte first. Checked against DLLPs a ROCKPro64 root port sent (ECP5-PCIe's captures)
and cocotbext-pcie's ``Dllp.pack_crc``.
"""

from __future__ import annotations

import dataclasses
import enum
import zlib

from .pcie_symbols import KCode, is_k, symbol_byte

__all__ = [
    "DllpType", "SEQ_MODULUS", "ACK_LATENCY_SYMBOLS", "REPLAY_TIMEOUT_SYMBOLS", "LCRC_POLY",
    "DLLP_CRC_POLY", "lcrc", "lcrc_bitwise", "dllp_crc",
    "sequence_field", "ack_dllp", "nak_dllp", "fc_dllp", "frame_tlp", "frame_dllp",
    "FramedPacket", "deframe",
]

SEQ_MODULUS = 4096
#: Symbol times an ACK may wait to cover more TLPs, by Max_Payload_Size, on a 2.5 GT/s x1 link:
#: (MPS + 28) x AckFactor / width + 19, AckFactor 1.4 up to 256 bytes and 1.0 from 512 (the
#: formula behind Table 3-7 of PCIe Base 3.0, as cocotbext-pcie's ``get_max_update_latency``
#: has it).
ACK_LATENCY_SYMBOLS = {128: 237, 256: 416, 512: 559}
#: The REPLAY_TIMER limit, by Max_Payload_Size (2.5 GT/s x1, no L0s adjustment): three
#: AckNak latencies (Table 3-4's 711, 1248, 1677).
REPLAY_TIMEOUT_SYMBOLS = {mps: 3 * latency for mps, latency in ACK_LATENCY_SYMBOLS.items()}
LCRC_POLY = 0x04C1_1DB7
DLLP_CRC_POLY = 0x100B


class DllpType(enum.IntEnum):
    """DLLP type byte (Table 3-1); flow-control types carry the VC in bits 2:0."""

    ACK = 0x00
    MR_INIT = 0x01
    DATA_LINK_FEATURE = 0x02
    NAK = 0x10
    PM_ENTER_L1 = 0x20
    PM_ENTER_L23 = 0x21
    PM_ACTIVE_STATE_REQUEST_L1 = 0x23
    PM_REQUEST_ACK = 0x24
    VENDOR = 0x30
    NOP = 0x31
    INIT_FC1_P = 0x40
    INIT_FC1_NP = 0x50
    INIT_FC1_CPL = 0x60
    INIT_FC2_P = 0xC0
    INIT_FC2_NP = 0xD0
    INIT_FC2_CPL = 0xE0
    UPDATE_FC_P = 0x80
    UPDATE_FC_NP = 0x90
    UPDATE_FC_CPL = 0xA0


def _reflected_crc(data: bytes, *, width: int, poly: int, seed: int) -> int:
    """Bit-serial CRC, data bit 0 first, over a register of ``width`` bits, not complemented.

    The register is kept in the spec's orientation (bit ``width-1`` is the x^(width-1) term, the
    one shifted out), so this is Figure 3-12/3-21 step by step.
    """
    top = 1 << (width - 1)
    mask = (1 << width) - 1
    crc = seed
    for byte in data:
        for bit in range(8):
            feedback = bool(crc & top) ^ bool(byte >> bit & 1)
            crc = (crc << 1) & mask
            if feedback:
                crc ^= poly
    return crc


def _mapped(remainder: int, width: int) -> bytes:
    """Complement the remainder and send its highest term first (bit 0 of byte 0)."""
    remainder ^= (1 << width) - 1
    reflected = int(f"{remainder:0{width}b}"[::-1], 2)
    return reflected.to_bytes(width // 8, "little")


def lcrc_bitwise(seq: int, tlp: bytes) -> bytes:
    """The LCRC by the spec's bit-serial procedure (slow; see :func:`lcrc`)."""
    return _mapped(_reflected_crc(sequence_field(seq) + tlp, width=32, poly=LCRC_POLY,
                                  seed=0xFFFF_FFFF), 32)


def lcrc(seq: int, tlp: bytes) -> bytes:
    """The four LCRC bytes, in the order sent, of the TLP ``tlp`` with sequence number ``seq``."""
    return zlib.crc32(sequence_field(seq) + tlp).to_bytes(4, "little")


def dllp_crc(dllp: bytes) -> bytes:
    """The two CRC bytes, in the order sent, of a 4-byte DLLP."""
    if len(dllp) != 4:
        raise ValueError(f"a DLLP is 4 bytes before its CRC, not {len(dllp)}")
    return _mapped(_reflected_crc(dllp, width=16, poly=DLLP_CRC_POLY, seed=0xFFFF), 16)


def sequence_field(seq: int) -> bytes:
    """The two bytes after STP: 4 reserved zero bits, then the 12-bit sequence number."""
    if not 0 <= seq < SEQ_MODULUS:
        raise ValueError(f"sequence number {seq} is outside 0..4095")
    return seq.to_bytes(2, "big")


def ack_dllp(seq: int) -> bytes:
    return bytes([DllpType.ACK, 0, seq >> 8 & 0xF, seq & 0xFF])


def nak_dllp(seq: int) -> bytes:
    return bytes([DllpType.NAK, 0, seq >> 8 & 0xF, seq & 0xFF])


def fc_dllp(kind: DllpType, header_credits: int, data_credits: int, vc: int = 0) -> bytes:
    """An InitFC1/InitFC2/UpdateFC DLLP: HdrFC 8 bits, DataFC 12 bits (no scaling)."""
    word = (kind | vc) << 24 | (header_credits & 0xFF) << 14 | (data_credits & 0xFFF)
    return word.to_bytes(4, "big")


def frame_tlp(seq: int, tlp: bytes, *, nullified: bool = False) -> list[int]:
    """The packed symbols of a TLP on the link; a nullified one has its LCRC inverted and EDB."""
    crc = lcrc(seq, tlp)
    if nullified:
        crc = bytes(b ^ 0xFF for b in crc)
    body = sequence_field(seq) + tlp + crc
    return [KCode.STP, *body, KCode.EDB if nullified else KCode.END]


def frame_dllp(dllp: bytes) -> list[int]:
    """The 8 packed symbols of a DLLP on the link."""
    return [KCode.SDP, *dllp, *dllp_crc(dllp), KCode.END]


@dataclasses.dataclass(frozen=True)
class FramedPacket:
    """One packet found on a symbol stream by :func:`deframe`.

    Attributes
    ----------
    kind: ``"tlp"`` or ``"dllp"``.
    status: ``"good"``, ``"nullified"`` (EDB with the inverted LCRC), ``"bad_crc"`` (LCRC or
        DLLP CRC wrong) or ``"malformed"`` (a K-code or a length framing does not allow).
    seq: the TLP's sequence number (0 for a DLLP).
    payload: the TLP bytes (without sequence and LCRC) or the 4 DLLP bytes.
    """

    kind: str
    status: str
    seq: int
    payload: bytes


def _judge_tlp(body: bytes, end: int) -> FramedPacket:
    if len(body) < 2 + 12 + 4:  # sequence field + smallest header + LCRC
        return FramedPacket("tlp", "malformed", 0, body)
    seq = int.from_bytes(body[:2], "big") & 0xFFF
    tlp, crc = body[2:-4], body[-4:]
    expected = lcrc(seq, tlp)
    if end == KCode.EDB:
        good = crc == bytes(b ^ 0xFF for b in expected)
        return FramedPacket("tlp", "nullified" if good else "bad_crc", seq, tlp)
    return FramedPacket("tlp", "good" if crc == expected else "bad_crc", seq, tlp)


def deframe(symbols: list[int]) -> list[FramedPacket]:
    """Every TLP and DLLP in a stream of packed symbols, judged as a receiver would.

    Symbols between packets (logical idle, ordered sets) are skipped. A K-code inside a packet
    other than its END/EDB ends it as ``malformed`` and is looked at again as a possible start.
    """
    packets: list[FramedPacket] = []
    i = 0
    while i < len(symbols):
        start = symbols[i]
        if start not in (KCode.STP, KCode.SDP):
            i += 1
            continue
        j = i + 1
        while j < len(symbols) and not is_k(symbols[j]):
            j += 1
        body = bytes(symbol_byte(s) for s in symbols[i + 1:j])
        end = symbols[j] if j < len(symbols) else None
        kind = "tlp" if start == KCode.STP else "dllp"
        if end not in (KCode.END, KCode.EDB) or (kind == "dllp" and end != KCode.END):
            packets.append(FramedPacket(kind, "malformed", 0, body))
            i = j
            continue
        if kind == "tlp":
            packets.append(_judge_tlp(body, end))
        elif len(body) != 6:
            packets.append(FramedPacket("dllp", "malformed", 0, body))
        else:
            good = dllp_crc(body[:4]) == body[4:]
            packets.append(FramedPacket("dllp", "good" if good else "bad_crc", 0, body[:4]))
        i = j + 1
    return packets
