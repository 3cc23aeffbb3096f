"""The DCU-side gearbox (Amaranth simulation): words sent come back whole through a looped-back
DCU interface, scrambled on the wire and descrambled; decode errors are flagged; a word the
link does not have is sent as electrical idle and counted."""

import random

from busprobe.gateware.pcie.soft.symbol_crossing import DECODE_ERROR
from busprobe.gateware.pcie.soft.symbol_stream import LANES
from busprobe.gateware.pcie.soft.word_gearbox import WordGearbox
from busprobe.protocol.pcie_scrambler import Scrambler as ReferenceScrambler
from busprobe.protocol.pcie_symbols import LOGICAL_IDLE, KCode
from busprobe.sim.pcie.symbol.amaranth_bench import simulate


def traffic(rng: random.Random, words: int) -> list[list[int]]:
    """A COM word (both scramblers start from it), then data, K-codes and idle."""
    out = [[KCode.COM, KCode.PAD, KCode.PAD, 0x10]]
    for _ in range(words):
        out.append([rng.choice((rng.randrange(256), LOGICAL_IDLE, KCode.STP, KCode.END))
                    for _ in range(LANES)])
    return out


def run(words: list[list[int]], *, starve: frozenset[int] = frozenset(),
        corrupt: frozenset[int] = frozenset()):
    """Send ``words`` (skipping the turns in ``starve``) looped back; what the DCU was given,
    the words received, their error flags, and the underflow count."""
    dut = WordGearbox()
    wire: list[tuple[int, int, int]] = []
    got: list[list[int]] = []
    flags: list[list[int]] = []
    result = {}

    async def transmit(ctx):
        index, turn = 0, 0
        while index < len(words):
            if ctx.get(dut.tx.ready):
                ready_turn = turn
                turn += 1
                if ready_turn in starve:
                    ctx.set(dut.tx.valid, 0)
                else:
                    ctx.set(dut.tx.valid, 1)
                    for lane, symbol in enumerate(words[index]):
                        ctx.set(dut.tx.p.symbols[lane], symbol)
                    index += 1
            await ctx.tick()
        result["underflows"] = ctx.get(dut.tx_underflows)  # before the link stops sending
        ctx.set(dut.tx.valid, 0)
        await ctx.tick().repeat(8)

    async def loop(ctx):
        clock = 0
        async for _, _, data, datak, idle, valid, word in ctx.tick().sample(
                dut.serdes_tx_data, dut.serdes_tx_datak, dut.serdes_tx_idle, dut.rx.valid,
                dut.rx.p):
            wire.append((data, datak, idle))
            if clock in corrupt:  # the DCU's decoder saw a bad code in half 0
                data, datak = (data & 0xFF00) | (DECODE_ERROR & 0xFF), datak | 1
            ctx.set(dut.serdes_rx_data, data)
            ctx.set(dut.serdes_rx_datak, datak)
            ctx.set(dut.serdes_rx_valid, not idle)
            clock += 1
            if valid:
                got.append([word[lane].symbol for lane in range(LANES)])
                flags.append([word[lane].error for lane in range(LANES)])

    simulate(dut, transmit, loop)
    return wire, got, flags, result


def flat(words):
    return [symbol for word in words for symbol in word]


def test_words_come_back_whole_in_order_and_the_wire_is_scrambled():
    words = traffic(random.Random(1), 200)
    wire, got, _, result = run(words)
    received = flat(got)
    start = received.index(KCode.COM)
    assert received[start:start + len(flat(words))] == flat(words)
    assert result["underflows"] == 0
    # On the wire: two symbols a clock, each word's data scrambled as the reference does.
    sent = [(d >> 8 * i & 0xFF) | (k >> i & 1) << 8 for d, k, idle in wire if not idle
            for i in range(2)]
    first = sent.index(KCode.COM)
    reference = ReferenceScrambler()
    assert sent[first:first + len(flat(words))] == [reference.symbol(s) for s in flat(words)]


def test_a_word_the_link_does_not_have_is_electrical_idle_and_counted():
    words = traffic(random.Random(2), 20)
    wire, _, _, result = run(words, starve=frozenset({6, 7}))
    assert result["underflows"] == 2
    idle_clocks = [i for i, (_, _, idle) in enumerate(wire) if idle]
    # Two missing words are four DCU clocks of electrical idle in a row, after the first word.
    assert any(idle_clocks[i:i + 4] == list(range(c, c + 4)) for i, c in enumerate(idle_clocks)
               if c > 4)


def test_a_decode_error_is_flagged_on_its_symbol():
    words = traffic(random.Random(3), 40)
    _, got, flags, _ = run(words, corrupt=frozenset({30}))
    flagged = [(w, lane) for w, word in enumerate(flags) for lane, f in enumerate(word) if f]
    assert len(flagged) == 1
    w, lane = flagged[0]
    # Half 0 of a DCU clock is lane 0 or 2 of a word; a K-code is never descrambled.
    assert lane in (0, 2) and got[w][lane] == DECODE_ERROR
