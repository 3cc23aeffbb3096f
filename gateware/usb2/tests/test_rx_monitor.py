"""RxPacketMonitor: each received packet lands in the class the spec gives it."""

import random

from amaranth.sim import Simulator
from busprobe.gateware.usb2.rx_monitor import MAX_PACKET_BYTES, RxPacketMonitor
from busprobe.protocol import usb2
from busprobe.protocol import usb2_wire as wire
from busprobe.protocol.usb2_wire import Pid

ADDRESS = 7
CLASSES = ("bad_pid", "malformed", "crc_error", "foreign")


def classify(packets: list[tuple[bytes, bool]], address: int = ADDRESS) -> list[str]:
    """Feed ``(bytes, rx_error)`` packets through the monitor; the class of each (or "ok")."""
    dut = RxPacketMonitor()
    seen: list[str] = []

    async def testbench(ctx):
        ctx.set(dut.address, address)
        for data, error in packets:
            ctx.set(dut.rx_active, 1)
            await ctx.tick("usb")
            for index, byte in enumerate(data):
                ctx.set(dut.rx_valid, 1)
                ctx.set(dut.rx_data, byte)
                ctx.set(dut.rx_error, int(error and index == len(data) // 2))
                await ctx.tick("usb")
                ctx.set(dut.rx_valid, 0)
                ctx.set(dut.rx_error, 0)
                await ctx.tick("usb")  # a ULPI byte every other cycle, as with stuffing
            ctx.set(dut.rx_active, 0)
            await ctx.delay(1e-9)
            assert ctx.get(dut.packet) == 1
            flags = [name for name in CLASSES if ctx.get(getattr(dut, name))]
            assert len(flags) <= 1, flags
            seen.append(flags[0] if flags else "ok")
            await ctx.tick("usb").repeat(2)

    sim = Simulator(dut)
    sim.add_clock(1 / 60e6, domain="usb")
    sim.add_testbench(testbench)
    sim.run()
    return seen


def test_intact_packets_of_every_kind_are_not_dropped():
    packets = [wire.token_bytes(Pid.IN, ADDRESS, 1), wire.token_bytes(Pid.OUT, ADDRESS, 2),
               wire.data_bytes(Pid.DATA0, b""), wire.token_bytes(Pid.SETUP, ADDRESS, 0),
               wire.data_bytes(Pid.DATA0, bytes(8)), wire.token_bytes(Pid.PING, ADDRESS, 2),
               wire.sof_bytes(0x5A5), wire.sof_bytes(0), wire.token_bytes(Pid.OUT, ADDRESS, 2),
               wire.data_bytes(Pid.DATA1, bytes(range(256)) * 2),
               wire.handshake_bytes(Pid.ACK), wire.handshake_bytes(Pid.NAK)]
    assert classify([(p, False) for p in packets]) == ["ok"] * len(packets)


def test_token_crc5_checked_exactly_as_the_wire_model_computes_it():
    rng = random.Random(5)
    fields = [rng.randrange(1 << 11) for _ in range(40)]
    good = [wire.sof_bytes(f) for f in fields]
    bad = []
    for packet in good:
        body = int.from_bytes(packet[1:], "little") ^ (1 << rng.randrange(16))
        bad.append(packet[:1] + body.to_bytes(2, "little"))
    assert classify([(p, False) for p in good]) == ["ok"] * len(good)
    assert classify([(p, False) for p in bad]) == ["crc_error"] * len(bad)


def test_each_corruption_lands_in_its_own_class():
    out = wire.token_bytes(Pid.OUT, ADDRESS, 2)
    data = wire.data_bytes(Pid.DATA0, bytes(100))
    cases = {
        # Check nibble wrong; reserved; SPLIT (a hub's token, §8.4.2.2): none is acted on.
        "bad_pid": [bytes((0x11,)) + out[1:], bytes((wire.pid_byte(0),)),
                    bytes((wire.pid_byte(0x8),)) + out[1:] + b"\x00"],
        "malformed": [out[:2], out + b"\x00", wire.handshake_bytes(Pid.ACK) + b"\x00",
                      data[:2], wire.data_bytes(Pid.DATA1, bytes(usb2.MAX_PACKET_SIZE + 1))],
        "crc_error": [data[:-1] + bytes((data[-1] ^ 0x80,)), out[:2] + bytes((out[2] ^ 0x08,))],
        "foreign": [wire.token_bytes(Pid.OUT, ADDRESS + 1, 2),
                    wire.token_bytes(Pid.IN, ADDRESS, 5), wire.token_bytes(Pid.PING, 0, 2),
                    data, wire.data_bytes(Pid.DATA1, b"")],  # data after no token for us
    }
    packets = [(p, False) for group in cases.values() for p in group]
    packets.append((data, True))  # a receive error anywhere is malformed, whatever the CRC
    expected = [name for name, group in cases.items() for _ in group] + ["malformed"]
    assert classify(packets) == expected


def test_babble_longer_than_the_counter_saturates_as_malformed_not_wraps():
    babble = wire.data_bytes(Pid.DATA0, bytes(MAX_PACKET_BYTES + 40))
    assert len(babble) > MAX_PACKET_BYTES + 2
    assert classify([(babble, False)]) == ["malformed"]
