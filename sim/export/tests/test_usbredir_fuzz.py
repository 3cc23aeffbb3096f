"""The usbredir exporter against a hostile guest (seeded, reproducible).

The wire reader gets random byte streams and headers that claim up to 4 GiB: it raises nothing
but :class:`ProtocolError` and stores at most one packet's bound plus what it was fed. The whole
service (acceptor, connection handling, export) on a loopback port then gets thousands of
malformed, truncated, oversized and out-of-order messages over hundreds of connections, in front
of a device in this process (fast; the simulated gateware gets the same in
``test_usbredir_service.py``): it never stops serving, never lets a request through that the
device cannot serve, never holds more than the largest transfer it may carry a few times over,
whatever the headers claim (tracemalloc), and serves a well-behaved guest afterwards. ``make
test`` sends 3,000 messages, ``make bench`` 20,000.
"""

import random
import socket
import struct
import threading
import tracemalloc

import pytest
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.export.serve import UsbredirService, listen
from busprobe.sim.export.tests.usbredir_peers import (
    GUEST_CAPS,
    DescriptorDevice,
    Drain,
    hostile_session,
    well_behaved_session,
)
from busprobe.sim.export.usbredir_wire import (
    MAX_BULK_DATA,
    Negotiated,
    PacketReader,
    PacketType,
    ProtocolError,
    max_length,
)
from busprobe.transport import DeviceGone

#: Most bytes the whole fuzz may hold at once: a bulk IN transfer the device may really carry
#: (up to MAX_BULK_DATA, 16 MiB, which a random header sometimes asks for) a few times over in
#: its copies, far below one header's 4 GiB claim that was refused unread.
PEAK_BYTES = 4 * MAX_BULK_DATA


def test_a_header_claiming_4_gib_is_refused_before_a_byte_of_it_is_stored():
    reader = PacketReader(Negotiated(GUEST_CAPS))
    reader.feed(Negotiated(GUEST_CAPS).hello("peer"))
    reader.packets()
    tracemalloc.start()
    try:
        reader.feed(struct.pack("<III", PacketType.BULK_PACKET, 0xFFFF_FFFF, 1) + b"x" * 100)
        with pytest.raises(ProtocolError, match="claims 4294967295 bytes, more than the"):
            reader.packets()
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("stream, message", [
    (struct.pack("<III", PacketType.RESET, 0, 1), "reset packet before the hello"),
    (Negotiated(GUEST_CAPS).hello("a") * 2, "a second hello"),
])
def test_the_hello_comes_first_and_once(stream, message):
    with pytest.raises(ProtocolError, match=message):
        reader = PacketReader(Negotiated(GUEST_CAPS))
        reader.feed(stream)
        reader.packets()


def test_random_streams_raise_only_protocol_errors_and_buffer_at_most_one_packet():
    rng = random.Random(33)
    streams = errors = 0
    for _ in range(2000):
        negotiated = Negotiated(GUEST_CAPS)
        reader = PacketReader(negotiated)
        feed = Negotiated(GUEST_CAPS).hello("p") if rng.random() < 0.9 else b""
        feed += rng.randbytes(rng.randrange(0, 300))
        streams += 1
        try:
            for start in range(0, len(feed), 17):
                reader.feed(feed[start:start + 17])
                reader.packets()
                # What stays stored: part of one packet, within its type's bound.
                assert reader.buffered <= 16 + max(max_length(t, negotiated)
                                                   for t in PacketType) + 17
        except ProtocolError:
            errors += 1
    assert streams == 2000 and 0 < errors < streams


def _fuzz(messages: int, seed: int) -> dict:
    """Run the service on a loopback port, send ``messages`` hostile messages, then one good
    guest; returns the figures."""
    device = DescriptorDevice()
    stopping = threading.Event()

    def check_device() -> None:
        if stopping.is_set():
            raise DeviceGone("test over")

    listener = listen("127.0.0.1:0")
    service = UsbredirService(device, listener, check_device=check_device)
    ended: list[str] = []
    runner = threading.Thread(target=lambda: ended.append(service.run()), daemon=True)
    runner.start()
    address = listener.getsockname()
    rng = random.Random(seed)
    counts: dict[str, int] = {}
    sent = sessions = 0
    tracemalloc.start()
    try:
        while sent < messages:
            with socket.create_connection(address, timeout=30) as sock:
                drain = Drain(sock)
                sent += hostile_session(sock, rng, min(rng.randrange(2, 80), messages - sent + 1),
                                        counts)
                try:
                    sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass  # the export dropped us first
                drain.thread.join(30)  # the export closes its end once it served or dropped us
                assert not drain.thread.is_alive(), "the export kept a finished guest"
            sessions += 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert runner.is_alive() and not ended, f"the service stopped: {ended}"
    with socket.create_connection(address, timeout=30) as sock:
        data = well_behaved_session(sock)
    assert len(data) == 4096 and PatternStream(Pattern.COUNTER).check(data).errors == 0
    stopping.set()
    runner.join(10)
    listener.close()
    assert ended == ["test over"]
    assert device.violations == [], device.violations[:5]
    return {"messages": sent, "sessions": sessions, "peak": peak, "counts": counts,
            "served": service.served, "requests": device.requests, "resets": device.resets}


def _report(figures: dict) -> None:
    print(f"\nusbredir fuzz: {figures['messages']} messages over {figures['sessions']} "
          f"connections ({', '.join(f'{k} {v}' for k, v in sorted(figures['counts'].items()))});"
          f" {figures['requests']} reached the device, {figures['resets']} bus resets; peak "
          f"{figures['peak'] / 2**20:.1f} MiB held; a good guest served after")


def test_thousands_of_hostile_messages_never_stop_the_service():
    figures = _fuzz(3000, seed=34)
    _report(figures)
    assert figures["messages"] >= 3000 and figures["peak"] < PEAK_BYTES
    assert figures["served"] == figures["sessions"] + 1
    for kind in ("oversized", "truncated", "out_of_order", "hello_again", "no_hello", "bulk"):
        assert figures["counts"].get(kind), kind


@pytest.mark.bench
def test_bench_twenty_thousand_hostile_messages_never_stop_the_service():
    figures = _fuzz(20000, seed=35)
    _report(figures)
    assert figures["messages"] >= 20000 and figures["peak"] < PEAK_BYTES
