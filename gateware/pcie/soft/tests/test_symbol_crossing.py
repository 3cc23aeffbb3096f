"""The PHY's gearbox and clock crossing, with its scrambler (Amaranth simulation, two clocks).

The link's clock runs at one symbol a tick (4 ns) and the SerDes' at two (8 ns), offset by
1.3 ns; both are ideal, as both come from one reference on a board.
"""

import random

from busprobe.gateware.pcie.soft.symbol_crossing import DECODE_ERROR, SymbolCrossing
from busprobe.protocol.pcie_scrambler import scramble
from busprobe.protocol.pcie_symbols import KCode
from busprobe.sim.pcie.symbol.serdes_bench import simulate_with_serdes

from .test_scrambler import link_stream


def received(wire: list[int], *, gaps: float = 0.0, seed: int = 0):
    """Feed ``wire`` (two symbols a SerDes clock, some clocks not valid) and return what the link
    side hands out: (symbol, error) for every valid symbol."""
    dut = SymbolCrossing()
    rng = random.Random(seed)
    got: list[tuple[int, int]] = []

    async def serdes(ctx):
        words = [wire[i:i + 2] for i in range(0, len(wire), 2)]
        while words:
            valid = rng.random() >= gaps
            ctx.set(dut.serdes_rx_valid, valid)
            if valid:
                a, b = words.pop(0)
                ctx.set(dut.serdes_rx_data, (a & 0xFF) | (b & 0xFF) << 8)
                ctx.set(dut.serdes_rx_datak, a >> 8 | (b >> 8) << 1)
            else:  # what the DCU gives before lock: anything, a COM included
                ctx.set(dut.serdes_rx_data, 0xBCBC)
                ctx.set(dut.serdes_rx_datak, 3)
            await ctx.tick("pclk")
        ctx.set(dut.serdes_rx_valid, 0)

    async def link(ctx):
        for _ in range(len(wire) * 3 + 50):
            _, _, valid, symbol, error = await ctx.tick().sample(
                dut.rx.valid, dut.rx.p.symbol, dut.rx.p.error)
            if valid:
                got.append((symbol, error))
        assert ctx.get(dut.rx_overflows) == 0

    simulate_with_serdes(dut, link, serdes)
    return got


def test_the_link_receives_the_descrambled_stream_whichever_half_a_com_lands_in():
    """SKP sets of 1 to 5 SKPs (2 or 4 move the COMs after them to the other half of the DCU's
    words, as a clock compensation moving single SKPs does) and odd runs of data between ordered
    sets; decode errors keep their place and their flag."""
    rng = random.Random(11)
    stream = link_stream(rng, 2400)
    assert sum(1 for s in stream if s == KCode.COM) > 40
    for phase in (0, 1):
        sent = [KCode.IDL] * phase + stream
        sent += [KCode.IDL] * (len(sent) % 2)
        halves = {i % 2 for i, s in enumerate(sent) if s == KCode.COM}
        assert halves == {0, 1}  # COMs in both halves of a word, in both runs
        got = received(scramble(sent), gaps=0.05, seed=phase)
        assert [s for s, _ in got] == sent, phase
        assert [e for _, e in got] == [int(s == DECODE_ERROR) for s in sent]


def transmitted(symbols: list[int], idle: list[bool]):
    """Offer ``symbols`` to the link side (a symbol a clock while ready, ``idle`` its electrical
    idle flag) and return the SerDes side's words: (symbol 0, symbol 1, idle)."""
    dut = SymbolCrossing()
    words: list[tuple[int, int, int]] = []

    async def link(ctx):
        for symbol, flag in zip(symbols, idle, strict=True):
            ctx.set(dut.tx.valid, 1)
            ctx.set(dut.tx.p.symbol, symbol)
            ctx.set(dut.tx_electrical_idle, flag)
            await ctx.tick().until(dut.tx.ready)
        ctx.set(dut.tx_electrical_idle, 1)  # then electrical idle, as a link would send
        while True:
            await ctx.tick()

    async def serdes(ctx):
        for _ in range(len(symbols) // 2 + 40):
            _, _, data, datak, tx_idle = await ctx.tick("pclk").sample(
                dut.serdes_tx_data, dut.serdes_tx_datak, dut.serdes_tx_idle)
            words.append(((data & 0xFF) | (datak & 1) << 8,
                          (data >> 8) | (datak >> 1) << 8, tx_idle))
        assert ctx.get(dut.tx_underflows) == 0

    simulate_with_serdes(dut, serdes, link)
    return words


def test_the_link_symbols_reach_the_dcu_in_order_scrambled_in_pairs_after_electrical_idle():
    rng = random.Random(12)
    stream = link_stream(rng, 2000)
    stream += [KCode.IDL] * (len(stream) % 2)
    idle_run = 40  # even: the first symbol of the stream is the first of a word
    words = transmitted([0] * idle_run + stream, [True] * idle_run + [False] * len(stream))
    flags = [w[2] for w in words]
    first = flags.index(0)
    # Electrical idle until the stream starts, then none until the stream ends.
    assert all(flags[:first]) and not any(flags[first:first + len(stream) // 2])
    on_wire = [s for w in words[first:first + len(stream) // 2] for s in w[:2]]
    assert on_wire == scramble(stream)
