"""Runs the symbol-level root port against the soft endpoint's link at four symbols a clock
(``SoftLink``) in Amaranth's simulator."""

from __future__ import annotations

from collections.abc import Callable

from busprobe.gateware.pcie.soft.soft_link import SoftLink
from busprobe.gateware.pcie.soft.symbol_stream import LANES

from .partner import RootPortPartner
from .polarity import as_inverted
from .wire_faults import WireFaults

__all__ = ["WordExchange", "GEN1_PACE", "SPARSE_PACE"]

#: Clocks a word. At 2.5 GT/s the word link runs on a 62.5 MHz clock and moves a word every
#: clock (as Xilinx's Gen1 x1 64-bit user clock): pace 1. :data:`SPARSE_PACE` leaves a clock
#: without a word between words, which no board does now; the link's blocks still take a
#: ``valid`` per word, and tests run it to hold them to that.
GEN1_PACE, SPARSE_PACE = 1, 2


class WordExchange:
    """Clocks a :class:`RootPortPartner` against a word-wide link, a word each way every
    ``pace`` clocks (on the board the DCU's gearbox hands the link a word every clock).

    The partner is stepped a symbol at a time: the four symbols the link sent in a word go
    to it in order, and the four it answers with form the word the link receives on its next
    word clock (one word of latency, as a gearbox has). Between word clocks ``tx.ready`` and
    ``rx.valid`` are low. An endpoint word in electrical idle reaches the partner as four
    ``None``; a partner word that is all ``None`` holds the endpoint's receiver in electrical
    idle.

    Parameters
    ----------
    link: the endpoint's link (``SoftLink`` or anything with its ports).
    partner: the root port.
    pace: clocks a word (:data:`GEN1_PACE`, :data:`SPARSE_PACE`).
    inverted_lane: the partner-to-endpoint pair is swapped; what the endpoint receives is
        :func:`~.polarity.as_inverted` until the link raises ``invert_polarity``.
    faults: symbol errors on the wire both ways, symbol by symbol (off until
        ``faults.enabled``); an 8b/10b error reaches the endpoint as its lane's ``error``.
    """

    def __init__(self, link: SoftLink, partner: RootPortPartner, *, pace: int = GEN1_PACE,
                 inverted_lane: bool = False, faults: WireFaults | None = None):
        self.link, self.partner, self.pace = link, partner, pace
        self.inverted_lane, self.faults = inverted_lane, faults
        self._errors: list[bool] = [False] * LANES
        self._back: list[int | None] = [None] * LANES
        self._clock = 0

    async def run(self, ctx, *, cycles: int, until: Callable[[], bool] | None = None,
                  each: Callable[[int], None] | None = None,
                  receiver_detected: bool = True) -> int:
        """Clock ``cycles`` clocks (or until ``until()``); ``each(cycle)`` runs before every
        clock edge. Returns the clocks run."""
        link, partner = self.link, self.partner
        ctx.set(link.receiver_detected, receiver_detected)
        for cycle in range(cycles):
            word_clock = self._clock % self.pace == 0
            self._clock += 1
            back, errors = self._back, self._errors
            if self.inverted_lane and not ctx.get(link.invert_polarity):
                back, errors = zip(*map(as_inverted, back), strict=True)
            ctx.set(link.tx.ready, word_clock)
            ctx.set(link.rx.valid, word_clock and any(s is not None for s in back))
            ctx.set(link.rx_electrical_idle, all(s is None for s in back))
            for lane, symbol in enumerate(back):
                ctx.set(link.rx.p[lane].symbol, symbol or 0)
                ctx.set(link.rx.p[lane].error, errors[lane])
            if each is not None:
                each(cycle)
            _, _, symbols, valid, electrical_idle = await ctx.tick().sample(
                link.tx.p.symbols, link.tx.valid, link.tx_electrical_idle)
            if word_clock:
                sent = [None if electrical_idle or not valid else symbols[lane]
                        for lane in range(LANES)]
                faults = self.faults
                if faults is None:
                    self._back = [partner.step(symbol) for symbol in sent]
                else:
                    answers = [faults.to_endpoint(partner.step(faults.to_partner(symbol)))
                               for symbol in sent]
                    self._back = [symbol for symbol, _ in answers]
                    self._errors = [error for _, error in answers]
            if until is not None and until():
                return cycle + 1
        return cycles
