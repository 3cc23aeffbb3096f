"""The PHY's gearbox between the link's words and the DCU's two symbols a clock (Amaranth
simulation, two clocks: the link's at a word a 16 ns tick, the DCU's at 8 ns, offset by 1.3 ns):
words sent come back whole through a looped-back DCU interface, scrambled on the wire and
descrambled; decode errors are flagged; a word the link does not have is sent as electrical
idle and counted; neither FIFO runs empty or over once primed."""

import random

from busprobe.gateware.pcie.soft.symbol_stream import LANES
from busprobe.gateware.pcie.soft.word_gearbox import DECODE_ERROR, WordGearbox
from busprobe.protocol.pcie_scrambler import Scrambler as ReferenceScrambler
from busprobe.protocol.pcie_symbols import LOGICAL_IDLE, KCode
from busprobe.sim.pcie.symbol.serdes_bench import simulate_with_serdes


def traffic(rng: random.Random, words: int) -> list[list[int]]:
    """A COM word (both scramblers start from it), then data, K-codes and idle."""
    out = [[KCode.COM, KCode.PAD, KCode.PAD, 0x10]]
    for _ in range(words):
        out.append([rng.choice((rng.randrange(256), LOGICAL_IDLE, KCode.STP, KCode.END))
                    for _ in range(LANES)])
    return out


def run(words: list[list[int]], *, starve: frozenset[int] = frozenset(),
        corrupt: frozenset[int] = frozenset(), unlocked: frozenset[int] = frozenset()):
    """Send ``words`` (skipping the slots in ``starve``) looped back at the DCU's interface
    (a DCU clock in ``unlocked`` is received without ``serdes_rx_valid``); what the DCU was
    given, the words received, their error flags, and the gearbox's counters."""
    dut = WordGearbox()
    wire: list[tuple[int, int, int]] = []
    got: list[list[int]] = []
    flags: list[list[int]] = []
    result = {}

    async def transmit(ctx):
        index, slot = 0, 0
        while index < len(words):
            if ctx.get(dut.tx.ready):
                this_slot, slot = slot, slot + 1
                if this_slot in starve:
                    ctx.set(dut.tx.valid, 0)
                else:
                    ctx.set(dut.tx.valid, 1)
                    for lane, symbol in enumerate(words[index]):
                        ctx.set(dut.tx.p.symbols[lane], symbol)
                    index += 1
            await ctx.tick()
        result["underflows"] = ctx.get(dut.tx_underflows)  # before the link stops sending
        ctx.set(dut.tx.valid, 0)
        await ctx.tick().repeat(16)
        result["serdes_underflows"] = ctx.get(dut.serdes_underflows)
        result["rx_overflows"] = ctx.get(dut.rx_overflows)

    async def loop(ctx):
        clock = 0
        async for _, _, data, datak, idle in ctx.tick("pclk").sample(
                dut.serdes_tx_data, dut.serdes_tx_datak, dut.serdes_tx_idle):
            wire.append((data, datak, idle))
            if clock in corrupt:  # the DCU's decoder saw a bad code in half 0
                data, datak = (data & 0xFF00) | (DECODE_ERROR & 0xFF), datak | 1
            ctx.set(dut.serdes_rx_data, data)
            ctx.set(dut.serdes_rx_datak, datak)
            ctx.set(dut.serdes_rx_valid, not idle and clock not in unlocked)
            clock += 1

    async def receive(ctx):
        async for _, _, valid, word in ctx.tick().sample(dut.rx.valid, dut.rx.p):
            if valid:
                got.append([word[lane].symbol for lane in range(LANES)])
                flags.append([word[lane].error for lane in range(LANES)])

    simulate_with_serdes(dut, transmit, loop, receive)
    return wire, got, flags, result


def flat(words):
    return [symbol for word in words for symbol in word]


def test_words_come_back_whole_in_order_and_the_wire_is_scrambled():
    words = traffic(random.Random(1), 200)
    wire, got, _, result = run(words)
    received = flat(got)
    start = received.index(KCode.COM)
    assert received[start:start + len(flat(words))] == flat(words)
    assert result == {"underflows": 0, "serdes_underflows": 0, "rx_overflows": 0}
    # On the wire: two symbols a DCU clock, each word's data scrambled as the reference does,
    # with no gap once the first word is out (the FIFO, once primed, never runs empty).
    sent = [(d >> 8 * i & 0xFF) | (k >> i & 1) << 8 for d, k, idle in wire if not idle
            for i in range(2)]
    first = sent.index(KCode.COM)
    reference = ReferenceScrambler()
    assert sent[first:first + len(flat(words))] == [reference.symbol(s) for s in flat(words)]
    busy = [idle for _, _, idle in wire]
    start = busy.index(0)
    assert not any(busy[start:start + 2 * len(words)])


def test_a_word_the_link_does_not_have_is_electrical_idle_and_counted():
    words = traffic(random.Random(2), 20)
    wire, _, _, result = run(words, starve=frozenset({6, 7}))
    assert result["underflows"] == 2 and result["serdes_underflows"] == 0
    idle = [i for i, (_, _, is_idle) in enumerate(wire) if is_idle]
    start = next(i for i, (_, _, is_idle) in enumerate(wire) if not is_idle)
    # Two missing words are four DCU clocks of electrical idle in a row, after the first word.
    assert any(idle[i:i + 4] == list(range(c, c + 4)) for i, c in enumerate(idle) if c > start)


def test_a_decode_error_is_flagged_on_its_symbol():
    words = traffic(random.Random(3), 40)
    _, got, flags, _ = run(words, corrupt=frozenset({40}))
    flagged = [(w, lane) for w, word in enumerate(flags) for lane, f in enumerate(word) if f]
    assert len(flagged) == 1
    w, lane = flagged[0]
    # Half 0 of a DCU clock is lane 0 or 2 of a word; a K-code is never descrambled.
    assert lane in (0, 2) and got[w][lane] == DECODE_ERROR


def test_a_clock_without_lock_restarts_the_pairing_with_the_next_half():
    """The half held when the DCU's receiver drops lock is dropped, so what follows is paired
    from the next valid half: the words come out shifted by half a word, none lost after it."""
    words = traffic(random.Random(4), 60)
    words[40] = [KCode.COM, KCode.PAD, KCode.PAD, 0x10]  # the descrambler starts again here
    _, got, _, result = run(words, unlocked=frozenset({41}))
    received = flat(got)
    # The last word's second half is never paired (nothing follows it on the wire).
    tail = flat(words)[40 * LANES:-2]
    assert any(received[i:i + len(tail)] == tail for i in range(len(received)))
    assert result["rx_overflows"] == 0
