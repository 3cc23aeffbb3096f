"""The one USB driver on a SuperSpeed busprobe device: ``usb:VID:PID`` opens it over libusb and
its GET_INFO answer (the USB3 magic) makes it a ``usb3-ss`` device (fake libusb of conftest.py,
answering as the SuperSpeed gateware does)."""

import re

import pytest
from busprobe.backends.usb.transport import SS_DISK_REFUSAL
from busprobe.protocol import usb3
from busprobe.protocol.patterns import Pattern
from busprobe.sweep import Sweep, SweepPlan
from busprobe.targets import open_transport
from busprobe.transport import InvalidRequest

from . import conftest

SELECTOR = f"usb:{usb3.VID:04x}:{usb3.PID:04x}"


def superspeed(fake_bus, monkeypatch, version=usb3.PROTOCOL_VERSION,
               features=usb3.NO_FEATURES):
    """The fake device at super speed, answering GET_INFO (with protocol ``version`` and
    ``features``) and GET_TELEMETRY with the USB3 layouts (:mod:`busprobe.protocol.usb3`)."""
    bus = fake_bus()
    usb2_read = bus.control_read
    info = bytearray(usb3.pack_info(features))
    info[4:6] = version.to_bytes(2, "little")

    def control_read(request_type, request, value, index, length, timeout):
        if request == usb3.Request.GET_INFO:
            return bytes(info[:length])
        if request == usb3.Request.GET_TELEMETRY:
            return usb3.pack_telemetry({**bus.telemetry, "pattern_errors": bus.pattern_errors,
                                        "first_error_offset": bus.first_error})
        return usb2_read(request_type, request, value, index, length, timeout)

    monkeypatch.setattr(bus, "control_read", control_read)
    monkeypatch.setattr(conftest.FakeDevice, "getDeviceSpeed", lambda self: 4)  # SUPER
    return bus


@pytest.fixture
def superspeed_bus(fake_bus, monkeypatch):
    return superspeed(fake_bus, monkeypatch)


def test_the_info_magic_makes_a_usb_device_superspeed_and_a_sweep_checks_every_byte(
        superspeed_bus):
    with open_transport(SELECTOR) as transport:
        assert transport.requests.protocol is usb3 and transport.requests.info["clock_hz"] == \
            usb3.CLOCK_HZ
        bus = transport.bus
        assert (bus.kind, bus.speed, bus.max_packet_size) == ("usb3-ss", "super", 1024)
        assert transport.directions == ("in", "out", "loopback")
        transport.min_bytes = 16 << 10
        plan = SweepPlan(("in", "out"), (1000, 4096), (2,), 3, ({},), Pattern.PRBS31)
        points = Sweep(transport, plan).run()
    assert [p.errors for p in points] == [0] * 4
    assert all(p.telemetry[-1]["magic"] == usb3.MAGIC for p in points)


def test_bot_is_refused_in_one_line_on_a_superspeed_device(superspeed_bus):
    with open_transport(SELECTOR) as transport:
        with pytest.raises(InvalidRequest, match="no BOT framing .* use in, out or loopback$"):
            transport.set_protocol("bot")


def test_a_version_1_superspeed_device_is_driven_without_loopback(fake_bus, monkeypatch):
    """Protocol version 1 (PATTERN only) still opens; loopback is refused in one line."""
    superspeed(fake_bus, monkeypatch, version=1)
    with open_transport(SELECTOR) as transport:
        assert transport.directions == ("in", "out")
        with pytest.raises(InvalidRequest, match="has no loopback .*PATTERN.*use in or out$"):
            transport.validate("loopback", 4096, 1)


def test_loopback_on_a_superspeed_device_sets_the_mode_and_checks_both_ways(superspeed_bus):
    with open_transport(SELECTOR) as transport:
        transport.min_bytes = 16 << 10
        plan = SweepPlan(("loopback",), (1025, 4096), (1, 4), 3, ({},), Pattern.PRBS31)
        points = Sweep(transport, plan).run()
    assert [p.errors for p in points] == [0] * 4
    assert usb3.DataMode.LOOPBACK in superspeed_bus.modes


def test_the_superspeed_disk_takes_bot_and_refuses_streams_and_uas_through_libusb(fake_bus,
                                                                                 monkeypatch):
    """``usb3-storage`` (GET_INFO version 3 names STORAGE): BOT on alternate 0, no data modes;
    a stream is refused naming what measures it; UAS (alternate 1, bulk streams) in one line
    naming what the libusb platform lacks (stream allocation; the simulation has it)."""
    bus = superspeed(fake_bus, monkeypatch, features=usb3.Feature.STORAGE)
    with open_transport(SELECTOR) as transport:
        assert transport.superspeed and transport.disk and transport.checks_own_data
        with pytest.raises(InvalidRequest, match=re.escape(SS_DISK_REFUSAL) + "$"):
            transport.validate("in", 4096, 1)
        with pytest.raises(InvalidRequest, match="cannot allocate bulk streams"):
            transport.set_protocol("uas")
        transport.set_protocol("bot")
        transport.validate("out", 120 << 10, 1)
    # UAS set alternate 1 before the allocation was refused; BOT set 0 again.
    assert bus.alternates == [(0, 1), (0, 0)] and bus.modes == [] and bus.submits == 0
