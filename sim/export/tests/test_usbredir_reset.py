"""A guest's bus resets reach the device only when they change something: Linux resets the port
two to three times while it enumerates, and each reset of the simulated device costs seconds of
simulation (issue 47, item 3). The device here is :class:`DescriptorDevice` in this process."""

import socket
import threading

from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern
from busprobe.sim.export.tests.usbredir_peers import DescriptorDevice, Guest
from busprobe.sim.export.usbredir_export import UsbredirExport
from busprobe.sim.export.usbredir_wire import PacketType, Status

GET_DESCRIPTOR, GET_STATUS = 6, 0


def _serve(as_reset: bool):
    device = DescriptorDevice()
    ours, theirs = socket.socketpair()
    export = UsbredirExport(device, ours, version="busprobe test", as_reset=as_reset)
    thread = threading.Thread(target=export.serve, daemon=True)
    thread.start()
    guest = Guest(theirs)
    guest.until(PacketType.DEVICE_CONNECT)
    return device, export, guest, (thread, ours, theirs)


def _close(parts) -> None:
    thread, ours, theirs = parts
    theirs.close()
    thread.join(10)
    ours.close()


def _reset_then_read(guest) -> None:
    """A reset, then a request after it (answered only once the reset is done)."""
    guest.send(PacketType.RESET)
    status, device = guest.control(0x80, GET_DESCRIPTOR, 0x0100, 0, 64)
    assert status == Status.SUCCESS and len(device) == 18


def test_resets_of_a_device_that_only_answered_reads_are_skipped_and_others_carried_out():
    device, export, guest, parts = _serve(as_reset=True)
    try:
        # Linux's enumeration: reset, GET_DESCRIPTOR(64), reset, then reads: nothing changed.
        _reset_then_read(guest)
        _reset_then_read(guest)
        assert guest.control(0x80, GET_STATUS, 0, 0, 2)[0] == Status.STALL  # a read, stalled
        assert device.resets == 0 and export.as_reset
        # A request that changes the device: the next reset is real, the one after it is not.
        assert guest.control(0x40, usb2.Request.SET_PATTERN, Pattern.COUNTER, 0, b"")[0] == 0
        assert not export.as_reset
        _reset_then_read(guest)
        _reset_then_read(guest)
        assert device.resets == 1 and export.as_reset
        # SET_CONFIGURATION changes the device too (its toggles, its alternates).
        guest.send(PacketType.SET_CONFIGURATION, b"\x01")
        guest.until(PacketType.CONFIGURATION_STATUS)
        _reset_then_read(guest)
        assert device.resets == 2
    finally:
        _close(parts)


def test_an_export_not_told_the_device_is_fresh_carries_out_the_first_reset():
    device, export, guest, parts = _serve(as_reset=False)
    try:
        _reset_then_read(guest)
        _reset_then_read(guest)
        assert device.resets == 1
    finally:
        _close(parts)


def test_a_reset_the_platform_cannot_carry_out_is_logged_not_silently_dropped(caplog,
                                                                               monkeypatch):
    """The SuperSpeed simulation has no port reset: the guest must not be the only one who
    thinks the device was reset."""
    monkeypatch.setattr(DescriptorDevice, "bus_reset", lambda self: False)
    device, export, guest, parts = _serve(as_reset=False)
    try:
        with caplog.at_level("WARNING"):
            _reset_then_read(guest)
        assert "cannot reset its bus: the device keeps its state" in caplog.text
        assert not export.as_reset
    finally:
        _close(parts)
