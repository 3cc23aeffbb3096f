"""Seeded symbol errors on the wire between the soft endpoint and the symbol-level root port."""

from __future__ import annotations

import collections
import random

from busprobe.protocol.pcie_symbols import is_k, kcode

__all__ = ["WireFaults"]

#: What a receiver makes of a symbol its 8b/10b decoder could not decode, as the partner (which
#: has no error flag) sees it: a K-code PCIe never sends, so a packet it falls in is malformed.
UNDECODABLE = kcode(28, 4)


class WireFaults:
    """Damages data symbols at a seeded rate while :attr:`enabled`.

    Two kinds: ``flip`` (one bit of the byte: the 10-bit code decoded to another valid data
    symbol) and ``error`` (an 8b/10b code or disparity error: the endpoint sees its ``error``
    flag, the partner :data:`UNDECODABLE`). K-codes are left alone, so the faults land in TLPs,
    DLLPs and idle symbols (ordered sets' data symbols too, once training is over).

    Attributes
    ----------
    injected: Counter of faults by direction and kind (``"to_endpoint flip"`` ...).
    """

    def __init__(self, *, seed: int, rate: float, kinds: tuple[str, ...] = ("flip", "error")):
        if not 0 <= rate < 1:
            raise ValueError(f"fault rate {rate} is not a probability below 1")
        self._rng = random.Random(seed)
        self._rate = rate
        self._kinds = kinds
        self.enabled = False
        self.injected: collections.Counter[str] = collections.Counter()

    def _hit(self, symbol: int | None, direction: str) -> str | None:
        if not self.enabled or symbol is None or is_k(symbol) or self._rng.random() >= self._rate:
            return None
        kind = self._rng.choice(self._kinds)
        self.injected[f"{direction} {kind}"] += 1
        return kind

    def to_endpoint(self, symbol: int | None) -> tuple[int | None, bool]:
        """The symbol the endpoint receives, and its 8b/10b error flag."""
        kind = self._hit(symbol, "to_endpoint")
        if kind == "flip":
            return symbol ^ (1 << self._rng.randrange(8)), False
        return symbol, kind == "error"

    def to_partner(self, symbol: int | None) -> int | None:
        kind = self._hit(symbol, "to_partner")
        if kind == "flip":
            return symbol ^ (1 << self._rng.randrange(8))
        if kind == "error":
            return UNDECODABLE
        return symbol

    @property
    def total(self) -> int:
        return sum(self.injected.values())

