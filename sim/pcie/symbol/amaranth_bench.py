"""Runs the symbol-level root port against the soft endpoint's link in Amaranth's simulator."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from amaranth.sim import Simulator
from busprobe.gateware.pcie.soft.ltssm import LtssmTiming
from busprobe.protocol.pcie_config import TlpKind

from .partner_dll import DlState
from .word_exchange import WordExchange

__all__ = ["SIM_TIMING", "SYMBOL_PERIOD", "WORD_PERIOD", "simulate", "send_tlps",
           "collect_tlps", "receive_tlps", "send_dllp", "until_dl_active"]

#: One symbol time at 2.5 GT/s.
SYMBOL_PERIOD = 4e-9
#: The link's clock at 2.5 GT/s, a word of four symbols each way every clock (62.5 MHz): the
#: clock every soft-endpoint simulation runs at.
WORD_PERIOD = 4 * SYMBOL_PERIOD

#: The LTSSM's timeouts and Polling.Active's TS1 count scaled down for simulation (thousands of
#: clocks instead of milliseconds, 16 TS1s instead of 1024): the same state machine.
SIM_TIMING = LtssmTiming(detect_quiet=100, polling_active=2000, polling_configuration=4000,
                         configuration=2000, short=1000, recovery_lock=2000,
                         recovery_configuration=4000, polling_ts1_min=16)


def simulate(dut, main, *background) -> None:
    """Run testbench ``main(ctx)`` (and ``background`` ones beside it) on ``dut``'s ``sync``
    clock at :data:`WORD_PERIOD` until ``main`` returns."""
    sim = Simulator(dut)
    sim.add_clock(WORD_PERIOD)
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


async def until_dl_active(ctx, exchange: WordExchange, *, cycles: int = 8000) -> int:
    """Train and initialise flow control until both ends are DL_Active."""
    link, partner = exchange.link, exchange.partner
    return await exchange.run(ctx, cycles=cycles, until=lambda: bool(
        ctx.get(link.dl_active)) and partner.dll.state == DlState.ACTIVE)
