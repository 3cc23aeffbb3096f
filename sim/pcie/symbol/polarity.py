"""A lane with its differential pair swapped, as the receiving 8b/10b decoder sees it (§4.2.4.4)."""

from __future__ import annotations

from busprobe.protocol.pcie_symbols import (
    TS1_ID,
    TS1_ID_INVERTED,
    TS2_ID,
    TS2_ID_INVERTED,
    KCode,
)

__all__ = ["as_inverted"]

#: Symbols whose complemented 10-bit code is a valid code, and what it decodes as: K28.5 and
#: K23.7 complement to their own other-disparity codes; the TS identifiers to D21.5 and D26.5.
_INVERTED = {KCode.COM: KCode.COM, KCode.PAD: KCode.PAD,
             TS1_ID: TS1_ID_INVERTED, TS2_ID: TS2_ID_INVERTED}


def as_inverted(symbol: int | None) -> tuple[int | None, bool]:
    """(symbol decoded, 8b/10b error flag) for ``symbol`` sent down an inverted lane.

    Only the symbols an endpoint needs to find the inversion are modelled; every other one is
    reported as a decode error (many complemented codes are not valid; this model does not
    carry the 8b/10b tables to tell which).
    """
    if symbol is None:
        return None, False
    if symbol in _INVERTED:
        return _INVERTED[symbol], False
    return symbol, True
