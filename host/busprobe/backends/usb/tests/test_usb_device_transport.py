"""The one USB device driver (UsbDeviceTransport) on the libusb platform, end to end through the
sweep engine and the CLI, against the fake libusb device of conftest.py."""

import json
import struct

import pytest
from busprobe.cli import main
from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sweep import Sweep, SweepPlan
from busprobe.targets import open_transport
from busprobe.transport import DeviceNotFound, InvalidRequest

SELECTOR = f"usb:{usb2.VID:04x}:{usb2.PID:04x}"


def sweep(transport, directions=("in", "out")):
    transport.min_bytes = 16 << 10  # hardware amortises over 4 MiB; the fake needs no more
    plan = SweepPlan(directions, (1000, 4096), (1, 4), 3, ({},), Pattern.PRBS31)
    return Sweep(transport, plan).run()


@pytest.mark.parametrize("order", ["fifo", "shuffle"])
def test_a_sweep_over_libusb_checks_every_byte_both_ways_with_zero_errors(fake_bus, order):
    bus = fake_bus(order=order)
    with open_transport(SELECTOR) as transport:
        assert bus.claimed and transport.bus.kind == "usb2-hs"
        points = sweep(transport)
    assert not bus.claimed  # released on close
    assert [p.errors for p in points] == [0] * 8
    assert all(p.samples[0] > 0 for p in points)


def test_a_short_in_completion_shows_up_as_lost_bytes_in_the_sweep(fake_bus):
    fake_bus(short={3: 10})
    with open_transport(SELECTOR) as transport:
        points = sweep(transport, ("in",))
    assert points[0].lost_bytes == 990 and points[0].short_transfers == 1
    assert [p.errors for p in points[1:]] == [0, 0, 0]  # the pattern restarted after it


def test_an_in_transfer_length_is_sent_to_the_device_only_when_it_changes(fake_bus, monkeypatch):
    bus = fake_bus()
    sent = []
    write = bus.control_write
    monkeypatch.setattr(bus, "control_write", lambda *a: (sent.append(a[1]), write(*a)))
    with open_transport(SELECTOR) as transport:
        for length in (1000, 1000, 4096, 4096):
            transport.stream("in", length, 2, 1, sink=PatternStream().check)
    assert sent.count(usb2.Request.SET_IN_TRANSFER) == 2
    assert bus.in_length == 4096


def test_an_out_stream_without_a_source_is_refused_before_anything_moves(fake_bus):
    bus = fake_bus()
    with open_transport(SELECTOR) as transport:
        with pytest.raises(InvalidRequest, match="needs a data source"):
            transport.stream("out", 512, 2, 1)
    assert bus.submits == 0


def test_a_device_with_another_serial_is_not_opened_and_the_message_lists_serials(fake_bus):
    fake_bus(serial="OTHER")
    transport = open_transport(SELECTOR + "#WANTED")
    with pytest.raises(DeviceNotFound, match="serials present: OTHER"):
        transport.open()


def test_a_device_that_does_not_speak_the_protocol_is_refused_at_open(fake_bus, monkeypatch):
    bus = fake_bus()
    monkeypatch.setattr(bus, "control_read", lambda *a: b"\0" * usb2.INFO_SIZE)
    transport = open_transport(SELECTOR)
    with pytest.raises(InvalidRequest, match="not a busprobe USB device of a known protocol"):
        transport.open()
    assert not bus.claimed  # open failed: nothing stays claimed


def test_a_device_without_vendor_requests_gets_the_stock_designs_rules(fake_bus):
    bus = fake_bus()
    transport = open_transport(SELECTOR)
    transport.platform.vendor_requests = False  # as LUNA's stock reference design
    with transport:
        with pytest.raises(InvalidRequest, match="only streams COUNTER"):
            transport.set_pattern(Pattern.PRBS31)
        with pytest.raises(InvalidRequest, match="multiples of 512"):
            transport.validate("in", 1000, 1)
        transport.validate("out", 1000, 1)
        assert transport.read_telemetry().raw == {}
        transport.stream("in", 1024, 2, 2, sink=PatternStream().check)
    assert bus.in_length == 0  # no SET_IN_TRANSFER was sent


def test_busprobe_sweep_runs_on_the_libusb_backend_and_saves_checked_points(fake_bus, tmp_path,
                                                                           capsys):
    fake_bus(order="reverse")
    out = tmp_path / "r.json"
    status = main(["sweep", "--device", SELECTOR, "--direction", "both", "--lengths", "4K",
                   "--queue-depth", "2", "--json", str(out), "--no-progress"])
    assert status == 0, capsys.readouterr().err
    doc = json.loads(out.read_text())
    assert doc["complete"] and [p["errors"] for p in doc["points"]] == [0, 0]
    assert doc["bus"]["kind"] == "usb2-hs" and doc["points"][0]["device_throughput"] is None


def test_loopback_between_streamed_directions_sets_the_mode_and_checks_every_byte(fake_bus):
    bus = fake_bus()
    with open_transport(SELECTOR) as transport:
        assert "loopback" in transport.directions
        points = sweep(transport, ("in", "loopback", "out"))
    assert [p.errors for p in points] == [0] * 12
    assert all(p.lost_bytes == 0 and p.device_byte_mismatch == 0 for p in points)
    # Pattern at open, loopback for its four points, pattern again: each switch sent once.
    assert bus.modes == [usb2.DataMode.PATTERN, usb2.DataMode.LOOPBACK, usb2.DataMode.PATTERN]


def test_loopback_is_refused_in_bot_and_needs_a_source(fake_bus):
    fake_bus(features=usb2.ALL_FEATURES)  # BOT needs the full design's framer
    with open_transport(SELECTOR) as transport:
        with pytest.raises(InvalidRequest, match="needs a data source"):
            transport.stream("loopback", 512, 2, 1)
        transport.set_protocol("bot")
        with pytest.raises(InvalidRequest, match="no BOT form"):
            transport.stream("loopback", 512, 1, 1, source=PatternStream().take)


@pytest.mark.parametrize("features", [usb2.NO_FEATURES, usb2.ALL_FEATURES])
def test_the_result_has_only_the_counters_the_bitstream_counts(fake_bus, tmp_path, features):
    # 1000-byte transfers end with a short packet each; only the full design counts them.
    bus = fake_bus(features=features)
    out = tmp_path / "r.json"
    assert main(["sweep", "--device", SELECTOR, "--direction", "in", "--lengths", "1000",
                 "--queue-depth", "1", "--min-bytes", "16K", "--json", str(out),
                 "--no-progress"]) == 0
    point = json.loads(out.read_text())["points"][0]
    telemetry = point["telemetry"]
    assert [name for name, _ in usb2.TELEMETRY if name in telemetry] == \
        list(usb2.present_words(features))
    assert telemetry.get("in_short") == (point["transfers"] if features else None)
    assert ("rx_crc_errors" in telemetry) == bool(features & usb2.Feature.RX_DROPS)
    assert bus.telemetry["in_short"] == point["transfers"]  # the fake counted, the lean hid it


def test_a_device_of_an_older_protocol_version_is_refused_naming_it(fake_bus, monkeypatch):
    bus = fake_bus()
    # Protocol version 3's INFO: the common head only, no feature bits.
    old = struct.pack(usb2.INFO_HEAD_FORMAT, usb2.MAGIC, 3, usb2.MAX_PACKET_SIZE)
    monkeypatch.setattr(bus, "control_read", lambda *a: old)
    with pytest.raises(InvalidRequest, match=f"magic {usb2.MAGIC:#x}, version 3; known: "
                                             f"{usb2.MAGIC:#x} version {usb2.PROTOCOL_VERSION}"):
        open_transport(SELECTOR).open()


def test_a_port_in_the_selector_picks_the_board_there_and_names_it(fake_bus):
    """Two boards may carry one serial: ``@PORT`` (the sysfs name, here bus 1 port 2) tells
    them apart; another port finds nothing."""
    fake_bus()
    with open_transport(f"{SELECTOR}@1-2") as transport:
        assert transport.bus.extra["port"] == "1-2"
    transport = open_transport(f"{SELECTOR}#{usb2.SERIAL}@1-3")
    with pytest.raises(DeviceNotFound, match="no such USB device at port 1-3"):
        transport.open()
    transport.close()
