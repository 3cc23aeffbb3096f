"""The PCIe 2.5/5.0 GT/s (8b/10b) scrambler, §4.2.1.3: one definition for the PHY and its tests.

A 16-bit LFSR, G(x) = x^16 + x^5 + x^4 + x^3 + 1, is XORed into data symbols before the 8b/10b
encoder and again after the decoder (the same operation both ways). The rules, as the PCIe 2.0
Base Specification §4.2.1.3 states them:

1. COM initialises the LFSR to FFFFh (after it has gone through).
2. The LFSR advances eight serial shifts for every symbol except SKP.
3. Every data symbol (D code) is scrambled except those of a training sequence (TS1/TS2) and
   of the compliance pattern.
4. K codes are never scrambled.

A scrambler below the symbol level does not know which ordered set a data symbol belongs to, so
rule 3 is applied from the symbols themselves: a COM always starts an ordered set, and the only
ordered sets of 2.5 GT/s with a data symbol right after their COM are TS1/TS2 (link number, or
PAD) and the compliance pattern (COM D21.5 COM D10.2). So a data symbol or PAD right after a COM
leaves that symbol and the next 14 (symbols 1..15 of a TS) unscrambled; a COM starts over. A SKP
after a COM (a SKP ordered set) or any other K code there (EIOS, FTS) does not. The Disable
Scrambling bit of a TS is not supported (this endpoint never sets it; a root port that asks for
it is not served). The 5 GT/s EIEOS (COM, 14 EIE, D10.2) is outside this rule: the endpoint is
2.5 GT/s only.

:func:`lfsr_advance` and :func:`scramble_key` are linear over GF(2), which is what lets the
gateware (:mod:`busprobe.gateware.pcie.soft.scrambler`) build its XOR network from them.
"""

from __future__ import annotations

from collections.abc import Iterable

from .pcie_symbols import TS_LENGTH, KCode, is_k

__all__ = ["SEED", "FEEDBACK", "lfsr_advance", "scramble_key", "Scrambler", "scramble",
           "TS_UNSCRAMBLED"]

#: The LFSR's value after a COM.
SEED = 0xFFFF
#: What a shift XORs in when bit 15 shifts out: bit 0 takes it, bits 3, 4, 5 are inverted by it
#: (the Galois form of x^16 + x^5 + x^4 + x^3 + 1, as the specification's C code shifts it).
FEEDBACK = 0x0039
#: Symbols after the COM of a TS that go unscrambled: all the rest of it.
TS_UNSCRAMBLED = TS_LENGTH - 1


def lfsr_advance(state: int) -> int:
    """The LFSR one symbol time later: eight serial shifts."""
    for _ in range(8):
        out = state >> 15 & 1
        state = ((state << 1) & 0xFFFF) ^ (FEEDBACK if out else 0)
    return state


def scramble_key(state: int) -> int:
    """The byte XORed into a data symbol: data bit ``i`` takes LFSR bit ``15 - i``."""
    return int(f"{state >> 8:08b}"[::-1], 2)


class Scrambler:
    """Scrambles, or descrambles, packed symbols (:mod:`.pcie_symbols`) one at a time.

    The state is the LFSR, whether the last symbol was a COM, and how many symbols of a TS are
    still to go unscrambled; :meth:`symbol` applies the module's rules to one symbol.
    """

    def __init__(self) -> None:
        self.state = SEED
        self.after_com = False
        self.unscrambled = 0

    def symbol(self, symbol: int) -> int:
        if symbol == KCode.COM:
            self.state, self.after_com, self.unscrambled = SEED, True, 0
            return symbol
        if symbol == KCode.SKP:
            self.after_com = False  # a SKP ordered set: the LFSR stays where it is
            return symbol
        left = self.unscrambled
        if self.after_com and (not is_k(symbol) or symbol == KCode.PAD):
            left = TS_UNSCRAMBLED  # symbol 1 of a TS (or the compliance pattern's data)
        exempt = left != 0
        out = symbol if is_k(symbol) or exempt else symbol ^ scramble_key(self.state)
        self.state = lfsr_advance(self.state)
        self.after_com = False
        self.unscrambled = left - 1 if exempt else 0
        return out


def scramble(symbols: Iterable[int], scrambler: Scrambler | None = None) -> list[int]:
    """Every symbol through one :class:`Scrambler` (a new one unless given): also descrambles."""
    scrambler = Scrambler() if scrambler is None else scrambler
    return [scrambler.symbol(symbol) for symbol in symbols]
