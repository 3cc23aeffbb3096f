"""PCIe Gen1/Gen2 symbols: the 8b/10b K-codes PCIe uses and its ordered sets (PCIe Base 3.0 §4.2).

A *symbol* here is what an 8b/10b decoder hands up and an encoder takes: a byte and a K flag,
packed into one int as ``K_FLAG | byte`` for a K-code and ``byte`` for a data symbol, the
9-bit ``{k, data}`` word the soft endpoint's gateware carries (:mod:`busprobe.gateware.pcie.soft`)
and the symbol-level link partner exchanges (:mod:`busprobe.sim.pcie.symbol`). The 8b/10b code
itself (and the scrambler of §4.2.1.3, which leaves K-codes and ordered sets alone) sit below
this level, in the SerDes.

Ordered sets (§4.2.4.1, Table 4-3..4-5): a TS1 or TS2 is 16 symbols::

    0  COM            5  training control (bit 0 Hot Reset, 1 Disable Link, 2 Loopback,
    1  link number       3 Disable Scrambling, 4 Compliance Receive)
    2  lane number    6..15  identifier: D10.2 (0x4A) for TS1, D5.2 (0x45) for TS2
    3  N_FTS
    4  data rate identifier (bit 1: 2.5 GT/s, bit 2: 5.0 GT/s; bit 7 speed change)

with PAD (K23.7) in the link and lane fields while they are not yet assigned. A SKP ordered
set is COM followed by three SKP (a receiver may see 1 to 5, §4.2.7), an electrical idle
ordered set (EIOS) COM followed by three IDL. SKP ordered sets are scheduled every 1180 to
1538 symbol times (§4.2.7.3) and only between packets.
"""

from __future__ import annotations

import dataclasses
import enum

__all__ = [
    "K_FLAG", "KCode", "kcode", "data_symbol", "is_k", "symbol_byte", "symbol_name",
    "TS_LENGTH", "TS1_ID", "TS2_ID", "TS1_ID_INVERTED", "TS2_ID_INVERTED", "TsKind",
    "TrainingControl", "RATE_2_5GT", "RATE_5GT",
    "TrainingSet", "encode_ts", "decode_ts", "SKP_ORDERED_SET", "EIOS", "LOGICAL_IDLE",
    "SKP_INTERVAL_MIN", "SKP_INTERVAL_MAX", "COMPLIANCE_PATTERN",
]

#: Bit that marks a K-code in a packed symbol.
K_FLAG = 0x100


def kcode(x: int, y: int) -> int:
    """The packed symbol Kx.y (bits HGF = y, EDCBA = x, K flag set)."""
    return K_FLAG | (y << 5) | x


def data_symbol(x: int, y: int) -> int:
    """The packed symbol Dx.y."""
    return (y << 5) | x


class KCode(enum.IntEnum):
    """The K-codes of PCIe Gen1/Gen2 framing and ordered sets (Table 4-1), packed symbols."""

    COM = kcode(28, 5)  # comma: starts every ordered set; resets the scrambler
    STP = kcode(27, 7)  # start of TLP
    SDP = kcode(28, 2)  # start of DLLP
    END = kcode(29, 7)  # end of a good TLP or DLLP
    EDB = kcode(30, 7)  # end of a nullified TLP (EnD Bad)
    PAD = kcode(23, 7)  # link/lane number not assigned; filler on wider links
    SKP = kcode(28, 0)  # clock compensation (inside a SKP ordered set)
    FTS = kcode(28, 1)  # fast training sequence (L0s exit)
    IDL = kcode(28, 3)  # electrical idle (inside an EIOS)
    EIE = kcode(28, 7)  # electrical idle exit (Gen2 EIEOS)


def is_k(symbol: int) -> bool:
    return bool(symbol & K_FLAG)


def symbol_byte(symbol: int) -> int:
    return symbol & 0xFF


def symbol_name(symbol: int) -> str:
    """``"STP"`` for a K-code PCIe names, ``"K28.4"`` for another, ``"D10.2"`` for data."""
    if symbol in KCode._value2member_map_:
        return KCode(symbol).name
    x, y = symbol & 0x1F, (symbol >> 5) & 0x7
    return f"{'K' if is_k(symbol) else 'D'}{x}.{y}"


TS_LENGTH = 16
TS1_ID = data_symbol(10, 2)  # 0x4A
TS2_ID = data_symbol(5, 2)  # 0x45
#: What the identifiers decode as on a lane whose polarity is inverted (§4.2.4.4): the
#: complemented 10-bit codes of D10.2 and D5.2 are those of D21.5 and D26.5.
TS1_ID_INVERTED = data_symbol(21, 5)  # 0xB5
TS2_ID_INVERTED = data_symbol(26, 5)  # 0xBA
#: Data rate identifier bits (symbol 4): bit 0 is reserved, bit 1 means 2.5 GT/s supported.
RATE_2_5GT = 0x02
RATE_5GT = 0x04


class TsKind(enum.IntEnum):
    TS1 = 1
    TS2 = 2


class TrainingControl(enum.IntFlag):
    """Symbol 5 of a TS1/TS2."""

    NONE = 0
    HOT_RESET = 0x01
    DISABLE_LINK = 0x02
    LOOPBACK = 0x04
    DISABLE_SCRAMBLING = 0x08
    COMPLIANCE_RECEIVE = 0x10


@dataclasses.dataclass(frozen=True)
class TrainingSet:
    """One TS1 or TS2; ``link``/``lane`` ``None`` are sent as PAD.

    Attributes
    ----------
    kind: TS1 or TS2.
    link, lane: the link and lane numbers, or ``None`` for PAD.
    n_fts: FTS ordered sets the sender needs to leave L0s.
    rate: the data rate identifier (:data:`RATE_2_5GT` ...).
    control: the training control bits.
    """

    kind: TsKind
    link: int | None = None
    lane: int | None = None
    n_fts: int = 255
    rate: int = RATE_2_5GT
    control: TrainingControl = TrainingControl.NONE


def encode_ts(ts: TrainingSet) -> list[int]:
    """The 16 packed symbols of a TS1/TS2."""
    def field(value: int | None) -> int:
        return KCode.PAD if value is None else value & 0xFF

    ident = TS1_ID if ts.kind == TsKind.TS1 else TS2_ID
    return [KCode.COM, field(ts.link), field(ts.lane), ts.n_fts & 0xFF, ts.rate & 0xFF,
            int(ts.control) & 0xFF] + [ident] * 10


def decode_ts(symbols: list[int]) -> TrainingSet | None:
    """The TS1/TS2 in these 16 symbols, or ``None`` if they are not a well-formed one."""
    if len(symbols) != TS_LENGTH or symbols[0] != KCode.COM:
        return None
    ident = symbols[6]
    if ident not in (TS1_ID, TS2_ID) or any(s != ident for s in symbols[7:]):
        return None
    if any(is_k(s) for s in symbols[3:6]):
        return None

    def field(symbol: int) -> int | None | bool:
        if symbol == KCode.PAD:
            return None
        return False if is_k(symbol) else symbol

    link, lane = field(symbols[1]), field(symbols[2])
    if link is False or lane is False:
        return None
    kind = TsKind.TS1 if ident == TS1_ID else TsKind.TS2
    return TrainingSet(kind, link, lane, symbols[3], symbols[4], TrainingControl(symbols[5]))


SKP_ORDERED_SET = (KCode.COM, KCode.SKP, KCode.SKP, KCode.SKP)
EIOS = (KCode.COM, KCode.IDL, KCode.IDL, KCode.IDL)
#: What a transmitter in L0 sends with nothing to send: D0.0 (scrambled on the wire).
LOGICAL_IDLE = data_symbol(0, 0)
#: SKP ordered sets are scheduled every 1180..1538 symbol times (§4.2.7.3).
SKP_INTERVAL_MIN = 1180
SKP_INTERVAL_MAX = 1538
#: Gen1 compliance pattern (§4.2.8): K28.5, D21.5, K28.5, D10.2, repeated.
COMPLIANCE_PATTERN = (KCode.COM, data_symbol(21, 5), KCode.COM, data_symbol(10, 2))
