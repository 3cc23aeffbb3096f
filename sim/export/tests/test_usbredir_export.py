"""The usbredir export against a small usbredir guest written here: the device it sees is the
simulated gateware (descriptors, vendor requests, pattern data all come from Verilator)."""

import os
import signal
import socket
import struct
import threading
import time

import pytest
from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.export.serve import check_simulator
from busprobe.sim.export.tests.usbredir_peers import Guest
from busprobe.sim.export.usbredir_export import UsbredirExport, bulk_length
from busprobe.sim.export.usbredir_wire import (
    Cap,
    PacketType,
    Status,
    TransferType,
    endpoint_slot,
)
from busprobe.sim.usb2.backend import SimUsb2Platform
from busprobe.targets import describe

VENDOR_IN, VENDOR_OUT = 0xC0, 0x40
GET_DESCRIPTOR, SET_CONFIGURATION = 6, 9


@pytest.fixture
def exported():
    """(guest, platform, export thread result): the gateware exported on a socket pair."""
    platform = SimUsb2Platform(describe("sim:usb2"))
    platform.open()
    ours, theirs = socket.socketpair()
    export = UsbredirExport(platform, ours, version="busprobe test",
                            check_device=lambda: check_simulator(platform))
    ended: list[str] = []
    thread = threading.Thread(target=lambda: ended.append(export.serve()), daemon=True)
    thread.start()
    try:
        yield Guest(theirs), platform, (thread, ended)
    finally:
        theirs.close()
        thread.join(30)
        ours.close()
        platform.close()


@pytest.mark.sim
def test_the_guest_sees_the_gateware_descriptors_and_vendor_requests(exported):
    guest, _, _ = exported
    interfaces = guest.until(PacketType.INTERFACE_INFO)
    ep_info = guest.receive()
    connect = guest.receive()
    assert interfaces.fields[0] == 1 and guest.negotiated.has(Cap.IDS_64BIT)
    types = ep_info.raw[:32]
    sizes = struct.unpack_from("<32H", ep_info.raw, 96)
    for endpoint in (usb2.EP_IN, usb2.EP_OUT):
        assert types[endpoint_slot(endpoint)] == TransferType.BULK
        assert sizes[endpoint_slot(endpoint)] == usb2.MAX_PACKET_SIZE
    assert connect.kind == PacketType.DEVICE_CONNECT
    speed, *_, vendor, product, _ = connect.fields
    assert (speed, vendor, product) == (2, usb2.VID, usb2.PID)  # high speed, 1209:0001

    status, device = guest.control(0x80, GET_DESCRIPTOR, 0x0100, 0, 64)
    assert status == Status.SUCCESS and len(device) == 18 and device[1] == 1
    status, serial = guest.control(0x80, GET_DESCRIPTOR, 0x0300 | device[16], 0x0409, 255)
    assert serial[2:serial[0]].decode("utf-16-le") == usb2.SERIAL
    status, info = guest.control(VENDOR_IN, usb2.Request.GET_INFO, 0, 0, usb2.INFO_SIZE)
    assert usb2.unpack_info(info)["version"] == usb2.PROTOCOL_VERSION
    assert usb2.unpack_info(info)["features"] == usb2.NO_FEATURES  # sim:usb2: the lean default
    # A descriptor the device does not have is the device's STALL, passed on as a stall.
    assert guest.control(0x80, GET_DESCRIPTOR, 0x0F00, 0, 5) == (Status.STALL, b"")

    configured = guest.send(PacketType.SET_CONFIGURATION, b"\x01")
    answer = guest.until(PacketType.CONFIGURATION_STATUS)
    assert (answer.id, answer.fields) == (configured, (Status.SUCCESS, 1))
    assert guest.receive().kind == PacketType.INTERFACE_INFO  # announced again, as specified
    asked = guest.send(PacketType.GET_CONFIGURATION)
    answer = guest.until(PacketType.CONFIGURATION_STATUS)
    assert (answer.id, answer.fields) == (asked, (Status.SUCCESS, 1))
    # Interface 0 has alternate setting 0 only: the gateware answers GET_INTERFACE and
    # SET_INTERFACE to it, and STALLs setting 1; each answer is passed on as it came.
    for kind, body, expected in ((PacketType.GET_ALT_SETTING, b"\x00", (Status.SUCCESS, 0, 0)),
                                 (PacketType.SET_ALT_SETTING, b"\x00\x00",
                                  (Status.SUCCESS, 0, 0)),
                                 (PacketType.SET_ALT_SETTING, b"\x00\x01",
                                  (Status.STALL, 0, 1))):
        asked = guest.send(kind, body)
        answer = guest.until(PacketType.ALT_SETTING_STATUS)
        assert (answer.id, answer.fields) == (asked, expected)
    guest.send(PacketType.RESET)  # a real bus reset and enumeration in the simulation
    assert guest.control(0x80, GET_DESCRIPTOR, 0x0100, 0, 18)[1] == device


@pytest.mark.sim
def test_bulk_data_is_the_gateware_pattern_and_cancelled_transfers_never_reach_the_bus(exported):
    guest, _, _ = exported
    guest.until(PacketType.DEVICE_CONNECT)
    assert guest.control(VENDOR_OUT, usb2.Request.SET_PATTERN, Pattern.COUNTER, 0, b"")[0] == 0
    # OUT: the device's checker sees the pattern; queued transfers go out as one stream.
    sent = PatternStream(Pattern.COUNTER)
    out_ids = [guest.bulk(usb2.EP_OUT, sent.take(4096)) for _ in range(3)]
    answers = [guest.until(PacketType.BULK_PACKET) for _ in out_ids]
    assert [(a.id, a.fields[1], bulk_length(a.fields)) for a in answers] == [
        (i, Status.SUCCESS, 4096) for i in out_ids]
    # IN: a 64 KiB transfer keeps the export busy while three of four 512-byte ones queue;
    # two of those are cancelled before the export reaches them.
    w_value, w_index = usb2.encode_in_transfer(0)
    guest.control(VENDOR_OUT, usb2.Request.SET_IN_TRANSFER, w_value, w_index, b"")
    big = guest.bulk(usb2.EP_IN, 65536)
    small = [guest.bulk(usb2.EP_IN, 512) for _ in range(4)]
    for packet_id in small[1:3]:
        guest.send(PacketType.CANCEL_DATA_PACKET, packet_id=packet_id)
    answers = {a.id: a for a in (guest.until(PacketType.BULK_PACKET) for _ in range(5))}
    assert [answers[i].fields[1] for i in small] == [Status.SUCCESS, Status.CANCELLED,
                                                      Status.CANCELLED, Status.SUCCESS]
    expected = PatternStream(Pattern.COUNTER)
    received = b"".join(answers[i].data for i in (big, small[0], small[3]))
    assert len(received) == 65536 + 2 * 512
    assert expected.check(received).errors == 0  # no gap: the cancelled two moved nothing
    _, raw = guest.control(VENDOR_IN, usb2.Request.GET_TELEMETRY, 0, 0, usb2.TELEMETRY_SIZE)
    telemetry = usb2.unpack_telemetry(raw)
    assert (telemetry["out_bytes"], telemetry["pattern_errors"]) == (3 * 4096, 0)
    assert telemetry["in_bytes"] == 65536 + 2 * 512
    # A cancel that crosses its transfer's answer is forgotten: QEMU reuses the id, and the
    # next request with it is carried out (Linux's usbtest unlink cases met this).
    reused = guest.bulk(usb2.EP_IN, 512)
    assert guest.until(PacketType.BULK_PACKET).fields[1] == Status.SUCCESS
    guest.send(PacketType.CANCEL_DATA_PACKET, packet_id=reused)
    status, _ = guest.control(VENDOR_IN, usb2.Request.GET_INFO, 0, 0, usb2.INFO_SIZE)
    guest.send(PacketType.BULK_PACKET, guest.negotiated.bulk_body(usb2.EP_IN, 0, 512),
               packet_id=reused)
    answer = guest.until(PacketType.BULK_PACKET)
    assert (status, answer.id, answer.fields[1]) == (Status.SUCCESS, reused, Status.SUCCESS)
    # A stopped xHCI endpoint sends its transfers again, with their ids, before the cancelled
    # ones are answered: the cancelled one is answered first, as cancelled, then the new one
    # is carried out (two requests with one id and the same data are not confused).
    busy = guest.bulk(usb2.EP_IN, 65536)
    body = guest.negotiated.bulk_body(usb2.EP_IN, 0, 512)
    again = guest.send(PacketType.BULK_PACKET, body)
    guest.send(PacketType.CANCEL_DATA_PACKET, packet_id=again)
    guest.send(PacketType.BULK_PACKET, body, packet_id=again)
    answers = [guest.until(PacketType.BULK_PACKET) for _ in range(3)]
    assert [(a.id, a.fields[1], len(a.data)) for a in answers] == [
        (busy, Status.SUCCESS, 65536), (again, Status.CANCELLED, 0),
        (again, Status.SUCCESS, 512)]
    # A zero-length OUT is a ZLP on the bus (usbtest's writes end with one), answered success;
    # an IN asking for 0 bytes is refused.
    zlp, nothing = guest.bulk(usb2.EP_OUT, b""), guest.bulk(usb2.EP_IN, 0)
    answers = {a.id: a.fields[1] for a in (guest.until(PacketType.BULK_PACKET) for _ in "ab")}
    assert (answers[zlp], answers[nothing]) == (Status.SUCCESS, Status.INVAL)


@pytest.mark.sim
def test_a_dead_simulator_is_a_device_disconnect(exported):
    guest, platform, (thread, ended) = exported
    guest.until(PacketType.DEVICE_CONNECT)
    os.kill(platform.server.pid, signal.SIGKILL)
    started = time.monotonic()
    assert guest.until(PacketType.DEVICE_DISCONNECT).kind == PacketType.DEVICE_DISCONNECT
    assert time.monotonic() - started < 10
    with pytest.raises(EOFError):
        guest.receive()
    thread.join(10)
    assert ended == ["sim:usb2: the simulator exited"]
