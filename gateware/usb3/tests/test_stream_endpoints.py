"""Bulk IN and OUT endpoints with streams (Amaranth simulation).

IN: a prime is answered NRDY, the ERDY names the stream, the data packets carry it, the
transfer's EOB ends the stream; OUT: a data packet on a stream primes it (dropped, NRDY), the
ERDY names it, its packets are taken and ACKed naming it until the one without Packets Pending.
Stream 0 and IDs past MaxStreams are answered NRDY and counted, and a valid stream works after.
"""

from amaranth.sim import Simulator
from busprobe.gateware.usb3.stream_in_endpoint import StreamInEndpoint
from busprobe.gateware.usb3.stream_out_endpoint import StreamOutEndpoint
from busprobe.gateware.usb3.tests.test_in_endpoint import SourcedEndpoint
from busprobe.gateware.usb3.tests.test_out_endpoint import CheckedEndpoint, counter_bytes
from busprobe.gateware.usb3.tests.test_out_endpoint import Host as OutHost
from busprobe.gateware.usb3.transaction import HandshakeKind
from busprobe.protocol.streams import NOSTREAM_STREAM_ID, PRIME_STREAM_ID, StreamState


class SourcedStreamEndpoint(SourcedEndpoint, StreamInEndpoint):
    """The IN stream endpoint fed by the pattern generator, as the device wires it."""


class CheckedStreamEndpoint(CheckedEndpoint, StreamOutEndpoint):
    """The OUT stream endpoint into the word checker."""


class Host(OutHost):
    """The OUT tests' host, answering both handshake ports at once and recording (kind, Stream
    ID) of each, the stream errors counted, and IN packets sent (sequence, Stream ID, EOB)."""

    def __init__(self, dut):
        super().__init__(dut)
        self.packets, self.errors = [], 0

    async def tick(self, ctx):
        dut = self.dut
        iface = dut.interface
        if isinstance(dut, StreamInEndpoint):  # watch the packets sent
            ctx.set(iface.tx.ready, 1)
            if ctx.get(iface.tx.valid) and ctx.get(iface.tx.last):
                self.packets.append((ctx.get(iface.tx_sequence_number),
                                     ctx.get(dut.stream_id), ctx.get(dut.end_of_burst)))
        for port in (dut.handshake, dut.control_handshake):
            if ctx.get(port.valid):
                self.handshakes.append((HandshakeKind(ctx.get(port.request.kind)).name,
                                        ctx.get(port.request.stream_id)))
                ctx.set(port.done, 1)
        self.errors += ctx.get(dut.events.stream_error)
        await ctx.tick("ss")
        ctx.set(iface.handshakes_in.ack_received, 0)
        for port in (dut.handshake, dut.control_handshake):
            ctx.set(port.done, 0)

    async def idle(self, ctx, cycles):
        for _ in range(cycles):
            await self.tick(ctx)

    async def ack(self, ctx, sequence, nump, stream, pending):
        """An ACK TP for IN endpoint 1 naming ``stream``, as LUNA's receiver decodes it."""
        hs, dut = self.dut.interface.handshakes_in, self.dut
        for signal, value in ((hs.endpoint_number, 1), (hs.direction, 1),
                              (hs.next_sequence, sequence), (hs.number_of_packets, nump),
                              (hs.packets_pending, pending), (hs.ack_received, 1),
                              (dut.ack_stream_id, stream)):
            ctx.set(signal, value)
        await self.tick(ctx)

    async def send(self, ctx, sequence, payload, *, stream, pending):
        """A data packet for OUT endpoint 2 naming ``stream``, as LUNA's link delivers it."""
        header = self.dut.interface.rx_header
        ctx.set(header.stream_id, stream)
        ctx.set(header.packet_pending, pending)
        await super().send(ctx, sequence, payload)


def simulate(dut, body):
    """Run ``body(ctx, dut, host)`` on ``dut`` (configured); returns the host."""
    host = Host(dut)
    sim = Simulator(dut)
    sim.add_clock(8e-9, domain="ss")

    async def testbench(ctx):
        ctx.set(dut.enabled, 1)
        await host.idle(ctx, 4)
        assert ctx.get(dut.state) == StreamState.PRIME_PIPE
        await body(ctx, dut, host)

    sim.add_testbench(testbench)
    sim.run()
    return host


def in_endpoint():
    return SourcedStreamEndpoint(endpoint_number=1, slots=4, max_streams=8)


def out_endpoint():
    return CheckedStreamEndpoint(endpoint_number=2, slots=4, max_streams=8)


def test_in_a_prime_gets_nrdy_then_erdy_names_it_and_its_packets_carry_it_until_eob():
    async def body(ctx, dut, host):
        ctx.set(dut.transfer_length, 2048)
        await host.ack(ctx, 0, 2, 3, 1)  # prime stream 3
        await host.idle(ctx, 600)  # the ring fills; the ERDY goes out
        assert host.handshakes == [("NRDY", 0), ("ERDY", 3)], host.handshakes
        assert ctx.get(dut.state) == StreamState.START_STREAM
        await host.ack(ctx, 0, 2, 3, 1)  # Start Stream: the host's ACK TP on 3
        await host.idle(ctx, 800)
        assert ctx.get(dut.state) == StreamState.PRIME_PIPE  # EOB ended it
        await host.ack(ctx, 2, 0, 3, 0)  # the last packet acknowledged
        await host.idle(ctx, 50)

    host = simulate(in_endpoint(), body)
    assert host.packets == [(0, 3, 0), (1, 3, 1)], host.packets
    assert host.errors == 0


def test_in_stream_zero_and_past_max_streams_get_nrdy_and_count_and_a_valid_prime_works():
    async def body(ctx, dut, host):
        await host.ack(ctx, 0, 2, 0, 1)
        await host.idle(ctx, 20)
        await host.ack(ctx, 0, 2, 9, 1)
        await host.idle(ctx, 600)
        assert host.handshakes == [("NRDY", 0), ("NRDY", 0)], host.handshakes
        assert ctx.get(dut.state) == StreamState.PRIME_PIPE
        await host.ack(ctx, 0, 2, 8, 1)
        await host.idle(ctx, 30)
        assert host.handshakes[-1] == ("ERDY", 8), host.handshakes

    assert simulate(in_endpoint(), body).errors == 2


def test_out_a_prime_is_dropped_then_the_erdy_names_it_and_its_packets_are_taken_to_the_last():
    async def body(ctx, dut, host):
        await host.send(ctx, 0, counter_bytes(0, 1024), stream=5, pending=1)  # the prime
        await host.idle(ctx, 10)
        assert host.handshakes == [("NRDY", 0), ("ERDY", 5)], host.handshakes
        assert ctx.get(dut.state) == StreamState.START_STREAM
        await host.send(ctx, 0, counter_bytes(0, 1024), stream=5, pending=1)
        assert ctx.get(dut.state) == StreamState.MOVE_DATA
        await host.send(ctx, 1, counter_bytes(1024, 100), stream=5, pending=0)
        await host.idle(ctx, 600)
        assert ctx.get(dut.state) == StreamState.PRIME_PIPE
        assert (ctx.get(dut.checker.errors), ctx.get(dut.checker.offset)) == (0, 1124)

    host = simulate(out_endpoint(), body)
    assert host.handshakes[2:] == [("ACK", 5), ("ACK", 5)], host.handshakes
    assert host.errors == 0


def test_out_stream_zero_past_max_and_another_stream_in_move_data_are_dropped_and_counted():
    async def body(ctx, dut, host):
        await host.send(ctx, 0, bytes(1024), stream=0, pending=0)
        await host.send(ctx, 0, bytes(1024), stream=9, pending=0)
        assert host.handshakes == [("NRDY", 0), ("NRDY", 0)], host.handshakes
        await host.send(ctx, 0, bytes(4), stream=2, pending=0)  # primes 2
        await host.idle(ctx, 10)
        await host.send(ctx, 0, counter_bytes(0, 1024), stream=2, pending=1)
        await host.send(ctx, 1, bytes(1024), stream=3, pending=0)  # not the stream moving
        await host.send(ctx, 1, counter_bytes(1024, 8), stream=2, pending=0)
        await host.idle(ctx, 600)
        assert (ctx.get(dut.checker.errors), ctx.get(dut.checker.offset)) == (0, 1032)

    assert simulate(out_endpoint(), body).errors == 3


def test_the_streams_device_companions_say_max_streams_and_the_probes_say_none():
    from busprobe.gateware.usb3.descriptors import build_descriptors
    from busprobe.gateware.usb3.streams_device import Usb3StreamsDevice
    from busprobe.protocol.streams import MAX_STREAMS_EXPONENT

    def companions(collection):
        configuration = next(bytes(raw) for kind, _, raw in collection if kind == 2)
        found, offset = [], 0
        while offset < len(configuration):
            if configuration[offset + 1] == 0x30:  # SuperSpeed endpoint companion
                found.append(configuration[offset + 3])
            offset += configuration[offset]
        return found

    streams = Usb3StreamsDevice(phy=None)._descriptors()
    assert companions(streams) == [MAX_STREAMS_EXPONENT] * 2
    assert companions(build_descriptors()) == [0, 0]


def test_in_tagged_the_erdy_names_the_stream_of_the_next_packet_buffered_once_primed():
    """UAS's data-in pipe: packets of stream 5 (a full one whose ``last`` ends the transfer)
    then of stream 3 (short) are buffered; the host primes 3 first, then 5. The device selects
    5 first (its packets are in front), 3 after, each packet carrying its own stream, EOB on
    each transfer's last."""
    dut = StreamInEndpoint(endpoint_number=1, slots=4, max_streams=8, tagged=True,
                           by_want=True)

    async def body(ctx, dut, host):
        ctx.set(dut.framed, 1)
        for stream_id, length in ((5, 1024), (3, 300)):
            words = (length + 3) // 4
            for word in range(words):
                last = word == words - 1
                ctx.set(dut.stream.valid, 1)
                ctx.set(dut.stream.payload, {"data": word, "last": last,
                                             "keep": 0b1111 if not last or length % 4 == 0
                                             else (1 << (length % 4)) - 1})
                ctx.set(dut.packet_stream_id, stream_id)
                await host.tick(ctx)
            ctx.set(dut.stream.valid, 0)
        await host.ack(ctx, 0, 2, 3, 1)  # prime 3: not the stream in front
        await host.idle(ctx, 30)
        assert host.handshakes == [("NRDY", 0)], host.handshakes
        await host.ack(ctx, 0, 2, 5, 1)  # prime 5: selected at once
        await host.idle(ctx, 30)
        assert host.handshakes == [("NRDY", 0), ("NRDY", 0), ("ERDY", 5)], host.handshakes
        await host.ack(ctx, 0, 2, 5, 1)  # Start Stream on 5
        await host.idle(ctx, 400)
        await host.ack(ctx, 1, 0, 5, 0)  # its packet acknowledged; 3's ERDY follows
        await host.idle(ctx, 30)
        assert host.handshakes[-1] == ("ERDY", 3), host.handshakes
        await host.ack(ctx, 1, 2, 3, 1)
        await host.idle(ctx, 200)

    host = simulate(dut, body)
    assert host.packets == [(0, 5, 1), (1, 3, 1)], host.packets
    assert host.errors == 0


def test_out_by_want_the_erdy_names_the_stream_the_device_wants_once_the_host_primed_it():
    async def body(ctx, dut, host):
        ctx.set(dut.want, 6)
        await host.send(ctx, 0, bytes(4), stream=4, pending=0)  # primes 4: not wanted
        await host.idle(ctx, 20)
        assert host.handshakes == [("NRDY", 0)], host.handshakes
        await host.send(ctx, 0, bytes(4), stream=6, pending=0)  # primes 6: selected
        await host.idle(ctx, 20)
        assert host.handshakes == [("NRDY", 0), ("NRDY", 0), ("ERDY", 6)], host.handshakes
        await host.send(ctx, 0, counter_bytes(0, 64), stream=6, pending=0)
        await host.idle(ctx, 300)
        ctx.set(dut.want, 4)  # the next command's stream, primed before
        await host.idle(ctx, 20)
        assert host.handshakes[-1] == ("ERDY", 4), host.handshakes
        await host.send(ctx, 1, counter_bytes(64, 64), stream=4, pending=0)
        await host.idle(ctx, 300)
        assert (ctx.get(dut.checker.errors), ctx.get(dut.checker.offset)) == (0, 128)

    dut = CheckedStreamEndpoint(endpoint_number=2, slots=4, max_streams=8, by_want=True)
    assert simulate(dut, body).errors == 0


def test_in_tagged_a_pipe_prime_lets_the_erdy_name_any_stream_and_nostream_waits_for_the_next():
    """A host that primes the pipe (Stream ID Prime, 0xFFFE) rather than a stream, and answers
    a selection it holds no transfer for with NoStream (0xFFFF): the device selects the stream
    of its next packet after the prime, goes back to Prime Pipe on the refusal without another
    ERDY, and selects the same stream after the next prime, whose packet then carries it."""
    dut = StreamInEndpoint(endpoint_number=1, slots=4, max_streams=8, tagged=True,
                           by_want=True)

    async def body(ctx, dut, host):
        ctx.set(dut.framed, 1)
        for word in range(75):  # 300 bytes of stream 7
            last = word == 74
            ctx.set(dut.stream.valid, 1)
            ctx.set(dut.stream.payload, {"data": word, "last": last, "keep": 0b1111})
            ctx.set(dut.packet_stream_id, 7)
            await host.tick(ctx)
        ctx.set(dut.stream.valid, 0)
        await host.idle(ctx, 30)
        assert host.handshakes == [], host.handshakes  # nothing primed: no ERDY
        await host.ack(ctx, 0, 1, PRIME_STREAM_ID, 1)  # the pipe primed
        await host.idle(ctx, 30)
        assert host.handshakes == [("NRDY", 0), ("ERDY", 7)], host.handshakes
        assert ctx.get(dut.state) == StreamState.START_STREAM
        await host.ack(ctx, 0, 0, NOSTREAM_STREAM_ID, 0)  # refused: no transfer on 7
        await host.idle(ctx, 60)
        assert ctx.get(dut.state) == StreamState.PRIME_PIPE
        assert host.handshakes == [("NRDY", 0), ("ERDY", 7)], host.handshakes
        await host.ack(ctx, 0, 1, PRIME_STREAM_ID, 1)  # primed again: 7 selected again
        await host.idle(ctx, 30)
        assert host.handshakes[2:] == [("NRDY", 0), ("ERDY", 7)], host.handshakes
        await host.ack(ctx, 0, 1, 7, 1)  # Start Stream on 7
        await host.idle(ctx, 200)

    host = simulate(dut, body)
    assert host.packets == [(0, 7, 1)], host.packets
    assert host.errors == 0


def test_out_by_want_a_pipe_prime_selects_the_wanted_stream_and_nostream_unprimes_the_pipe():
    async def body(ctx, dut, host):
        ctx.set(dut.want, 5)
        await host.send(ctx, 0, b"", stream=PRIME_STREAM_ID, pending=1)  # the pipe primed
        await host.idle(ctx, 20)
        assert host.handshakes == [("NRDY", 0), ("ERDY", 5)], host.handshakes
        await host.send(ctx, 0, b"", stream=NOSTREAM_STREAM_ID, pending=0)  # refused
        await host.idle(ctx, 40)
        assert ctx.get(dut.state) == StreamState.PRIME_PIPE
        assert host.handshakes == [("NRDY", 0), ("ERDY", 5)], host.handshakes  # no answer
        await host.send(ctx, 0, b"", stream=PRIME_STREAM_ID, pending=1)  # primed again
        await host.idle(ctx, 20)
        assert host.handshakes[2:] == [("NRDY", 0), ("ERDY", 5)], host.handshakes
        await host.send(ctx, 0, counter_bytes(0, 64), stream=5, pending=0)
        await host.idle(ctx, 300)
        assert (ctx.get(dut.checker.errors), ctx.get(dut.checker.offset)) == (0, 64)

    dut = CheckedStreamEndpoint(endpoint_number=2, slots=4, max_streams=8, by_want=True)
    assert simulate(dut, body).errors == 0


def test_in_tagged_buffered_sense_ius_go_one_stream_after_another_without_a_new_write():
    """UAS's status pipe behind a host that primed the pipe, with three SENSE IUs (16 bytes,
    streams 5, 6, 7) buffered and nothing written after them: each next stream's ERDY goes
    within five cycles of the host's ACK of the last one's packet. (Queued writes behind
    ``ideal`` fall a few SENSE IUs behind; the link trace shows each ERDY right after the host's
    ACK, which went on the host's lane behind a data packet: the host's order, not this
    endpoint's.)"""
    dut = StreamInEndpoint(endpoint_number=1, slots=2, max_streams=8, tagged=True,
                           by_want=True)
    waits = []

    async def body(ctx, dut, host):
        ctx.set(dut.framed, 1)
        for stream_id in (5, 6, 7):
            for word in range(4):
                ctx.set(dut.stream.valid, 1)
                ctx.set(dut.stream.payload, {"data": word, "last": word == 3, "keep": 0b1111})
                ctx.set(dut.packet_stream_id, stream_id)
                await host.tick(ctx)
        ctx.set(dut.stream.valid, 0)
        await host.ack(ctx, 0, 1, PRIME_STREAM_ID, 1)
        await host.idle(ctx, 30)
        assert host.handshakes == [("NRDY", 0), ("ERDY", 5)], host.handshakes
        for sequence, stream_id in enumerate((5, 6)):
            await host.ack(ctx, sequence, 1, stream_id, 1)  # Start Stream
            await host.idle(ctx, 40)
            announced = len(host.handshakes)
            await host.ack(ctx, sequence + 1, 0, stream_id, 0)  # its packet acknowledged
            cycles = 1
            while len(host.handshakes) == announced and cycles < 40:
                await host.tick(ctx)
                cycles += 1
            waits.append(cycles)
        await host.ack(ctx, 2, 1, 7, 1)
        await host.idle(ctx, 40)

    host = simulate(dut, body)
    assert host.handshakes[1:] == [("ERDY", 5), ("ERDY", 6), ("ERDY", 7)], host.handshakes
    assert max(waits) <= 5, waits
    assert host.packets == [(0, 5, 1), (1, 6, 1), (2, 7, 1)], host.packets
    assert host.errors == 0
