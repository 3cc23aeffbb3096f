"""The SuperSpeed gateware exported over usbredir: announced at speed ``super`` with its own
descriptors (BOS, 1024-byte bulk endpoints, a 512-byte control endpoint), and bulk data both ways
through the simulated xHCI, every byte checked."""

import struct

import pytest
from busprobe.protocol import usb3
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.export.tests.usbredir_peers import Guest, exported
from busprobe.sim.export.usbredir_wire import PacketType, Speed, Status, endpoint_slot

GET_DESCRIPTOR, BOS = 6, 15
VENDOR_IN, VENDOR_OUT = 0xC0, 0x40


@pytest.mark.sim
def test_the_superspeed_device_is_exported_at_super_speed_and_moves_checked_data_both_ways():
    with exported("sim:usb3") as (theirs, speed):
        assert speed == Speed.SUPER
        guest = Guest(theirs)
        guest.until(PacketType.INTERFACE_INFO)
        ep_info = guest.receive()
        connect = guest.receive()
        assert connect.kind == PacketType.DEVICE_CONNECT and connect.fields[0] == Speed.SUPER
        sizes = struct.unpack_from("<32H", ep_info.raw, 96)
        assert sizes[endpoint_slot(0x00)] == 512  # bMaxPacketSize0 9 is an exponent at SS
        assert sizes[endpoint_slot(usb3.EP_IN)] == sizes[endpoint_slot(usb3.EP_OUT)] == 1024

        status, device = guest.control(0x80, GET_DESCRIPTOR, 0x0100, 0, 18)
        assert status == Status.SUCCESS and device[2:4] == b"\x00\x03" and device[7] == 9
        status, head = guest.control(0x80, GET_DESCRIPTOR, BOS << 8, 0, 5)
        assert status == Status.SUCCESS and head[1] == BOS
        status, bos = guest.control(0x80, GET_DESCRIPTOR, BOS << 8, 0,
                                    struct.unpack_from("<H", head, 2)[0])
        assert status == Status.SUCCESS and len(bos) == struct.unpack_from("<H", head, 2)[0]

        guest.control(VENDOR_OUT, usb3.Request.SET_PATTERN, Pattern.PRBS31, 0, b"")
        w_value, w_index = usb3.encode_in_transfer(64 << 10)
        guest.control(VENDOR_OUT, usb3.Request.SET_IN_TRANSFER, w_value, w_index, b"")
        asked = [guest.bulk(usb3.EP_IN, 64 << 10) for _ in range(2)]
        received = [guest.until(PacketType.BULK_PACKET) for _ in asked]
        assert [r.id for r in received] == asked
        assert all(r.fields[1] == Status.SUCCESS for r in received)
        expected = PatternStream(Pattern.PRBS31)
        assert sum(expected.check(r.data).errors for r in received) == 0
        assert sum(len(r.data) for r in received) == 128 << 10

        source = PatternStream(Pattern.PRBS31)
        sent = guest.bulk(usb3.EP_OUT, source.take(64 << 10))
        answer = guest.until(PacketType.BULK_PACKET)
        assert answer.id == sent and answer.fields[1] == Status.SUCCESS
        _, raw = guest.control(VENDOR_IN, usb3.Request.GET_TELEMETRY, 0, 0,
                               usb3.TELEMETRY_SIZE)
        telemetry = usb3.unpack_telemetry(raw)
        assert telemetry["out_bytes"] == 64 << 10 and telemetry["pattern_errors"] == 0
