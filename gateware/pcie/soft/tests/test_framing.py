"""The framer and deframer against the contract's reference framing (Amaranth simulation).

The framer's symbols must be exactly :func:`frame_tlp`/:func:`frame_dllp`'s; the deframer must
judge a symbol stream (good, corrupted, nullified, cut short) as :func:`deframe` does.
"""

import random

from busprobe.gateware.pcie.soft.deframer import DataLinkDeframer, TlpStatus
from busprobe.gateware.pcie.soft.framer import DataLinkFramer
from busprobe.protocol.pcie_dll import (
    FramedPacket,
    ack_dllp,
    deframe,
    frame_dllp,
    frame_tlp,
    nak_dllp,
)
from busprobe.protocol.pcie_symbols import K_FLAG, KCode
from busprobe.sim.pcie.symbol.amaranth_bench import send_dllp, send_tlps, simulate

STATUS_NAMES = {TlpStatus.GOOD: "good", TlpStatus.BAD_LCRC: "bad_crc",
                TlpStatus.NULLIFIED: "nullified", TlpStatus.MALFORMED: "malformed"}


def run_framer(tlps, dllps, *, stalls=0.0, seed=0):
    """Offer TLPs (seq, bytes, nullify) and DLLPs at once; return the symbols sent, in order."""
    dut = DataLinkFramer()
    rng = random.Random(seed)
    sent: list[int] = []
    ends: list[int] = []

    async def tlp_source(ctx):
        for seq, body, nullify in tlps:
            ctx.set(dut.tlp_seq, seq)
            await send_tlps(ctx, dut.tlp, [body], nullify=lambda _, nullify=nullify: nullify)

    async def dllp_source(ctx):
        for dllp in dllps:
            await send_dllp(ctx, dut.dllp, dllp)
            for _ in range(rng.randrange(30)):
                await ctx.tick()

    async def sink(ctx):
        total = sum(len(b) + 8 for _, b, _ in tlps) + 8 * len(dllps)
        idle = 0
        while len(sent) < total and idle < 200:
            ready = rng.random() >= stalls
            ctx.set(dut.source.ready, ready)
            # Read at the clock edge: the sources are other testbenches.
            _, _, valid, symbol, end = await ctx.tick().sample(
                dut.source.valid, dut.source.p.symbol, dut.source.p.end)
            if valid and ready:
                sent.append(symbol)
                if end:
                    ends.append(len(sent) - 1)
            idle = 0 if valid else idle + 1

    simulate(dut, sink, tlp_source, dllp_source)
    return sent, ends


def test_framed_tlps_are_the_reference_framing_symbol_for_symbol():
    rng = random.Random(3)
    tlps = [(rng.randrange(4096), rng.randbytes(rng.choice((12, 16, 20, 140))), False)
            for _ in range(6)]
    sent, ends = run_framer(tlps, [])
    assert sent == [s for seq, body, _ in tlps for s in frame_tlp(seq, body)]
    assert len(ends) == len(tlps) and all(sent[i] == KCode.END for i in ends)


def test_a_nullified_tlp_goes_out_with_edb_and_the_inverted_lcrc():
    sent, _ = run_framer([(5, bytes(range(16)), True)], [])
    assert sent == frame_tlp(5, bytes(range(16)), nullified=True)


def test_dllps_and_tlps_interleave_whole_under_stalls():
    rng = random.Random(4)
    tlps = [(i, rng.randbytes(rng.choice((12, 16, 64))), False) for i in range(5)]
    dllps = [ack_dllp(i) for i in range(4)] + [nak_dllp(9)]
    sent, _ = run_framer(tlps, dllps, stalls=0.3, seed=4)
    packets = deframe(sent)
    assert all(p.status == "good" for p in packets)
    assert [p.payload for p in packets if p.kind == "dllp"] == dllps
    assert [(p.seq, p.payload) for p in packets if p.kind == "tlp"] == [(s, b) for s, b, _ in tlps]


def run_deframer(symbols, errors=()):
    """Feed symbols one a clock (``errors``: indices flagged as 8b/10b errors)."""
    dut = DataLinkDeframer(max_payload=128)
    packets: list[FramedPacket] = []
    bad_symbols = []
    state = {"bytes": []}

    async def testbench(ctx):
        for i, symbol in enumerate([*symbols, 0, 0]):
            ctx.set(dut.sink.valid, 1)
            ctx.set(dut.sink.p, {"symbol": symbol, "error": i in errors})
            await ctx.delay(1e-10)
            if ctx.get(dut.tlp.valid):
                if ctx.get(dut.tlp.p.first):
                    state["bytes"] = []
                state["bytes"].append(ctx.get(dut.tlp.p.data))
            if ctx.get(dut.tlp_end):
                status = STATUS_NAMES[TlpStatus(ctx.get(dut.tlp_status))]
                seq = ctx.get(dut.tlp_seq) if status != "malformed" else 0
                body = bytes(state["bytes"]) if status != "malformed" else b""
                packets.append(FramedPacket("tlp", status, seq, body))
                state["bytes"] = []
            if ctx.get(dut.dllp.valid):
                packets.append(FramedPacket("dllp", "good", 0,
                                            ctx.get(dut.dllp.payload).to_bytes(4, "little")))
            if ctx.get(dut.bad_dllp):
                packets.append(FramedPacket("dllp", "bad", 0, b""))
            if ctx.get(dut.bad_symbol):
                bad_symbols.append(i)
            await ctx.tick()

    simulate(dut, testbench)
    return packets, bad_symbols


def comparable(packets):
    """The reference's verdicts in the deframer's terms: what it hands up, and how it judged."""
    out = []
    for p in packets:
        if p.kind == "dllp":
            out.append(p if p.status == "good" else FramedPacket("dllp", "bad", 0, b""))
        elif p.status == "malformed":
            out.append(FramedPacket("tlp", "malformed", 0, b""))
        else:
            out.append(p)
    return out


def test_the_deframer_judges_a_corrupted_stream_as_the_reference_does():
    rng = random.Random(6)
    for trial in range(8):
        stream: list[int] = []
        for _ in range(10):
            if rng.random() < 0.5:
                wire = frame_tlp(rng.randrange(4096), rng.randbytes(rng.choice((12, 16, 32))),
                                 nullified=rng.random() < 0.2)
            else:
                wire = frame_dllp(rng.choice((ack_dllp, nak_dllp))(rng.randrange(4096)))
            fault = rng.random()
            if fault < 0.2:  # a data bit flipped
                i = rng.randrange(1, len(wire) - 1)
                wire[i] ^= 1 << rng.randrange(8)
            elif fault < 0.3:  # END lost
                wire = wire[:-1]
            elif fault < 0.35:  # truncated to a runt
                wire = wire[:6] + wire[-1:]
            stream += [0] * rng.randrange(3) + wire
        stream += frame_dllp(ack_dllp(0))  # whatever was left open ends here
        got, _ = run_deframer(stream)
        assert got == comparable(deframe(stream)), trial


def test_symbol_errors_and_stray_k_codes_are_counted_and_cut_the_packet():
    tlp = frame_tlp(1, bytes(16))
    stray = [0, KCode.END, 0, 0]  # END outside a packet
    inner = list(frame_tlp(2, bytes(16)))
    inner[8] = K_FLAG | 0x9C  # K28.4 inside a TLP
    stream = tlp + stray + inner + frame_tlp(3, bytes(16))
    error_at = len(tlp) + len(stray) + len(inner) + 5
    got, bad = run_deframer(stream, errors={error_at})
    assert [(p.status, p.seq) for p in got] == [("good", 1), ("malformed", 0), ("malformed", 0)]
    # ... and the END of each cut packet is then a stray END too.
    inner_at, third_at = len(tlp) + len(stray), len(tlp) + len(stray) + len(inner)
    assert bad == [len(tlp) + 1, inner_at + 8, third_at - 1, error_at, len(stream) - 1]
