"""The word-wide deframer (Amaranth simulation): TLPs and DLLPs framed by the protocol module's
reference functions, four symbols a word as the receive aligner gives them, come out as DWs and
DLLPs with their status, sequence number and counters."""

import random

from busprobe.gateware.pcie.soft.crc import WordCrc, reflected_step
from busprobe.gateware.pcie.soft.symbol_stream import LANES
from busprobe.gateware.pcie.soft.word_deframer import TlpStatus, WordDeframer
from busprobe.protocol.pcie_dll import LCRC_POLY, ack_dllp, frame_dllp, frame_tlp
from busprobe.protocol.pcie_symbols import LOGICAL_IDLE, KCode
from busprobe.sim.pcie.symbol.amaranth_bench import simulate

IDLE_WORD = [LOGICAL_IDLE] * LANES


def run(units: list[list[int]], *, errors: frozenset[int] = frozenset(), gaps: float = 0.3,
        seed: int = 0) -> dict:
    """TLPs (body bytes, first-DW flags, status, seq), DLLPs and counters from ``units``."""
    rng = random.Random(seed)
    symbols = [s for unit in units for s in unit] + IDLE_WORD * 3
    assert len(symbols) % LANES == 0
    words = [symbols[i:i + LANES] for i in range(0, len(symbols), LANES)]
    dut = WordDeframer(max_payload=512)
    out = {"tlps": [], "dllps": [], "bad_dllp": 0, "bad_symbol": 0}
    current = bytearray()

    async def main(ctx):
        index = 0
        while index < len(words):
            valid = rng.random() >= gaps
            ctx.set(dut.sink.valid, valid)
            if valid:
                for lane, symbol in enumerate(words[index]):
                    ctx.set(dut.sink.p[lane].symbol, symbol)
                    ctx.set(dut.sink.p[lane].error, LANES * index + lane in errors)
                index += 1
            await ctx.tick()
        ctx.set(dut.sink.valid, 0)
        await ctx.tick().repeat(4)

    async def collect(ctx):
        async for _, _, tv, dw, first, end, status, seq, dv, dllp, bad_dllp, bad_symbol in \
                ctx.tick().sample(dut.tlp.valid, dut.tlp.p.data, dut.tlp.p.first, dut.tlp_end,
                                  dut.tlp_status, dut.tlp_seq, dut.dllp.valid,
                                  dut.dllp.payload, dut.bad_dllp, dut.bad_symbol):
            if tv:
                assert bool(first) == (not current), "first on DW 0 only"
                current.extend(dw.to_bytes(4, "little"))
            if end:
                out["tlps"].append((bytes(current), TlpStatus(status), seq))
                current.clear()
            if dv:
                out["dllps"].append(dllp.to_bytes(4, "little"))
            out["bad_dllp"] += bad_dllp
            out["bad_symbol"] += bad_symbol

    simulate(dut, main, collect)
    return out


def tlp_body(rng: random.Random) -> bytes:
    return rng.randbytes(rng.choice((12, 16)) + 4 * rng.randrange(0, 33))


def test_word_crc_takes_one_to_four_bytes_a_clock_as_byte_steps_do():
    dut = WordCrc(width=32, poly=LCRC_POLY)
    rng = random.Random(1)
    chunks = [rng.randbytes(rng.randrange(0, 5)) for _ in range(60)]

    async def main(ctx):
        expected = 0xFFFF_FFFF
        ctx.set(dut.restart, 1)
        for chunk in chunks:
            ctx.set(dut.count, len(chunk))
            ctx.set(dut.data, int.from_bytes(chunk.ljust(4, b"\0"), "little"))
            for byte in chunk:
                expected = reflected_step(expected, byte, width=32, poly=LCRC_POLY)
            await ctx.tick()
            ctx.set(dut.restart, 0)
            assert ctx.get(dut.register) == expected

    simulate(dut, main)


def test_good_tlps_and_dllps_come_out_whole_with_their_sequence_numbers():
    rng = random.Random(2)
    bodies = [tlp_body(rng) for _ in range(12)]
    units = []
    for seq, body in enumerate(bodies):
        units += [frame_tlp(4000 + seq, body), frame_dllp(ack_dllp(seq)), IDLE_WORD]
    out = run(units)
    assert out["tlps"] == [(body, TlpStatus.GOOD, (4000 + seq) % 4096)
                           for seq, body in enumerate(bodies)]
    assert out["dllps"] == [ack_dllp(seq) for seq in range(len(bodies))]
    assert out["bad_dllp"] == out["bad_symbol"] == 0


def test_back_to_back_tlps_without_idle_between():
    rng = random.Random(3)
    bodies = [tlp_body(rng) for _ in range(6)]
    out = run([frame_tlp(seq, body) for seq, body in enumerate(bodies)], gaps=0.0)
    assert [tlp[0] for tlp in out["tlps"]] == bodies
    assert {tlp[1] for tlp in out["tlps"]} == {TlpStatus.GOOD}


def test_a_nullified_tlp_a_bad_lcrc_and_a_bad_dllp_crc_are_told_apart():
    body = bytes(range(16))
    bad_lcrc = frame_tlp(5, body)
    bad_lcrc[6] ^= 0x01  # a body byte
    bad_dllp = frame_dllp(ack_dllp(9))
    bad_dllp[5] ^= 0x80  # its CRC
    out = run([frame_tlp(4, body, nullified=True), bad_lcrc, bad_dllp, frame_tlp(6, body)])
    assert [(tlp[1], tlp[2]) for tlp in out["tlps"]] == [
        (TlpStatus.NULLIFIED, 4), (TlpStatus.BAD_LCRC, 5), (TlpStatus.GOOD, 6)]
    assert out["dllps"] == [] and out["bad_dllp"] == 1


def test_short_long_and_cut_tlps_are_malformed_and_the_next_one_is_good():
    body = bytes(range(12))
    short = frame_tlp(1, bytes(8))  # a 2 DW "header"
    long = frame_tlp(2, bytes(16 + 512 + 4 + 4))  # beyond MPS 512 with ECRC
    cut = frame_tlp(3, bytes(range(32)))[:12] + [KCode.END] * 4  # END off lane 3
    units = [short, long, cut, frame_tlp(4, body)]
    out = run(units)
    assert [tlp[1] for tlp in out["tlps"]] == [TlpStatus.MALFORMED] * 3 + [TlpStatus.GOOD]
    assert out["tlps"][-1][0] == body and out["bad_symbol"] >= 1


def test_a_symbol_error_inside_a_tlp_makes_it_malformed():
    body = bytes(range(40))
    tlp = frame_tlp(7, body)
    out = run([tlp, frame_tlp(8, body)], errors=frozenset({9}))
    assert [tlp[1] for tlp in out["tlps"]] == [TlpStatus.MALFORMED, TlpStatus.GOOD]
    # The error, then the cut TLP's END arriving outside a packet (counted as a bad symbol too).
    assert out["bad_symbol"] == 2
