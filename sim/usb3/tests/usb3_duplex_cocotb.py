"""cocotb tests of the SuperSpeed device with both lanes busy: IN and OUT at once (dual simplex)
and the LOOPBACK data mode, OUT packets returned on IN.

Run by test_usb3_sim.py in the same simulator process as ``usb3_cocotb``; each test starts from
a reset. Figures are appended as JSON lines to ``$BUSPROBE_USB3_FIGURES`` when it is set.
"""

from __future__ import annotations

import time

import cocotb
from busprobe.sim.usb3.pipe import CLOCK_HZ
from usb3_cocotb_support import open_session, prepare_stream, read_telemetry, record, vendor_request

#: Queue depths of the odd-length loopback runs: one transfer at a time up to the ring-sized
#: queues a sweep uses (the OUT and the IN queue each this deep).
QUEUE_DEPTHS = (1, 2, 4, 8)
ODD_LENGTHS = (1, 1025, 4097, 65535)
#: Share of the loopback model a 1 MiB run must reach, timed from its first submission (the
#: first packet's round trip included, which the model leaves out): 98.9 % measured. Issue 27's
#: 99 % is held by the CLI test against the run's own ceiling (docs/DESIGN.md §3.6).
LOOPBACK_FLOOR = 0.985


def loopback_bound() -> float:
    """The model's loopback ceiling with the ideal host (bytes returned per second)."""
    from busprobe.model.usb3 import usb3_ceiling
    from busprobe.transport import BusDescription

    bus = BusDescription("usb3-ss", "super", max_packet_size=1024, host_profile="ideal")
    return usb3_ceiling(bus, "loopback").throughput


async def set_mode(session, mode) -> None:
    """PRBS-31 expected on OUT, ``mode``, IN transfers unframed, telemetry cleared."""
    from busprobe.protocol import usb3 as contract
    from busprobe.protocol.patterns import Pattern

    await vendor_request(session, contract.Request.SET_PATTERN, int(Pattern.PRBS31))
    await vendor_request(session, contract.Request.SET_DATA_MODE, int(mode))
    await vendor_request(session, contract.Request.SET_IN_TRANSFER, 0)
    await vendor_request(session, contract.Request.CLEAR_TELEMETRY)


async def loopback(session, length: int, count: int, queue_depth: int):
    """A fresh PRBS-31 stream OUT (the device restarts its checker with SET_DATA_MODE), what
    came back on IN; returns (outcome, chunks back, data sent, telemetry, wall seconds)."""
    from busprobe.protocol import usb3 as contract
    from busprobe.protocol.patterns import Pattern, PatternStream

    await set_mode(session, contract.DataMode.LOOPBACK)
    sent: list[bytes] = []
    source = PatternStream(Pattern.PRBS31)

    def take(size: int) -> bytes:
        sent.append(source.take(size))
        return sent[-1]

    chunks: list[bytes] = []
    wall = time.monotonic()
    outcome = await session.host.loopback(contract.EP_OUT, contract.EP_IN & 0x7F, length, count,
                                          queue_depth, source=take, sink=chunks.append)
    wall = time.monotonic() - wall
    return outcome, chunks, sent, await read_telemetry(session), wall


@cocotb.test()
async def in_and_out_at_once_each_direction_at_the_dual_simplex_bound(dut) -> None:
    """SuperSpeed is dual simplex: 1 MiB IN and 1 MiB OUT queued together (the host's two
    endpoints at once, as a loopback runs them) each move near the loopback model's rate, each
    lane shared only with the other direction's handshakes; every byte checked both ways. Before
    the link commands were queued (gateware/usb3/link_commands.py) the device's LGOODs starved
    here and the run ended in Recovery."""
    from busprobe.backends.usb.plans import QueuedStream, Together
    from busprobe.protocol import usb3 as contract
    from busprobe.protocol.patterns import Pattern, PatternStream

    session = await open_session(dut)
    await prepare_stream(session, 256 << 10)
    source, expected = PatternStream(Pattern.PRBS31), PatternStream(Pattern.PRBS31)
    streams = [QueuedStream(contract.EP_IN, 256 << 10, 4, 2),
               QueuedStream(contract.EP_OUT, 256 << 10, 4, 2,
                            outgoing=[source.take(256 << 10) for _ in range(4)])]
    wall = time.monotonic()
    start, end = await session.host.run(Together(streams))
    wall = time.monotonic() - wall
    chunks: list[bytes] = []
    streams[0].deliver(chunks.append)
    telemetry = await read_telemetry(session)
    counters = session.link.counters
    seconds = (end - start) / CLOCK_HZ
    rates = {"in": streams[0].moved / seconds, "out": streams[1].moved / seconds}
    record(test="in_and_out_at_once", mb_s={k: v / 1e6 for k, v in rates.items()},
           of_model={k: v / loopback_bound() for k, v in rates.items()}, wall_s=wall,
           link=vars(counters))
    assert int(dut.link_trained.value), "the device left U0"
    assert counters.bad_payloads == 0, vars(counters)  # LGOODs: the link checks each
    assert telemetry["in_bytes"] == telemetry["out_bytes"] == 1 << 20
    assert telemetry["pattern_errors"] == 0
    assert sum(expected.check(chunk).errors for chunk in chunks) == 0
    for name, rate in rates.items():
        assert LOOPBACK_FLOOR <= rate / loopback_bound() <= 1.0, \
            f"{name}: {rate / 1e6:.1f} of {loopback_bound() / 1e6:.1f} MB/s"


@cocotb.test()
async def loopback_1mib_ideal_host_at_the_model_ceiling_every_byte_checked_both_ways(
        dut) -> None:
    """LOOPBACK: 4 x 256 KiB OUT and 4 x 256 KiB IN, both queues 2 deep; what comes back is
    what was sent, the device's checker saw the pattern, near the model's 459 MB/s (see
    LOOPBACK_FLOOR)."""
    from busprobe.protocol import usb3 as contract

    session = await open_session(dut)
    partner = session.link.partner
    symbols, skps = partner.symbols_received, partner.skp_received
    outcome, chunks, sent, telemetry, wall = await loopback(session, 256 << 10, 4, 2)
    rate = outcome.bytes / ((outcome.end - outcome.start) / CLOCK_HZ)
    # Both lanes busy leave the device's SKP inserter only the cycles its arbiter keeps idle
    # for it: still one SKP ordered set per 354 symbols (USB 3.2 §6.4.3), at most the four an
    # inserter may owe behind.
    symbols, skp_sets = partner.symbols_received - symbols, (partner.skp_received - skps) // 2
    assert skp_sets >= symbols // contract.SKP_INTERVAL_SYMBOLS - 4, \
        f"{skp_sets} SKP ordered sets in {symbols} symbols from the device"
    record(test="loopback_1mib", mb_s=rate / 1e6, of_model=rate / loopback_bound(), wall_s=wall,
           cycles=outcome.end - outcome.start, counters=outcome.counters,
           link=vars(session.link.counters),
           telemetry={k: v for k, v in telemetry.items() if v})
    assert chunks == sent, "what came back on IN is not what went OUT"
    assert telemetry["out_bytes"] == telemetry["in_bytes"] == outcome.bytes == 1 << 20
    assert telemetry["pattern_errors"] == 0
    # Nothing sent twice either way (the device counts what it resent, the host what it did).
    assert telemetry["in_retries"] == outcome.counters["retries"] == 0, telemetry
    assert LOOPBACK_FLOOR <= rate / loopback_bound() <= 1.0, \
        f"{rate / 1e6:.1f} MB/s of {loopback_bound() / 1e6:.1f}"


@cocotb.test()
async def loopback_odd_lengths_every_queue_depth_and_set_data_mode_flushes_both_ways(
        dut) -> None:
    """Transfers of 1, 1025, 4097 and 65535 bytes at queue depths 1, 2, 4 and 8 come back
    packet for packet (each IN transfer ends with the short packet its OUT transfer ended
    with), with no byte lost, added or changed. Then what SET_DATA_MODE discards: OUT data
    looped into the IN ring but never read, and the pattern IN data buffered before it."""
    from busprobe.protocol import usb3 as contract
    from busprobe.protocol.patterns import Pattern, PatternStream

    session = await open_session(dut)
    wall = time.monotonic()
    for length in ODD_LENGTHS:
        for depth in QUEUE_DEPTHS:
            count = depth + 1 if length > 4097 else 2 * depth
            outcome, chunks, sent, telemetry, _ = await loopback(session, length, count, depth)
            where = f"{length} B x {count}, queue depth {depth}"
            assert chunks == sent, f"{where}: what came back is not what went OUT"
            assert telemetry["out_bytes"] == telemetry["in_bytes"] == count * length, where
            assert telemetry["pattern_errors"] == 0, where
            # One short packet ends each transfer each way (every length here is odd).
            assert telemetry["in_short"] == telemetry["out_short"] == count, where
            assert int(dut.link_trained.value), f"{where}: the device left U0"
    record(test="loopback_odd_lengths", wall_s=time.monotonic() - wall,
           link=vars(session.link.counters))

    # 8 KiB OUT looped into the IN ring, never read; SET_DATA_MODE LOOPBACK drops it.
    await set_mode(session, contract.DataMode.LOOPBACK)
    await session.host.stream("out", contract.EP_OUT, 8192, 1, 1,
                              source=PatternStream(Pattern.COUNTER).take)
    outcome, chunks, sent, telemetry, _ = await loopback(session, 4096, 2, 1)
    assert chunks == sent, "IN returned data looped before SET_DATA_MODE"
    # PATTERN again: the IN stream starts at byte 0 of the pattern, nothing of the loopback left.
    await set_mode(session, contract.DataMode.PATTERN)
    await prepare_stream(session, 4096)
    back: list[bytes] = []
    await session.host.stream("in", contract.EP_IN & 0x7F, 4096, 2, 1, sink=back.append)
    assert PatternStream(Pattern.PRBS31).check(b"".join(back)).errors == 0

