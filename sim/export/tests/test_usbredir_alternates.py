"""The export follows the guest's alternate settings (``relay_requests``): after a successful
SET_INTERFACE it announces that setting's interface and endpoints (``interface_info``,
``ep_info``) before the status, as usbredirhost does, and lets bulk packets through to those
endpoints only; SET_CONFIGURATION returns to alternate 0. Its endpoints run side by side
(``relay_bulk``): a status IN pending on one never holds back the command IU on another that
it waits for, and one the guest cancels is cancelled on the bus. A device in this process whose
alternate 1 has the null disk's UAS pipes (command OUT 0x04, status IN 0x83), so fast."""

import socket
import struct
import threading
import time

from busprobe.backends.usb.transfers import Completion
from busprobe.protocol import uas, usb2
from busprobe.sim.export.device_info import parse_device_info
from busprobe.sim.export.tests.usbredir_peers import DescriptorDevice, Guest
from busprobe.sim.export.usbredir_export import UsbredirExport
from busprobe.sim.export.usbredir_wire import PacketType, Status, TransferType, endpoint_slot
from busprobe.transport import InvalidRequest

_ENDPOINT = "<BBBBHB"


class TwoAlternates(DescriptorDevice):
    """The probe device's descriptors with an alternate 1 of four bulk pipes (UAS's)."""

    def __init__(self) -> None:
        super().__init__()
        alternate_1 = (struct.pack("<BBBBBBBBB", 9, 4, 0, 1, 4, *uas.UAS_INTERFACE, 0)
                       + b"".join(struct.pack(_ENDPOINT, 7, 5, ep, 2, 512, 0)
                                  for ep in (uas.EP_COMMAND, uas.EP_STATUS, uas.EP_DATA_IN,
                                             uas.EP_DATA_OUT)))
        body = self.configuration[9:] + alternate_1
        self.configuration = struct.pack("<BBHBBBBB", 9, 2, 9 + len(body), 1, 1, 0, 0x80,
                                         50) + body
        self.reached: list[int] = []
        self.pending: list = []
        self.cancels = 0

    def submit(self, transfers):
        """UAS's pipes as the disk answers them: a status IN stays pending until a command IU
        has come, then completes with a SENSE IU for its tag."""
        for transfer in transfers:
            if transfer.endpoint == uas.EP_STATUS:
                self.pending.append(transfer)
            elif transfer.endpoint == uas.EP_COMMAND:
                self.reached.append(transfer.endpoint)
                self._done.append(Completion(transfer, transfer.length, b"", time=1e-3))
                if self.pending:
                    iu = uas.sense_iu(int.from_bytes(transfer.data[2:4], "big"), uas.Status.GOOD)
                    status = self.pending.pop(0)
                    self._done.append(Completion(status, len(iu), iu, time=2e-3))
            elif transfer.endpoint in (usb2.EP_IN, usb2.EP_OUT):
                super().submit([transfer])
            else:
                raise InvalidRequest("no such endpoint")
        return 0.0

    def cancel(self):
        self.cancels += 1
        self.pending = []
        super().cancel()


def _types(ep_info) -> bytes:
    return ep_info.raw[:32]


def test_the_descriptors_of_every_alternate_are_kept_and_chosen_by_the_settings():
    device = TwoAlternates()
    info = parse_device_info(device.device, device.configuration)
    assert {e.address for e in info.endpoints} == {usb2.EP_IN, usb2.EP_OUT}
    uas_info = info.in_force({0: 1})
    assert [(i.number, i.cls, i.subclass, i.protocol) for i in uas_info.interfaces] == [
        (0, *uas.UAS_INTERFACE)]
    assert {e.address for e in uas_info.endpoints} == {
        uas.EP_COMMAND, uas.EP_STATUS, uas.EP_DATA_IN, uas.EP_DATA_OUT}


def test_set_alt_setting_announces_the_new_endpoints_before_its_status_and_opens_them():
    device = TwoAlternates()
    ours, theirs = socket.socketpair()
    export = UsbredirExport(device, ours, version="busprobe test")
    thread = threading.Thread(target=export.serve, daemon=True)
    thread.start()
    try:
        guest = Guest(theirs)
        guest.until(PacketType.INTERFACE_INFO)
        assert _types(guest.receive())[endpoint_slot(uas.EP_COMMAND)] == TransferType.INVALID
        guest.until(PacketType.DEVICE_CONNECT)
        refused = guest.bulk(uas.EP_COMMAND, bytes(uas.COMMAND_SIZE))  # not in alternate 0
        answer = guest.until(PacketType.BULK_PACKET)
        assert (answer.id, answer.fields[1]) == (refused, Status.INVAL) and not device.reached

        asked = guest.send(PacketType.SET_ALT_SETTING, b"\x00\x01")
        interfaces = guest.receive()
        assert interfaces.kind == PacketType.INTERFACE_INFO
        ep_info = guest.receive()
        assert ep_info.kind == PacketType.EP_INFO
        for endpoint in (uas.EP_COMMAND, uas.EP_STATUS, uas.EP_DATA_IN, uas.EP_DATA_OUT):
            assert _types(ep_info)[endpoint_slot(endpoint)] == TransferType.BULK
        status = guest.receive()
        assert (status.kind, status.id, status.fields) == (
            PacketType.ALT_SETTING_STATUS, asked, (Status.SUCCESS, 0, 1))
        # As Linux's uas: the status IN first, then the command IU it waits for. The IN
        # pending on 0x83 must not hold the command on 0x04 back.
        status_in = guest.bulk(uas.EP_STATUS, 64)
        command = guest.bulk(uas.EP_COMMAND, uas.command_iu(7, bytes(16)))
        answers = {a.id: a for a in (guest.until(PacketType.BULK_PACKET) for _ in "ab")}
        assert answers[command].fields[1] == Status.SUCCESS
        assert answers[status_in].fields[1] == Status.SUCCESS
        assert uas.parse_iu(answers[status_in].data) == uas.Iu(uas.IuId.SENSE, 7,
                                                               uas.Status.GOOD)
        assert device.reached == [uas.EP_COMMAND]
        # A status IN the guest gives up on is cancelled on the bus and answered so; the
        # next one gets the next IU.
        abandoned = guest.bulk(uas.EP_STATUS, 64)
        for _ in range(500):  # until it is on the bus
            if device.pending:
                break
            time.sleep(0.01)
        guest.send(PacketType.CANCEL_DATA_PACKET, packet_id=abandoned)
        answer = guest.until(PacketType.BULK_PACKET)
        assert (answer.id, answer.fields[1]) == (abandoned, Status.CANCELLED)
        assert device.cancels == 1 and device.pending == []
        status_in = guest.bulk(uas.EP_STATUS, 64)
        guest.bulk(uas.EP_COMMAND, uas.command_iu(8, bytes(16)))
        answers = {a.id: a for a in (guest.until(PacketType.BULK_PACKET) for _ in "ab")}
        assert uas.parse_iu(answers[status_in].data).tag == 8

        guest.send(PacketType.SET_CONFIGURATION, b"\x01")
        guest.until(PacketType.CONFIGURATION_STATUS)
        guest.until(PacketType.INTERFACE_INFO)
        assert _types(guest.receive())[endpoint_slot(uas.EP_COMMAND)] == TransferType.INVALID
    finally:
        theirs.close()
        thread.join(10)
