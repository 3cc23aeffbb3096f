"""cocotb tests of bulk streams on the SuperSpeed probe (``design=streams``) at its PIPE
interface: the device's stream protocol (``gateware/usb3/stream_*_endpoint.py``) against the
simulated xHCI's stream rings (``sim/usb3/host_streams.py``).

Run by test_usb3_streams_sim.py in one simulator process; each test starts from a reset.
"""

from __future__ import annotations

import cocotb
from usb3_cocotb_support import open_session, prepare_stream, read_telemetry

EP_IN, EP_OUT = 0x81, 0x02
#: Four streams, each with two transfers queued: the device selects them in the order they
#: were primed, so the data of the eight completions, in completion order, is the pattern.
STREAM_ORDER = [1, 2, 3, 4, 1, 2, 3, 4]
LENGTH = 5 << 10  # five packets: bursts, and a transfer that is not one burst


def _companions(configuration: bytes) -> list[bytes]:
    """The SuperSpeed endpoint companion descriptors (type 0x30) of a configuration."""
    found, offset = [], 0
    while offset < len(configuration):
        length = configuration[offset]
        if configuration[offset + 1] == 0x30:
            found.append(configuration[offset:offset + length])
        offset += length
    return found


async def _move(session, transfers) -> list:
    """Submit ``transfers`` at once and reap every completion, in completion order."""
    host = session.host
    host.submit(transfers)
    completions: list = []
    while len(completions) < len(transfers):
        completions += await host.reap()
    return completions


def _in_transfers(streams):
    from busprobe.backends.usb.transfers import Transfer

    return [Transfer(EP_IN, LENGTH, stream_id=stream) for stream in streams]


def _out_transfers(streams, source):
    from busprobe.backends.usb.transfers import Transfer

    return [Transfer(EP_OUT, LENGTH, data=source.take(LENGTH), stream_id=stream)
            for stream in streams]


async def _handshake(session, endpoint: int, what: str):
    """The device's next NRDY or ERDY for ``endpoint``."""
    from usb_protocol.types.superspeed import HeaderPacketType, TransactionPacketSubtype

    def accept(header) -> bool:
        return (header.type == HeaderPacketType.TRANSACTION and header.field(1, 8, 4) == endpoint
                and header.field(1, 0, 4) in (TransactionPacketSubtype.NRDY,
                                              TransactionPacketSubtype.ERDY))
    return await session.protocol.expect(accept, 20_000, what)


async def _nrdy(session, endpoint: int, what: str):
    from usb_protocol.types.superspeed import TransactionPacketSubtype

    header = await _handshake(session, endpoint, what)
    assert header.field(1, 0, 4) == TransactionPacketSubtype.NRDY, f"{what}: not NRDY"
    return header


@cocotb.test()
async def streams_advertised_and_data_moves_on_four_streams_each_way_every_byte_checked(dut):
    """Companions say MaxStreams 5; eight IN and eight OUT transfers on streams 1-4 move in
    the order the device selects, every DP and ACK TP naming its stream (the host model
    checks each), the IN bytes the pattern in completion order, the OUT ones checked by the
    device's checker."""
    from busprobe.protocol.patterns import Pattern, PatternStream
    from busprobe.protocol.streams import MAX_STREAMS, MAX_STREAMS_EXPONENT

    session = await open_session(dut)
    companions = _companions(session.descriptors.configuration)
    assert [c[3] & 0x1F for c in companions] == [MAX_STREAMS_EXPONENT] * 2, companions
    await prepare_stream(session, LENGTH)
    host = session.host
    in_streams = host.enable_streams(EP_IN, MAX_STREAMS)
    out_streams = host.enable_streams(EP_OUT, MAX_STREAMS)

    completions = await _move(session, _in_transfers(STREAM_ORDER))
    assert in_streams.selected == STREAM_ORDER
    assert [c.transfer.stream_id for c in completions] == STREAM_ORDER
    expected = PatternStream(Pattern.PRBS31)
    for index, completion in enumerate(completions):
        assert completion.actual == LENGTH, (index, completion.actual)
        check = expected.check(completion.data)
        assert not check.errors, f"transfer {index}: first error at {check.first_error_offset}"

    source = PatternStream(Pattern.PRBS31)
    completions = await _move(session, _out_transfers(STREAM_ORDER, source))
    assert out_streams.selected == STREAM_ORDER
    assert all(c.actual == LENGTH for c in completions)
    telemetry = await read_telemetry(session)
    assert telemetry["in_bytes"] == telemetry["out_bytes"] == len(STREAM_ORDER) * LENGTH
    assert telemetry["pattern_errors"] == 0
    assert telemetry["in_stream_errors"] == telemetry["out_stream_errors"] == 0
    # One ERDY selecting each stream turn (more only if the device ran dry, not here).
    assert telemetry["in_erdys"] >= len(STREAM_ORDER) and telemetry["out_erdys"] >= 8
    assert host.counters["stream_errors"] == 0


@cocotb.test()
async def in_stream_ids_zero_or_past_max_streams_get_nrdy_are_counted_and_data_moves_on(dut):
    """An IN prime naming stream 0 (data on stream 0 after streams were allocated) or a stream
    past MaxStreams is answered NRDY and counted, and so is stream 0 in Start Stream; a prime of
    another stream that crossed the device's ERDY is queued (NRDY, not an error); then the
    selected stream and that one move, in that order, their bytes the pattern."""
    from busprobe.protocol.patterns import Pattern, PatternStream
    from busprobe.protocol.streams import MAX_STREAMS, StreamState
    from busprobe.sim.usb3.protocol import DIR_IN, tp_header
    from usb_protocol.types.superspeed import TransactionPacketSubtype

    session = await open_session(dut)
    await prepare_stream(session, LENGTH)
    host, protocol = session.host, session.protocol
    streams = host.enable_streams(EP_IN, MAX_STREAMS)

    def prime(stream_id: int):
        return tp_header(protocol.address, TransactionPacketSubtype.ACK, endpoint=1,
                         direction=DIR_IN, packets=1, packets_pending=True,
                         stream_id=stream_id)

    for bad in (0, MAX_STREAMS + 1):
        await protocol.link.send_header(prime(bad))
        await _nrdy(session, 1, f"NRDY to a prime of stream {bad}")
    assert (await read_telemetry(session))["in_stream_errors"] == 2

    # Stream 7 primed; the device's ERDY selects it (Start Stream); stream 8's prime crosses
    # it, then an ACK TP on stream 0.
    await protocol.link.send_header(prime(7))
    answers = [await _handshake(session, 1, "NRDY to the prime of stream 7, ERDY selecting it")
               for _ in range(2)]  # in either order: they leave the device a cycle apart
    kinds = sorted(header.field(1, 0, 4) for header in answers)
    assert kinds == [TransactionPacketSubtype.NRDY, TransactionPacketSubtype.ERDY], kinds
    erdy = next(h for h in answers if h.field(1, 0, 4) == TransactionPacketSubtype.ERDY)
    assert erdy.dws[2] & 0xFFFF == 7
    await protocol.link.send_header(prime(8))
    await _nrdy(session, 1, "NRDY to stream 8's prime in Start Stream")
    await protocol.link.send_header(prime(0))
    await _nrdy(session, 1, "NRDY to stream 0 in Start Stream")

    # The host's stream rings take it from here: streams 7 and 8 primed, the ERDY in hand.
    streams.primed, streams.state = [7, 8], StreamState.IDLE
    protocol.deliver(erdy)
    completions = await _move(session, _in_transfers([7, 8]))
    assert streams.selected == [7, 8]
    expected = PatternStream(Pattern.PRBS31)
    for completion in completions:
        assert completion.actual == LENGTH
        check = expected.check(completion.data)
        assert not check.errors, f"first error at {check.first_error_offset}"
    assert (await read_telemetry(session))["in_stream_errors"] == 3
    assert host.counters["stream_errors"] == 0


@cocotb.test()
async def out_data_on_stream_zero_or_past_max_streams_gets_nrdy_is_counted_and_data_moves_on(
        dut):
    """OUT data packets naming stream 0 after streams were allocated, or a stream past
    MaxStreams, are dropped, answered NRDY and counted; the next transfer on a valid stream
    moves and the device's checker finds the pattern."""
    from busprobe.protocol.patterns import Pattern, PatternStream
    from busprobe.protocol.streams import MAX_STREAMS
    from busprobe.sim.usb3.protocol import DIR_OUT, data_header

    session = await open_session(dut)
    await prepare_stream(session)
    host, protocol = session.host, session.protocol
    streams = host.enable_streams(EP_OUT, MAX_STREAMS)
    for bad in (0, MAX_STREAMS + 1):
        await protocol.link.send_header(
            data_header(protocol.address, endpoint=2, direction=DIR_OUT, sequence=0,
                        length=1024, stream_id=bad), bytes(1024))
        await _nrdy(session, 2, f"NRDY to OUT data on stream {bad}")
    telemetry = await read_telemetry(session)
    assert telemetry["out_stream_errors"] == 2 and telemetry["out_bytes"] == 0

    source = PatternStream(Pattern.PRBS31)
    completions = await _move(session, _out_transfers([3, 9], source))
    assert streams.selected == [3, 9] and all(c.actual == LENGTH for c in completions)
    telemetry = await read_telemetry(session)
    assert telemetry["out_bytes"] == 2 * LENGTH and telemetry["pattern_errors"] == 0
    assert telemetry["out_stream_errors"] == 2
