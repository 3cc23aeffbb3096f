"""The host model's framing against LUNA's gateware: CRC-5, CRC-16 and the scrambler LFSR.

The model computes these in Python (``sim/usb3/framing.py``) and in SystemVerilog
(``sim/hdl/pipe_partner.sv``); LUNA's device computes them in Amaranth. Here the Python side is
checked against LUNA's own gateware in Amaranth's simulator (no Verilator), so a wrong bit order
would fail fast, not as a link that never trains.
"""

from __future__ import annotations

import random
import struct

from amaranth import Module, Signal
from amaranth.sim import Simulator
from busprobe.sim.usb3.framing import (
    COMMAND_SYMBOLS,
    HEADER_SYMBOLS,
    crc5,
    crc16,
    frame_command,
    frame_header,
    parse_command,
    parse_header,
)
from busprobe.sim.usb3.protocol import tp_header
from usb_protocol.types.superspeed import LinkCommand, TransactionPacketSubtype


def _run(module: Module, bench) -> None:
    sim = Simulator(module)
    sim.add_testbench(bench)
    sim.run()


def test_crc5_matches_luna_for_every_11_bit_value_sampled() -> None:
    from luna.gateware.usb.usb3.link.crc import compute_usb_crc5

    m = Module()
    value, crc = Signal(11), Signal(5)
    m.d.comb += crc.eq(compute_usb_crc5(value))
    values = [0, 0x7FF, *random.Random(5).sample(range(2048), 200)]
    seen: list[tuple[int, int]] = []

    async def bench(ctx) -> None:
        for v in values:
            ctx.set(value, v)
            seen.append((v, ctx.get(crc)))

    _run(m, bench)
    assert [(v, crc5(v)) for v in values] == seen


def test_crc16_matches_luna_header_packet_crc() -> None:
    from luna.gateware.usb.usb3.link.crc import HeaderPacketCRC

    dut = HeaderPacketCRC()
    m = Module()
    m.submodules.crc = dut
    headers = [bytes(12), bytes(range(12)), *(random.Random(7).randbytes(12) for _ in range(20))]
    seen: list[int] = []

    async def bench(ctx) -> None:
        for header in headers:
            ctx.set(dut.clear, 1)
            await ctx.tick("ss")
            ctx.set(dut.clear, 0)
            for word in struct.unpack("<III", header):
                ctx.set(dut.data_input, word)
                ctx.set(dut.advance_crc, 1)
                await ctx.tick("ss")
            ctx.set(dut.advance_crc, 0)
            seen.append(ctx.get(dut.crc))

    from amaranth import ClockDomain
    m.domains.ss = ClockDomain("ss")
    sim = Simulator(m)
    sim.add_clock(8e-9, domain="ss")
    sim.add_testbench(bench)
    sim.run()
    assert [crc16(h) for h in headers] == seen


def _python_scrambler(lfsr: int, count: int) -> tuple[int, list[int]]:
    """The partner's scrambler step (pipe_partner.sv ``scramble``), in Python."""
    out = []
    for _ in range(count):
        byte = 0
        for bit in range(8):
            byte |= (lfsr >> 15 & 1) << bit
            lfsr = ((lfsr << 1) ^ 0x0039 if lfsr & 0x8000 else lfsr << 1) & 0xFFFF
        out.append(byte)
    return lfsr, out


def test_partner_scrambler_keystream_matches_luna_lfsr() -> None:
    from amaranth import ClockDomain
    from luna.gateware.usb.usb3.physical.scrambling import ScramblerLFSR

    lfsr = ScramblerLFSR(initial_value=0xFFFF)
    m = Module()
    m.submodules.lfsr = lfsr
    m.domains.ss = ClockDomain("ss")
    words: list[int] = []

    async def bench(ctx) -> None:
        ctx.set(lfsr.advance, 1)
        for _ in range(64):
            words.append(ctx.get(lfsr.value))
            await ctx.tick("ss")

    sim = Simulator(m)
    sim.add_clock(8e-9, domain="ss")
    sim.add_testbench(bench)
    sim.run()
    _, keystream = _python_scrambler(0xFFFF, 4 * 64)
    expected = [int.from_bytes(bytes(keystream[4 * i:4 * i + 4]), "little") for i in range(64)]
    assert words == expected


def test_framed_packets_parse_back() -> None:
    dws = tp_header(9, TransactionPacketSubtype.ACK, endpoint=1, direction=1, packets=16,
                    sequence=31)
    framed = frame_header(dws, 5, delayed=True)
    assert len(framed.symbols) == HEADER_SYMBOLS and framed.kmask == 0xF
    header = parse_header(framed.symbols[4:], 0, 0)
    assert header.crc_ok and header.dws == dws and header.sequence == 5 and header.delayed
    assert not parse_header(frame_header(dws, 5, corrupt_crc16=True).symbols[4:], 0, 0).crc_ok
    command = frame_command(LinkCommand.LCRD, 3)
    assert len(command.symbols) == COMMAND_SYMBOLS
    assert parse_command(command.symbols[4:]) == (LinkCommand.LCRD, 3)
    broken = bytearray(command.symbols[4:])
    broken[0] ^= 1
    assert parse_command(bytes(broken)) is None


def test_link_trace_decodes_the_stream_and_flags_of_each_header() -> None:
    from busprobe.sim.usb3.link_trace import describe_header
    from busprobe.sim.usb3.protocol import DIR_IN, DIR_OUT, data_header, itp_header

    ack = tp_header(5, TransactionPacketSubtype.ACK, endpoint=1, direction=DIR_IN, packets=16,
                    sequence=3, packets_pending=True, stream_id=7)
    assert describe_header(ack) == "ACK ep1IN nump16 seq3 stream7 pp"
    erdy = tp_header(5, TransactionPacketSubtype.ERDY, endpoint=2, direction=DIR_OUT,
                     packets=1, stream_id=300)
    assert describe_header(erdy) == "ERDY ep2OUT nump1 seq0 stream300"
    dp = data_header(5, endpoint=3, direction=DIR_IN, sequence=31, length=16,
                     end_of_burst=True, stream_id=2)
    assert describe_header(dp) == "DP ep3IN len16 seq31 stream2 eob"
    assert describe_header(itp_header(1234)) == "ITP interval1234"
