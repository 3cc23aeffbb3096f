"""Bulk streams through the usbredir export (``sim:usb3?design=streams``): the capability,
``max_streams`` in ep_info, alloc/free answered with ``bulk_streams_status``, and each bulk
packet moved on the stream its ``stream_id`` names by the simulated xHCI's stream rings and the
gateware's stream protocol, every byte checked; a stream not allocated is refused in one answer."""

import struct

import pytest
from busprobe.protocol import usb3
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.protocol.streams import MAX_STREAMS
from busprobe.sim.export.tests.usbredir_peers import GUEST_CAPS, Guest, exported
from busprobe.sim.export.usbredir_export import CAPABILITIES
from busprobe.sim.export.usbredir_wire import (
    ALLOC_BULK_STREAMS,
    ENDPOINT_SLOTS,
    FREE_BULK_STREAMS,
    Cap,
    PacketType,
    Status,
    endpoint_slot,
)

VENDOR_IN, VENDOR_OUT = 0xC0, 0x40
BOTH = 1 << endpoint_slot(usb3.EP_IN) | 1 << endpoint_slot(usb3.EP_OUT)
LENGTH = 8 << 10


def _streams_status(guest):
    status = guest.until(PacketType.BULK_STREAMS_STATUS)
    return status.fields  # endpoints, no_streams, status


def _bulk(guest, endpoint, length_or_data, stream_id):
    data = b"" if isinstance(length_or_data, int) else length_or_data
    length = length_or_data if isinstance(length_or_data, int) else len(data)
    return guest.send(PacketType.BULK_PACKET,
                      guest.negotiated.bulk_body(endpoint, 0, length, stream_id), data)


@pytest.mark.sim
def test_streams_are_advertised_allocated_and_each_packet_moves_on_its_stream_checked():
    assert Cap.BULK_STREAMS in CAPABILITIES
    with exported("sim:usb3?design=streams") as (theirs, _):
        guest = Guest(theirs, caps=GUEST_CAPS | {Cap.BULK_STREAMS})
        guest.until(PacketType.INTERFACE_INFO)
        ep_info = guest.receive()
        streams = struct.unpack_from(f"<{ENDPOINT_SLOTS}I", ep_info.raw, 96 + 2 * ENDPOINT_SLOTS)
        assert streams[endpoint_slot(usb3.EP_IN)] == streams[endpoint_slot(usb3.EP_OUT)] \
            == MAX_STREAMS
        assert streams[endpoint_slot(0x80)] == 0
        guest.until(PacketType.DEVICE_CONNECT)

        # More streams than the companions offer: refused; then four on both endpoints.
        guest.send(PacketType.ALLOC_BULK_STREAMS, ALLOC_BULK_STREAMS.pack(BOTH, 2 * MAX_STREAMS))
        assert _streams_status(guest) == (BOTH, 0, Status.INVAL)
        guest.send(PacketType.ALLOC_BULK_STREAMS, ALLOC_BULK_STREAMS.pack(BOTH, 4))
        assert _streams_status(guest) == (BOTH, 4, Status.SUCCESS)

        guest.control(VENDOR_OUT, usb3.Request.SET_PATTERN, Pattern.PRBS31, 0, b"")
        w_value, w_index = usb3.encode_in_transfer(LENGTH)
        guest.control(VENDOR_OUT, usb3.Request.SET_IN_TRANSFER, w_value, w_index, b"")
        # Stream 0 on an endpoint with streams, and a stream past those allocated: refused.
        for bad in (0, 5):
            sent = _bulk(guest, usb3.EP_IN, LENGTH, bad)
            answer = guest.until(PacketType.BULK_PACKET)
            assert (answer.id, answer.fields[1]) == (sent, Status.INVAL), bad

        asked = {_bulk(guest, usb3.EP_IN, LENGTH, stream): stream for stream in (3, 1, 2)}
        received = [guest.until(PacketType.BULK_PACKET) for _ in asked]
        assert sorted(r.id for r in received) == sorted(asked)
        assert all(r.fields[1] == Status.SUCCESS and r.fields[3] == asked[r.id]
                   for r in received)
        expected = PatternStream(Pattern.PRBS31)  # the device's stream, in the order it moved
        assert sum(expected.check(r.data).errors for r in received) == 0
        assert sum(len(r.data) for r in received) == 3 * LENGTH

        source = PatternStream(Pattern.PRBS31)
        sent = {_bulk(guest, usb3.EP_OUT, source.take(LENGTH), stream): stream
                for stream in (4, 2)}
        answers = [guest.until(PacketType.BULK_PACKET) for _ in sent]
        assert all(a.fields[1] == Status.SUCCESS and a.fields[3] == sent[a.id] for a in answers)
        _, raw = guest.control(VENDOR_IN, usb3.Request.GET_TELEMETRY, 0, 0, usb3.TELEMETRY_SIZE)
        telemetry = usb3.unpack_telemetry(raw)
        assert telemetry["out_bytes"] == 2 * LENGTH and telemetry["pattern_errors"] == 0
        assert telemetry["in_stream_errors"] == telemetry["out_stream_errors"] == 0

        guest.send(PacketType.FREE_BULK_STREAMS, FREE_BULK_STREAMS.pack(BOTH))
        assert _streams_status(guest) == (BOTH, 0, Status.SUCCESS)
        sent = _bulk(guest, usb3.EP_IN, LENGTH, 1)  # streams freed: stream 1 is no more
        answer = guest.until(PacketType.BULK_PACKET)
        assert (answer.id, answer.fields[1]) == (sent, Status.INVAL)
