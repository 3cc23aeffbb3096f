"""Runs the symbol-level root port against the soft endpoint's link in Amaranth's simulator."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from amaranth.sim import Simulator
from busprobe.gateware.pcie.soft.ltssm import LtssmTiming
from busprobe.gateware.pcie.soft.soft_link import SoftLink
from busprobe.protocol.pcie_config import TlpKind

from .partner import RootPortPartner
from .partner_dll import DlState
from .polarity import as_inverted
from .wire_faults import WireFaults

__all__ = ["SymbolExchange", "SIM_TIMING", "SYMBOL_PERIOD", "simulate", "send_tlps",
           "collect_tlps", "receive_tlps", "send_dllp", "until_dl_active"]

#: One symbol time at 2.5 GT/s, the clock every soft-endpoint simulation runs at.
SYMBOL_PERIOD = 4e-9

#: The LTSSM's timeouts and Polling.Active's TS1 count scaled down for simulation (thousands of
#: symbol times instead of milliseconds, 16 TS1s instead of 1024): the same state machine.
SIM_TIMING = LtssmTiming(detect_quiet=100, polling_active=2000, polling_configuration=4000,
                         configuration=2000, short=1000, recovery_lock=2000,
                         recovery_configuration=4000, polling_ts1_min=16)


class SymbolExchange:
    """Clocks a :class:`RootPortPartner` against a link, one symbol each way per clock.

    Keeps the symbol the partner has produced but the link has not yet received between
    :meth:`run` calls, so a test can stop, poke the link or the partner, and go on without a
    symbol lost.

    Parameters
    ----------
    link: the endpoint's link (a :class:`~busprobe.gateware.pcie.soft.soft_link.SoftLink` or
        anything with its ``rx``/``tx`` ports).
    partner: the root port.
    faults: symbol errors on the wire both ways (off until ``faults.enabled``).
    inverted_lane: the partner-to-endpoint pair is swapped; what the endpoint receives is
        :func:`~.polarity.as_inverted` until the link raises ``invert_polarity``.
    """

    def __init__(self, link: SoftLink, partner: RootPortPartner, *,
                 faults: WireFaults | None = None, inverted_lane: bool = False):
        self.link, self.partner, self.faults = link, partner, faults
        self.inverted_lane = inverted_lane
        self._back: int | None = None
        self._started = False

    async def run(self, ctx, *, cycles: int, until: Callable[[], bool] | None = None,
                  each: Callable[[int], None] | None = None,
                  receiver_detected: bool = True) -> int:
        """Clock ``cycles`` symbol times (or until ``until()``).

        The endpoint's transmitter in electrical idle reaches the partner as ``None``; the
        partner's ``None`` holds the endpoint's receiver in electrical idle. ``each(cycle)``
        runs before every clock edge (to sample the endpoint's strobes); ``receiver_detected``
        is what the endpoint's receiver detection finds. Returns the cycles run.
        """
        link, partner = self.link, self.partner
        ctx.set(link.receiver_detected, receiver_detected)
        ctx.set(link.tx.ready, 1)
        if not self._started:
            self._back, self._started = partner.step(None), True
        faults = self.faults
        for cycle in range(cycles):
            back, error = (self._back, False) if faults is None else \
                faults.to_endpoint(self._back)
            if self.inverted_lane and not ctx.get(link.invert_polarity):
                back, error = as_inverted(back)
            ctx.set(link.rx_electrical_idle, back is None)
            ctx.set(link.rx.valid, back is not None)
            ctx.set(link.rx.p, {"symbol": back or 0, "error": error})
            if each is not None:
                each(cycle)
            # What the endpoint sends is read at the clock edge, not before it: another
            # testbench (one feeding the framer) may change it in between.
            _, _, symbol, electrical_idle = await ctx.tick().sample(link.tx.p.symbol,
                                                                    link.tx_electrical_idle)
            sent = None if electrical_idle else symbol
            if faults is not None:
                sent = faults.to_partner(sent)
            self._back = partner.step(sent)
            if until is not None and until():
                return cycle + 1
        return cycles


def simulate(dut, main, *background) -> None:
    """Run testbench ``main(ctx)`` (and ``background`` ones beside it) on ``dut``'s ``sync``
    clock at :data:`SYMBOL_PERIOD` until ``main`` returns."""
    sim = Simulator(dut)
    sim.add_clock(SYMBOL_PERIOD)
    sim.add_testbench(main)
    for testbench in background:
        sim.add_testbench(testbench, background=True)
    sim.run()


def as_completion(body: bytes) -> bytes:
    """An opaque test TLP body with byte 0 made a Cpl's Fmt/Type: the endpoint sends it
    within the partner's completion credits, which a root port advertises infinite, so a
    partner that never sends UpdateFC does not hold it (any other byte 0 would be counted
    against posted or non-posted credits by ``TxCredits``)."""
    return bytes([TlpKind.CPL]) + body[1:]


async def send_tlps(ctx, tlp_stream, bodies: Iterable[bytes], *,
                    nullify: Callable[[int], bool] = lambda index: False,
                    unit_bytes: int = 1) -> None:
    """Offer each TLP on a stream of ``TLP_BYTE`` (or, ``unit_bytes`` 4, of DWs with the same
    fields, byte 0 in bits 7:0), byte 0 first, holding ``valid`` from its first unit to its
    last as the framer requires; ``nullify(index)`` marks TLPs to nullify."""
    for index, body in enumerate(bodies):
        units = [int.from_bytes(body[i:i + unit_bytes], "little")
                 for i in range(0, len(body), unit_bytes)]
        for i, unit in enumerate(units):
            last = i == len(units) - 1
            ctx.set(tlp_stream.payload,
                    {"data": unit, "last": last, "nullify": last and nullify(index)})
            ctx.set(tlp_stream.valid, 1)
            await ctx.tick().until(tlp_stream.ready)
        ctx.set(tlp_stream.valid, 0)


async def collect_tlps(ctx, tlp_stream, got: list[bytes], *, unit_bytes: int = 1) -> None:
    """Take whole TLPs from a stream of bytes (or, ``unit_bytes`` 4, DWs, byte 0 in bits 7:0)
    with ``last`` into ``got``, forever (always ready), and fail if one pauses between its
    first and last unit."""
    current = bytearray()
    while True:
        ctx.set(tlp_stream.ready, 1)
        _, _, valid, unit, last = await ctx.tick().sample(
            tlp_stream.valid, tlp_stream.payload.data, tlp_stream.payload.last)
        if current:
            assert valid, "a TLP paused between its first and last byte"
        if valid:
            current.extend(unit.to_bytes(unit_bytes, "little"))
            if last:
                got.append(bytes(current))
                current = bytearray()


async def receive_tlps(ctx, dut, bodies: Iterable[bytes],
                       accepted: Callable[[int], bool] = lambda index: True, *,
                       unit_bytes: int = 1) -> None:
    """Hand ``bodies`` to a block behind the data link layer as it hands over received TLPs:
    ``rx_tlp`` a byte a clock (``first`` on byte 0; or, ``unit_bytes`` 4, a DW a clock, byte 0
    in bits 7:0), then ``rx_accept`` for a cycle with the link layer's verdict
    ``accepted(index)``, then a gap for the framing before the next TLP: six clocks of bytes,
    one of DWs (the gap no longer than the framing's symbols at four a clock)."""
    for index, body in enumerate(bodies):
        for i in range(0, len(body), unit_bytes):
            ctx.set(dut.rx_tlp.valid, 1)
            ctx.set(dut.rx_tlp.payload, {"data": int.from_bytes(body[i:i + unit_bytes], "little"),
                                         "first": i == 0})
            await ctx.tick()
        ctx.set(dut.rx_tlp.valid, 0)
        ctx.set(dut.rx_accept, accepted(index))
        await ctx.tick()
        ctx.set(dut.rx_accept, 0)
        await ctx.tick().repeat(6 if unit_bytes == 1 else 1)


async def send_dllp(ctx, dllp_stream, dllp: bytes) -> None:
    """Offer one 4-byte DLLP on a 32-bit DLLP stream (byte 0 in bits 7:0) until taken."""
    ctx.set(dllp_stream.payload, int.from_bytes(dllp, "little"))
    ctx.set(dllp_stream.valid, 1)
    await ctx.tick().until(dllp_stream.ready)
    ctx.set(dllp_stream.valid, 0)


async def until_dl_active(ctx, exchange: SymbolExchange, *, cycles: int = 8000) -> int:
    """Train and initialise flow control until both ends are DL_Active."""
    link, partner = exchange.link, exchange.partner
    return await exchange.run(ctx, cycles=cycles, until=lambda: bool(
        ctx.get(link.dl_active)) and partner.dll.state == DlState.ACTIVE)
