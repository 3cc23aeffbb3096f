"""Runs the symbol-level root port against the soft endpoint's link in Amaranth's simulator."""

from __future__ import annotations

from collections.abc import Callable

from busprobe.gateware.pcie.soft.soft_link import SoftLink

from .partner import RootPortPartner

__all__ = ["exchange_symbols"]


async def exchange_symbols(ctx, link: SoftLink, partner: RootPortPartner, *, cycles: int,
                           until: Callable[[], bool] | None = None,
                           each: Callable[[int], None] | None = None,
                           receiver_detected: bool = True) -> int:
    """Clock ``cycles`` symbol times (or until ``until()``), one symbol each way per clock.

    The endpoint's transmitter in electrical idle reaches the partner as ``None``; the
    partner's ``None`` holds the endpoint's receiver in electrical idle. ``each(cycle)`` runs
    before every clock edge (to sample the endpoint's strobes); ``receiver_detected`` is what
    the endpoint's receiver detection finds. Returns the cycles run.
    """
    ctx.set(link.receiver_detected, receiver_detected)
    ctx.set(link.tx.ready, 1)
    back = partner.step(None)
    for cycle in range(cycles):
        ctx.set(link.rx_electrical_idle, back is None)
        ctx.set(link.rx.valid, back is not None)
        ctx.set(link.rx.p.symbol, back or 0)
        if each is not None:
            each(cycle)
        # What the endpoint sends is read at the clock edge, not before it: another testbench
        # (one feeding the framer) may change it in between.
        _, _, symbol, electrical_idle = await ctx.tick().sample(link.tx.p.symbol,
                                                                link.tx_electrical_idle)
        back = partner.step(None if electrical_idle else symbol)
        if until is not None and until():
            return cycle + 1
    return cycles
