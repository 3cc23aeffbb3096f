"""The usbredir codec against byte layouts written out by hand from the protocol description."""

import struct

import pytest
from busprobe.sim.export.device_info import parse_device_info
from busprobe.sim.export.usbredir_export import CAPABILITIES, bulk_length
from busprobe.sim.export.usbredir_wire import (
    Cap,
    Negotiated,
    PacketReader,
    PacketType,
    endpoint_slot,
)


def peer_hello(caps: int, version: bytes = b"qemu 7.2") -> bytes:
    # type 0, length 64 + 4, id 0 (32-bit: nothing is agreed before the hellos)
    return struct.pack("<III", 0, 68, 0) + version.ljust(64, b"\0") + struct.pack("<I", caps)


def test_our_hello_has_a_32_bit_id_header_a_padded_version_and_the_capability_word():
    ours = Negotiated(CAPABILITIES)
    data = ours.hello("busprobe 0.1.0")
    assert data[:12] == struct.pack("<III", 0, 68, 0)
    assert data[12:76] == b"busprobe 0.1.0".ljust(64, b"\0")
    # bulk_streams (0), connect_device_version (1), ep_info_max_packet_size (4), 64-bit ids (5),
    # 32-bit bulk (6)
    assert struct.unpack("<I", data[76:]) == (0b0111_0011,)


def test_after_both_hellos_with_64_bit_ids_headers_carry_64_bit_ids():
    ours = Negotiated(CAPABILITIES)
    reader = PacketReader(ours)
    # the peer's hello, then a bulk IN request read with the header size the hello agreed on
    request = struct.pack("<IIQ", 101, 10, 0x1_0000_0002) + struct.pack("<BBHIH", 0x81, 0,
                                                                         0x0000, 0, 0x0001)
    reader.feed(peer_hello(1 << 5 | 1 << 6 | 1 << 4) + request[:7])
    (hello,) = reader.packets()
    assert hello.kind == PacketType.HELLO and ours.peer_version == "qemu 7.2"
    assert ours.has(Cap.IDS_64BIT) and ours.has(Cap.BULK_LENGTH_32BIT)
    assert not ours.has(Cap.CONNECT_DEVICE_VERSION)  # we offer it, the peer did not
    reader.feed(request[7:])
    (bulk,) = reader.packets()
    assert (bulk.kind, bulk.id, bulk_length(bulk.fields)) == (PacketType.BULK_PACKET,
                                                               0x1_0000_0002, 65536)
    reply = ours.encode(PacketType.BULK_PACKET, bulk.id, ours.bulk_body(0x81, 0, 65536), b"x")
    assert reply == (struct.pack("<IIQ", 101, 11, 0x1_0000_0002)
                     + struct.pack("<BBHIH", 0x81, 0, 0, 0, 1) + b"x")


def test_without_the_peers_capabilities_the_old_layouts_stay():
    ours = Negotiated(CAPABILITIES)
    reader = PacketReader(ours)
    reader.feed(peer_hello(0))
    reader.packets()
    assert ours.header.size == 12 and ours.bulk.size == 8 and ours.connect.size == 8
    assert len(ours.ep_info([0] * 32, [0] * 32, [0] * 32, [64] * 32)) == 12 + 96


def test_control_packets_split_into_their_fields_and_data():
    ours = Negotiated(CAPABILITIES)
    reader = PacketReader(ours)
    setup = struct.pack("<BBBBHHH", 0, 0x03, 0x40, 0, 1, 0, 4)
    reader.feed(peer_hello(1 << 5) + struct.pack("<IIQ", 100, 14, 7) + setup + b"abcd")
    _, control = reader.packets()
    assert control.fields == (0, 0x03, 0x40, 0, 1, 0, 4) and control.data == b"abcd"


def test_unknown_and_short_packets_are_read_past_by_their_length():
    ours = Negotiated(CAPABILITIES)
    reader = PacketReader(ours)
    reader.feed(peer_hello(0) + struct.pack("<III", 77, 3, 1) + b"xyz"
                + struct.pack("<III", 100, 2, 2) + b"ab" + struct.pack("<III", 3, 0, 3))
    _, unknown, short, reset = reader.packets()
    assert (unknown.kind, unknown.raw) == (None, b"xyz")
    assert (short.kind, short.fields, short.raw) == (PacketType.CONTROL_PACKET, (), b"ab")
    assert (reset.kind, reset.id) == (PacketType.RESET, 3)


@pytest.mark.parametrize(("address", "slot"), [(0x00, 0), (0x02, 2), (0x81, 17), (0x8F, 31)])
def test_endpoint_slots_put_in_endpoints_after_the_out_ones(address, slot):
    assert endpoint_slot(address) == slot


def test_descriptors_give_the_interfaces_and_endpoints_of_alternate_setting_zero():
    device = struct.pack("<BBHBBBBHHHBBBB", 18, 1, 0x200, 0xFF, 1, 2, 64, 0x1209, 1, 0x0102,
                         1, 2, 3, 1)
    config = (struct.pack("<BBHBBBBB", 9, 2, 0, 1, 1, 0, 0x80, 50)
              + struct.pack("<BBBBBBBBB", 9, 4, 0, 0, 2, 0xFF, 0, 0, 0)
              + struct.pack("<BBBBHB", 7, 5, 0x81, 2, 512, 0)
              + struct.pack("<BBBBHB", 7, 5, 0x02, 2, 512, 0)
              + struct.pack("<BBBBBBBBB", 9, 4, 0, 1, 1, 0xFF, 0, 0, 0)  # alt 1: not announced
              + struct.pack("<BBBBHB", 7, 5, 0x83, 3, 64, 4))
    info = parse_device_info(device, config)
    assert (info.vendor, info.product, info.bcd_device, info.max_packet_size0) == (
        0x1209, 1, 0x0102, 64)
    assert [i.number for i in info.interfaces] == [0]
    assert [(e.address, e.transfer_type, e.max_packet_size) for e in info.endpoints] == [
        (0x81, 2, 512), (0x02, 2, 512)]
    with pytest.raises(ValueError, match="broken at byte 9"):
        parse_device_info(device, config[:9] + b"\x01\x04")


@pytest.mark.parametrize(("argv", "message"), [
    (["--device", "sim:pcie", "--usbredir", "127.0.0.1:0"], "only simulated USB devices"),
    (["--device", "usb:1209:0001", "--usbredir", "127.0.0.1:0"], "only simulated USB devices"),
    (["--usbredir", "localhost"], "expected PORT, HOST:PORT or a Unix socket path"),
    (["--usbredir", "127.0.0.1:99999"], "expected PORT, HOST:PORT"),
    (["--usbredir", "no-such-host.invalid:4000"], "unknown host name 'no-such-host.invalid'"),
    (["--usbredir", "192.0.2.1:4000"], "this computer has no such address (EADDRNOTAVAIL); "
                                       "leave it out (--usbredir PORT listens on 127.0.0.1)"),
])
def test_serve_refuses_what_it_cannot_export_in_one_line(argv, message, capsys):
    from busprobe.cli import main

    assert main(["sim", "serve", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("busprobe: error: ") and message in err and err.count("\n") == 1


def test_a_port_in_use_is_one_line_naming_the_option_that_picks_another(capsys):
    from busprobe.cli import main
    from busprobe.sim.export.serve import listen

    with listen("0") as taken:  # PORT alone: 127.0.0.1, this computer only
        host, port = taken.getsockname()
        assert host == "127.0.0.1"
        assert main(["sim", "serve", "--usbredir", str(port)]) == 2
    err = capsys.readouterr().err
    assert err == (f"busprobe: error: cannot listen on 127.0.0.1:{port}: the address is in use "
                   "(EADDRINUSE); another program (or another busprobe sim serve) listens there: "
                   "choose another port with --usbredir PORT, or --usbredir 0 for a free one\n")
