"""USB 2.0 telemetry in block RAM: the words the host reads, in protocol order, exact.

The full feature set (every counter group) is checked word for word; the lean default counts
the same core words and reads 0 for the groups it leaves out.
"""

import random

from amaranth import Elaboratable, Module
from amaranth.sim import Simulator
from busprobe.gateware.usb2.telemetry import Usb2Telemetry
from busprobe.protocol import usb2

from .flipflop_telemetry import FlipFlopTelemetry

NAMES = [name for name, _ in usb2.TELEMETRY]
#: Words of the groups the lean default leaves out.
ABSENT = [name for names in usb2.FEATURE_WORDS.values() for name in names]
#: Cycles to let pass after a SOF in these tests: a bus has 7,500 between two, and a SOF
#: sooner than a round or two after the last does not move the window (by design).
AFTER_SOF = 100


async def pulse(ctx, *assignments):
    for signal, value in assignments:
        ctx.set(signal, value)
    await ctx.tick("usb")
    for signal, _ in assignments:
        ctx.set(signal, 0)


async def packet(ctx, ep, length, *also):
    """An ACKed data packet of ``length`` bytes. It crosses the wire first, PID, payload and
    CRC16 a byte a cycle (60 MHz ULPI, 8 bits): the telemetry's pending byte counts are sized
    for traffic a bus can carry (a whole packet at once, then a byte a cycle), not for packets
    back to back."""
    await ctx.tick("usb").repeat(length + 3)
    await pulse(ctx, (ep.acked, 1), (ep.acked_length, length), *also)


async def sof(ctx, dut):
    await pulse(ctx, (dut.sof, 1))
    await ctx.tick("usb").repeat(AFTER_SOF)


async def read_snapshot(ctx, dut):
    """Take a snapshot as GET_TELEMETRY does and read it word by word: ``{name: value}``."""
    await pulse(ctx, (dut.capture, 1))
    for _ in range(300):
        if ctx.get(dut.ready):
            break
        await ctx.tick("usb")
    else:
        raise AssertionError("snapshot never became ready")
    words = []
    for index in range(usb2.TELEMETRY_WORDS):
        ctx.set(dut.read_address, index)
        await ctx.tick("usb")
        words.append(ctx.get(dut.read_data))
    return dict(zip(NAMES, words, strict=True))


def run(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(1 / 60e6, domain="usb")
    sim.add_testbench(testbench)
    sim.run()


def test_telemetry_words_decode_by_protocol_layout_to_the_events_counted():
    dut = Usb2Telemetry(features=usb2.ALL_FEATURES)
    seen = {}

    async def testbench(ctx):
        await ctx.tick("usb").repeat(10)
        await pulse(ctx, (dut.ep_in.packet_start, 1))
        for length in (512, 512, 100, 0):
            await pulse(ctx, (dut.ep_in.token, 1))
            await packet(ctx, dut.ep_in, length)
        await sof(ctx, dut)                                  # microframe 1 ends: 4 IN tokens
        await pulse(ctx, (dut.ep_in.token, 1))
        await pulse(ctx, (dut.ep_in.nak, 1))
        await pulse(ctx, (dut.ep_out.token, 1))
        await pulse(ctx, (dut.ep_out.packet_start, 1))
        await packet(ctx, dut.ep_out, 512)
        await pulse(ctx, (dut.ep_out.token, 1))
        await packet(ctx, dut.ep_out, 3)
        await pulse(ctx, (dut.ep_out.nak, 1))
        await pulse(ctx, (dut.ping, 1))
        await sof(ctx, dut)                                  # microframe 2 ends
        await sof(ctx, dut)                                  # microframe 3: no data
        ctx.set(dut.pattern_errors, 7)
        ctx.set(dut.first_error_offset, 1234)
        seen.update(usb2.unpack_telemetry(usb2.pack_telemetry(await read_snapshot(ctx, dut))))
        await pulse(ctx, (dut.clear, 1))
        seen["after_clear"] = await read_snapshot(ctx, dut)

    run(dut, testbench)

    assert seen["magic"] == usb2.MAGIC and seen["version"] == usb2.PROTOCOL_VERSION
    assert (seen["in_bytes"], seen["in_packets"], seen["in_short"], seen["in_zlps"]) == \
        (1124, 3, 1, 1)
    assert (seen["in_tokens"], seen["in_tokens_max_uframe"], seen["in_naks"]) == (5, 4, 1)
    assert (seen["out_bytes"], seen["out_packets"], seen["out_short"], seen["out_zlps"]) == \
        (515, 2, 1, 0)
    assert (seen["out_tokens"], seen["out_tokens_max_uframe"], seen["out_naks"]) == (2, 2, 1)
    assert (seen["pings"], seen["out_nyets"], seen["sofs"], seen["data_uframes"]) == (1, 0, 3, 2)
    assert (seen["pattern_errors"], seen["first_error_offset"]) == (7, 1234)
    assert 10 <= seen["in_first_cycle"] < seen["in_last_cycle"] < seen["out_first_cycle"] \
        < seen["out_last_cycle"]
    cleared = dict(seen["after_clear"])
    assert cleared.pop("magic") == usb2.MAGIC and cleared.pop("version") == usb2.PROTOCOL_VERSION
    # The checker's values are inputs (cleared by the checker itself); everything else is zero.
    assert {k: v for k, v in cleared.items() if k not in ("pattern_errors",
                                                          "first_error_offset")} == \
        dict.fromkeys(set(cleared) - {"pattern_errors", "first_error_offset"}, 0)


def test_timing_window_spans_whole_microframes_without_the_first_and_last_data_ones():
    dut = Usb2Telemetry()
    seen = {}

    async def testbench(ctx):
        await ctx.tick("usb").repeat(4)
        for packets in (2, 3, 1, 0, 1):  # IN packets of 512 B per microframe, then its SOF
            for _ in range(packets):
                await packet(ctx, dut.ep_in, 512)
            await packet(ctx, dut.ep_out, 8)
            await sof(ctx, dut)
        seen.update(await read_snapshot(ctx, dut))

    run(dut, testbench)

    # IN moved data in microframes 0, 1, 2 and 4 (SOF counts 0..4 at their ends): the window runs
    # from the end of microframe 0 to the end of microframe 2, the second-to-last with data.
    assert (seen["in_window_start_bytes"], seen["in_window_start_uframe"]) == (1024, 0)
    assert (seen["in_window_end_bytes"], seen["in_window_end_uframe"]) == (3072, 2)
    # OUT moved 8 bytes in every one of the five microframes.
    assert (seen["out_window_start_bytes"], seen["out_window_start_uframe"]) == (8, 0)
    assert (seen["out_window_end_bytes"], seen["out_window_end_uframe"]) == (32, 3)


class BothTelemetries(Elaboratable):
    """The block-RAM telemetry and the flip-flop one it replaced, fed the same inputs."""

    def __init__(self, features):
        self.dut = Usb2Telemetry(features=features)
        self.reference = FlipFlopTelemetry()

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut, m.submodules.reference = self.dut, self.reference
        dut, ref = self.dut, self.reference
        for name in ("clear", "sof", "ping", "nyet", "out_duplicate", "pattern_errors",
                     "first_error_offset"):
            m.d.comb += getattr(ref, name).eq(getattr(dut, name))
        for name in ("token", "nak", "packet_start", "acked", "acked_length"):
            for ep in ("ep_in", "ep_out"):
                m.d.comb += getattr(getattr(ref, ep), name).eq(getattr(getattr(dut, ep), name))
        for name in ("packet", "bad_pid", "malformed", "crc_error", "foreign"):
            m.d.comb += getattr(ref.rx, name).eq(getattr(dut.rx, name))
        return m


def compare_with_the_flip_flop_design(features, rounds):
    """Random traffic paced as a bus paces it (an event at most every 8 cycles per source, SOFs
    hundreds of cycles apart, clears now and then), a snapshot after each of ``rounds``:
    ``[(round, words the host reads, live words of the flip-flop design)]``."""
    both = BothTelemetries(features)
    dut, ref = both.dut, both.reference
    rng = random.Random(2026)
    snapshots = []

    async def traffic(ctx, cycles):
        """About ``cycles`` cycles of bus traffic, a transaction at a time in slots of at least
        8 cycles; a data packet's slot lasts as long as its bytes take on the wire."""
        elapsed, next_sof = 0, rng.randrange(150, 900)
        while elapsed < cycles:
            ep = rng.choice((dut.ep_in, dut.ep_out))
            choice = rng.random()
            strobes = [(dut.rx.packet, 1)]
            if choice < 0.35:
                strobes += [(ep.token, 1), (ep.packet_start, 1)]
                await pulse(ctx, *strobes)
                gap = rng.randrange(6, 12)
                await ctx.tick("usb").repeat(gap)
                length = rng.choice((512, 512, 512, 0, rng.randrange(1, 512)))
                await packet(ctx, ep, length, (dut.rx.packet, 1))
                elapsed += 5 + gap + length
                strobes = []
            elif choice < 0.5:
                strobes += [(ep.token, 1), (ep.nak, 1)]
            elif choice < 0.55:
                strobes += [(dut.ping, 1), (dut.nyet, rng.random() < 0.5)]
            elif choice < 0.65:
                strobes += [(rng.choice((dut.rx.bad_pid, dut.rx.malformed, dut.rx.crc_error,
                                         dut.rx.foreign)), 1)]
            elif choice < 0.68:
                strobes += [(dut.out_duplicate, 1)]
            if elapsed >= next_sof:
                strobes += [(dut.sof, 1)]
                next_sof = elapsed + rng.randrange(150, 900)
            await pulse(ctx, *strobes)
            await ctx.tick("usb").repeat(7)
            elapsed += 8

    async def testbench(ctx):
        for round_ in range(rounds):
            ctx.set(dut.pattern_errors, rng.randrange(2 ** 32))
            ctx.set(dut.first_error_offset, rng.randrange(2 ** 32))
            if round_ in CLEARS:
                await pulse(ctx, (dut.clear, 1))
            await traffic(ctx, rng.randrange(1000, 8000))
            got = await read_snapshot(ctx, dut)
            want = dict(zip(NAMES, (ctx.get(ref.words[i]) for i in range(len(NAMES))),
                            strict=True))
            snapshots.append((round_, got, want))

    run(both, testbench)
    return snapshots


#: The time stamps: the RAM's count cycles from the time base's origin, the flip-flop design's
#: from reset; the two differ by one constant until a clear moves the time base's origin.
STAMPS = ("in_first_cycle", "in_last_cycle", "out_first_cycle", "out_last_cycle")
CLEARS = (4, 9)   # the rounds of compare_with_the_flip_flop_design that clear


def stamp_offsets(snapshots, names):
    """``{epoch: offsets}``: the differences of the stamps taken (0 is none) between two
    clears, as signed numbers; each epoch must have at most one."""
    epochs: dict[int, set[int]] = {}
    for round_, got, want in snapshots:
        epoch = sum(round_ >= clear for clear in CLEARS)
        for name in names:
            assert (got[name] == 0) == (want[name] == 0), (round_, name, got[name], want[name])
            if want[name]:
                difference = (got[name] - want[name]) % 2 ** 32
                epochs.setdefault(epoch, set()).add(difference - (difference >> 31 << 32))
    return epochs


def test_block_ram_words_equal_the_flip_flop_design_under_random_bus_traffic():
    """Every counter group built: at each of many snapshots every word the host reads equals
    the live word of the flip-flop design, bytes and windows included; the time stamps differ
    from it by one small constant between two clears (their origin)."""
    snapshots = compare_with_the_flip_flop_design(usb2.ALL_FEATURES, rounds=12)
    for round_, got, want in snapshots:
        differ = {name: (got[name], want[name]) for name in NAMES
                  if got[name] != want[name] and name not in STAMPS}
        assert not differ, f"snapshot {round_}: {differ}"
    offsets = stamp_offsets(snapshots, STAMPS)
    assert len(offsets) == len(CLEARS) + 1
    assert all(len(values) == 1 and abs(next(iter(values))) < 256 for values in offsets.values()), \
        offsets
    assert any(want["in_window_end_uframe"] > want["in_window_start_uframe"]
               for _, _, want in snapshots)
    assert sum(want["in_bytes"] + want["out_bytes"] for _, _, want in snapshots) > 100_000
    # Every optional counter counted something, so its equality means something.
    assert {name for name in ABSENT if any(want[name] for _, _, want in snapshots)} == \
        set(ABSENT)


def test_the_lean_build_counts_its_words_as_the_reference_and_reads_0_for_the_rest():
    """The same traffic, fewer rounds: the words the build counts equal the reference's, the
    words of a group left out read 0 although the reference counted them."""
    snapshots = compare_with_the_flip_flop_design(usb2.NO_FEATURES, rounds=3)
    present = usb2.present_words(usb2.NO_FEATURES)
    absent = [name for name in NAMES if name not in present]
    for round_, got, want in snapshots:
        differ = {name: (got[name], want[name]) for name in present
                  if got[name] != want[name] and name not in STAMPS}
        assert not differ, f"snapshot {round_}: {differ}"
        assert {name: got[name] for name in absent} == dict.fromkeys(absent, 0)
    assert all(len(values) == 1 for values in stamp_offsets(snapshots, STAMPS).values())
    assert absent and all(snapshots[-1][2][name] for name in absent)
