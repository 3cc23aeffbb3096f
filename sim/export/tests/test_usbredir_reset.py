"""A guest's bus resets reach the device only when they change something: Linux resets the port
two to three times while it enumerates, and each reset of the simulated device costs seconds of
simulation (issue 47, item 3). The device here is :class:`DescriptorDevice` in this process."""

import socket
import threading

from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern
from busprobe.sim.export.tests.usbredir_peers import DescriptorDevice, Guest
from busprobe.sim.export.usbredir_export import UsbredirExport
from busprobe.sim.export.usbredir_wire import CONTROL, PacketType, Status

GET_DESCRIPTOR, GET_STATUS = 6, 0


def _serve(as_reset: bool, device: DescriptorDevice | None = None):
    device = device or DescriptorDevice()
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


class HeldDevice(DescriptorDevice):
    """A device whose bulk transfers never end by themselves (a UAS disk with commands it
    will not finish): they stay in flight until a reset drops them. ``after_reset`` lists the
    transfers that reached it after its last reset."""

    def __init__(self) -> None:
        super().__init__()
        self.after_reset: list = []

    def submit(self, transfers):
        self.after_reset += transfers
        return 0.0

    def reap(self, timeout):
        return []

    def bus_reset(self) -> bool:
        self.after_reset = []
        return super().bus_reset()


def _answers_until_the_control_answer(guest) -> dict[int, Status]:
    """The bulk answers (status by id) that come before the next control answer."""
    answers: dict[int, Status] = {}
    while (packet := guest.receive()).kind != PacketType.CONTROL_PACKET:
        if packet.kind == PacketType.BULK_PACKET:
            assert packet.id not in answers, "a packet answered twice"
            answers[packet.id] = packet.fields[1]
    return answers


def test_a_reset_answers_every_bulk_packet_before_it_and_none_reaches_the_reset_device():
    """Linux's ``uas`` resets its disk when commands time out: what the guest queued before the
    reset must end there (answered once each, CANCELLED if the guest cancelled it), not reach
    the device after it, where the first command after the reset waited behind them."""
    device = HeldDevice()
    _, export, guest, parts = _serve(as_reset=False, device=device)
    try:
        in_flight = guest.bulk(usb2.EP_IN, 4096)  # on the bus: the endpoint's batch
        waiting = [guest.bulk(usb2.EP_IN, 512) for _ in range(3)]  # behind it
        guest.send(PacketType.CANCEL_DATA_PACKET, packet_id=waiting[1])
        guest.send(PacketType.RESET)
        guest.send(PacketType.CONTROL_PACKET,
                   CONTROL.pack(0, GET_DESCRIPTOR, 0x80, 0, 0x0100, 0, 18))
        answers = _answers_until_the_control_answer(guest)
        assert answers == {in_flight: Status.IOERROR, waiting[0]: Status.IOERROR,
                           waiting[1]: Status.CANCELLED, waiting[2]: Status.IOERROR}
        assert device.resets == 1 and device.after_reset == []
        assert not export.bulk_in_flight
        # The endpoint works after the reset: a new packet reaches the device.
        guest.bulk(usb2.EP_IN, 512)
        status, _ = guest.control(0x80, GET_DESCRIPTOR, 0x0100, 0, 18)  # (taken in order)
        assert status == Status.SUCCESS
        assert [t.length for t in device.after_reset] == [512]
    finally:
        _close(parts)
