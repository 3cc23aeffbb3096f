"""BotFramer: CBW in, data in the CBW's direction, CSW out (Amaranth simulation).

The host side of every exchange is :mod:`busprobe.protocol.bot`: CBWs are packed and CSWs
decoded with the classes the host driver uses.
"""

import random

import pytest
from amaranth.sim import Simulator
from busprobe.gateware.common.bot import BotFramer
from busprobe.protocol.bot import Cbw, Csw, CswStatus

MPS = 512


def source_byte(index, width):
    """Source beat ``index``: byte ``k`` of the stream is ``k & 0xFF`` (a counter)."""
    return sum(((index * width + lane) & 0xFF) << (8 * lane) for lane in range(width))


def exchange(packets, *, width=1, stall=0.0, restart_after=None, seed=1):
    """Feed OUT ``packets`` (bytes each) to a framer; return what it did.

    ``{"in": IN packets (bytes, split at ``last`` or a full packet), "checked": OUT data bytes,
    "checked_ends": offsets where ``checked.last`` fell, "source": source bytes taken}``.
    ``stall`` is the chance that a consumer or producer is not ready in a cycle; with
    ``restart_after`` the framer is restarted after that many OUT packets went in.
    """
    dut = BotFramer(width=width, max_packet_size=MPS)
    rng = random.Random(seed)
    beats = []  # (data, keep count, last, packet index)
    for number, packet in enumerate(packets):
        for start in range(0, len(packet), width):
            chunk = packet[start:start + width]
            beats.append((int.from_bytes(chunk, "little"), len(chunk),
                          start + width >= len(packet), number))
    result = {"in": [], "checked": bytearray(), "checked_ends": [], "source": 0}

    async def testbench(ctx):
        current = bytearray()
        sent = taken = idle = 0
        restarted = False
        while idle < 40:
            if restart_after is not None and not restarted and sent < len(beats) \
                    and beats[sent][3] == restart_after:
                restarted = True
                ctx.set(dut.restart, 1)
                await ctx.tick("usb")
                ctx.set(dut.restart, 0)
            feeding = sent < len(beats) and rng.random() >= stall
            if feeding:
                data, count, last, _ = beats[sent]
                ctx.set(dut.out_packets.payload.data, data)
                ctx.set(dut.out_packets.payload.last, last)
                if width > 1:
                    ctx.set(dut.out_packets.payload.keep, (1 << count) - 1)
            ctx.set(dut.out_packets.valid, feeding)
            ctx.set(dut.in_packets.ready, rng.random() >= stall)
            ctx.set(dut.checked.ready, rng.random() >= stall)
            ctx.set(dut.source.valid, rng.random() >= stall)
            ctx.set(dut.source.payload, source_byte(taken, width))

            moved = False
            if ctx.get(dut.out_packets.valid) and ctx.get(dut.out_packets.ready):
                sent += 1
                moved = True
            if ctx.get(dut.source.valid) and ctx.get(dut.source.ready):
                taken += 1
            if ctx.get(dut.in_packets.valid) and ctx.get(dut.in_packets.ready):
                count = bin(ctx.get(dut.in_packets.payload.keep)).count("1") if width > 1 else 1
                data = ctx.get(dut.in_packets.payload.data)
                current += data.to_bytes(width, "little")[:count]
                if ctx.get(dut.in_packets.payload.last) or len(current) == MPS:
                    result["in"].append(bytes(current))
                    current = bytearray()
                moved = True
            if ctx.get(dut.checked.valid) and ctx.get(dut.checked.ready):
                count = bin(ctx.get(dut.checked.payload.keep)).count("1") if width > 1 else 1
                data = ctx.get(dut.checked.payload.data)
                result["checked"] += data.to_bytes(width, "little")[:count]
                if ctx.get(dut.checked.payload.last):
                    result["checked_ends"].append(len(result["checked"]))
            idle = 0 if moved or sent < len(beats) else idle + 1
            await ctx.tick("usb")
        assert current == b"", "an IN packet was left open"
        result["source"] = taken * width

    sim = Simulator(dut)
    sim.add_clock(1 / 60e6, domain="usb")
    sim.add_testbench(testbench)
    sim.run()
    return result


def counter_bytes(start, length):
    return bytes((start + i) & 0xFF for i in range(length))


def split(data):
    """``data`` as the host's OUT packets: full ones, then a short one."""
    return [data[i:i + MPS] for i in range(0, len(data), MPS)] or [b""]


@pytest.mark.parametrize("width", [1, 4])
@pytest.mark.parametrize("length", [1, 511, 512, 1000, 1536])
def test_in_command_sends_the_length_then_a_csw_with_the_tag(width, length):
    cbw = Cbw(tag=0x1234_5678, length=length, direction="in")
    got = exchange([cbw.pack()], width=width, stall=0.3)
    *data, csw = got["in"]
    assert b"".join(data) == counter_bytes(0, length)
    # Only the last packet of the data phase may be short: the endpoint closes full ones itself.
    assert all(len(p) == MPS for p in data[:-1])
    assert Csw.unpack(csw) == Csw(0x1234_5678, 0, CswStatus.PASSED)
    assert got["checked"] == b""
    if width == 1:
        assert got["source"] == length  # the pattern continues exactly where the command ended


@pytest.mark.parametrize("width", [1, 4])
@pytest.mark.parametrize("length", [1, 700, 1024])
def test_out_command_takes_the_length_to_the_checker(width, length):
    cbw = Cbw(tag=7, length=length, direction="out")
    data = counter_bytes(3, length)
    got = exchange([cbw.pack(), *split(data)], width=width, stall=0.3)
    assert got["checked"] == data
    assert got["checked_ends"] == [length]
    assert [Csw.unpack(p) for p in got["in"]] == [Csw(7, 0, CswStatus.PASSED)]
    assert got["source"] == 0


def test_commands_follow_each_other_and_the_in_data_continues():
    commands = [Cbw(1, 600, "in"), Cbw(2, 513, "out"), Cbw(3, 0, "in"), Cbw(4, 100, "in")]
    packets = []
    for cbw in commands:
        packets.append(cbw.pack())
        if cbw.direction == "out":
            packets += split(counter_bytes(0, cbw.length))
    got = exchange(packets, stall=0.2)
    csws = [Csw.unpack(p) for p in got["in"] if len(p) == 13]
    assert csws == [Csw(t, 0, CswStatus.PASSED) for t in (1, 2, 3, 4)]
    data_in = b"".join(p for p in got["in"] if len(p) != 13)
    assert data_in == counter_bytes(0, 700)
    assert got["checked"] == counter_bytes(0, 513)


def test_a_short_out_packet_ends_the_data_phase_with_a_residue():
    got = exchange([Cbw(9, 2048, "out").pack(), counter_bytes(0, MPS), counter_bytes(0, 100)])
    assert len(got["checked"]) == MPS + 100
    assert got["checked_ends"] == [MPS + 100]
    assert [Csw.unpack(p) for p in got["in"]] == [Csw(9, 2048 - MPS - 100, CswStatus.PASSED)]


def test_more_out_data_than_announced_is_dropped_and_a_phase_error():
    got = exchange([Cbw(5, 100, "out").pack(), counter_bytes(0, MPS), Cbw(6, 0, "in").pack()])
    assert got["checked"] == counter_bytes(0, 100)
    assert [Csw.unpack(p) for p in got["in"]] == [Csw(5, 0, CswStatus.PHASE_ERROR),
                                                   Csw(6, 0, CswStatus.PASSED)]


@pytest.mark.parametrize("width", [1, 4])
@pytest.mark.parametrize("bad", ["signature", "short", "long"])
def test_an_invalid_cbw_gets_a_phase_error_and_no_data_phase(width, bad):
    good = Cbw(0xABCD, 300, "in").pack()
    packet = {"signature": b"USBX" + good[4:], "short": good[:30],
              "long": good + b"\x00"}[bad]
    got = exchange([packet, Cbw(0xEF, 4, "in").pack()], width=width)
    first, data, last = got["in"]
    assert Csw.unpack(first) == Csw(0xABCD, 300, CswStatus.PHASE_ERROR)
    assert data == counter_bytes(0, 4)  # the next CBW is taken: the framer is in step again
    assert Csw.unpack(last) == Csw(0xEF, 0, CswStatus.PASSED)


def test_restart_drops_the_command_in_progress():
    # The restart lands while the OUT data phase of command 1 is under way.
    packets = [Cbw(1, 4096, "out").pack(), counter_bytes(0, MPS), Cbw(2, 8, "in").pack()]
    got = exchange(packets, restart_after=2)
    assert [Csw.unpack(p) for p in got["in"] if len(p) == 13] == [Csw(2, 0, CswStatus.PASSED)]
    assert got["checked"] == counter_bytes(0, MPS)
