"""The peers the usbredir export's tests talk to it with.

:class:`Guest` is a well-behaved usb-guest (hello, requests with ids, answers matched by id).
:func:`hostile_session` is a seeded generator of a misbehaving one: malformed, truncated and
oversized packets (a header claiming 4 GiB), packets out of order (before the hello, a second
hello, answers a guest never sends, cancels of ids never used), requests for endpoints the device
does not have. :class:`DescriptorDevice` is a device in this process with the busprobe device's
interface and endpoints, for fuzzing the connection handling at thousands of packets a second;
the end-to-end tests use the simulated gateware instead.
"""

from __future__ import annotations

import random
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from busprobe.backends.usb.transfers import Completion
from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.export.usbredir_wire import (
    BULK_32,
    CONTROL,
    Cap,
    Negotiated,
    PacketReader,
    PacketType,
    Speed,
    Status,
    max_length,
)
from busprobe.transport import EndpointStalled, InvalidRequest

#: QEMU 7.2's usb-redir advertises these (and more we do not offer).
GUEST_CAPS = frozenset({Cap.CONNECT_DEVICE_VERSION, Cap.EP_INFO_MAX_PACKET_SIZE, Cap.IDS_64BIT,
                        Cap.BULK_LENGTH_32BIT, Cap.FILTER, Cap.DEVICE_DISCONNECT_ACK})
GET_DESCRIPTOR = 6


class Guest:
    """The usb-guest end: hello, then requests with ids, answers matched by id."""

    def __init__(self, sock: socket.socket, version: str = "test guest",
                 caps: frozenset[Cap] = GUEST_CAPS):
        self.sock = sock
        self.sock.settimeout(60)
        self.negotiated = Negotiated(caps)
        self.reader = PacketReader(self.negotiated)
        self.waiting: list = []
        self.next_id = 1
        sock.sendall(self.negotiated.hello(version))

    def receive(self):
        while not self.waiting:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError("the export closed the connection")
            self.reader.feed(chunk)
            self.waiting += self.reader.packets()
        return self.waiting.pop(0)

    def until(self, kind):
        while (packet := self.receive()).kind != kind:
            pass
        return packet

    def send(self, kind, body=b"", data=b"", packet_id=None):
        packet_id = packet_id if packet_id is not None else self.next_id
        self.next_id += 1
        self.sock.sendall(self.negotiated.encode(kind, packet_id, body, data))
        return packet_id

    def control(self, request_type, request, value, index, length_or_data):
        data = b"" if isinstance(length_or_data, int) else length_or_data
        length = length_or_data if isinstance(length_or_data, int) else len(data)
        sent = self.send(PacketType.CONTROL_PACKET,
                         CONTROL.pack(0, request, request_type, 0, value, index, length), data)
        answer = self.until(PacketType.CONTROL_PACKET)
        assert answer.id == sent
        return Status(answer.fields[3]), answer.data

    def bulk(self, endpoint, length_or_data):
        data = b"" if isinstance(length_or_data, int) else length_or_data
        length = length_or_data if isinstance(length_or_data, int) else len(data)
        return self.send(PacketType.BULK_PACKET, self.negotiated.bulk_body(endpoint, 0, length),
                         data)


@contextmanager
def exported(selector: str) -> Iterator[tuple[socket.socket, Speed]]:
    """The simulated device ``selector`` opened and served by a :class:`UsbredirExport` on one
    end of a socket pair; yields the guest's end and the speed the export announces. Closes
    both and the simulator afterwards."""
    from busprobe.sim.export.serve import EXPORTABLE, check_simulator
    from busprobe.sim.export.usbredir_export import UsbredirExport
    from busprobe.targets import describe

    target = describe(selector)
    make_platform, speed = EXPORTABLE[target.spec.kind]
    platform = make_platform(target)
    platform.open()
    ours, theirs = socket.socketpair()
    export = UsbredirExport(platform, ours, version="busprobe test", speed=speed,
                            check_device=lambda: check_simulator(platform))
    thread = threading.Thread(target=export.serve, daemon=True)
    thread.start()
    try:
        yield theirs, speed
    finally:
        theirs.close()
        thread.join(60)
        ours.close()
        platform.close()


def well_behaved_session(sock: socket.socket) -> bytes:
    """What a guest does first: announcements, descriptors, then 4 KiB IN of the pattern;
    returns the data (checked by the caller)."""
    guest = Guest(sock)
    guest.until(PacketType.DEVICE_CONNECT)
    status, device = guest.control(0x80, GET_DESCRIPTOR, 0x0100, 0, 18)
    assert status == Status.SUCCESS and len(device) == 18
    assert guest.control(0x40, usb2.Request.SET_PATTERN, Pattern.COUNTER, 0, b"")[0] == 0
    w_value, w_index = usb2.encode_in_transfer(0)
    guest.control(0x40, usb2.Request.SET_IN_TRANSFER, w_value, w_index, b"")
    asked = guest.bulk(usb2.EP_IN, 4096)
    answer = guest.until(PacketType.BULK_PACKET)
    assert answer.id == asked and answer.fields[1] == Status.SUCCESS
    return answer.data


class DescriptorDevice:
    """A UsbPlatform in this process: the busprobe device's descriptors (one vendor interface,
    bulk IN 0x81 and OUT 0x02 of 512 bytes), the counter pattern on IN, a STALL for any other
    request. ``requests`` counts what reached it; ``violations`` lists any request the export
    should never have let through."""

    name = "descriptor device"

    def __init__(self) -> None:
        self.requests = 0
        self.resets = 0
        self.violations: list[str] = []
        self._done: list[Completion] = []
        self.pattern = PatternStream(Pattern.COUNTER)
        self.device = struct.pack("<BBHBBBBHHHBBBB", 18, 1, 0x200, 0xFF, 0, 0, 64, usb2.VID,
                                  usb2.PID, 0x0100, 1, 2, 3, 1)
        self.configuration = (struct.pack("<BBHBBBBB", 9, 2, 32, 1, 1, 0, 0x80, 50)
                              + struct.pack("<BBBBBBBBB", 9, 4, 0, 0, 2, 0xFF, 0, 0, 0)
                              + struct.pack("<BBBBHB", 7, 5, usb2.EP_IN, 2, 512, 0)
                              + struct.pack("<BBBBHB", 7, 5, usb2.EP_OUT, 2, 512, 0))

    def control(self, request_type, request, value, index, length_or_data):
        self.requests += 1
        if request_type == 0x00 and request == 5:
            self.violations.append(f"SET_ADDRESS {value} reached the device")
        if request_type == 0x80 and request == GET_DESCRIPTOR:
            kind, length = value >> 8, length_or_data if isinstance(length_or_data, int) else 0
            table = {1: self.device, 2: self.configuration}
            if kind in table:
                return table[kind][:length]
        if (request_type & 0x60) == 0x40 and request == usb2.Request.SET_PATTERN:
            self.pattern.restart()
            return b""
        if request_type in (0x00, 0x01) and request in (9, 11):  # SET_CONFIGURATION/INTERFACE
            return b""
        raise EndpointStalled("not a request this device answers")

    def submit(self, transfers):
        """The transfer queue (a UsbPlatform's): each transfer completes at once."""
        for transfer in transfers:
            self.requests += 1
            endpoint, length = transfer.endpoint, transfer.length
            least = 1 if endpoint & 0x80 else 0  # a 0-byte OUT is a ZLP, a 0-byte IN nothing
            if endpoint not in (usb2.EP_IN, usb2.EP_OUT) or not least <= length <= 16 << 20:
                self.violations.append(f"bulk {endpoint:#04x} x {length} B reached the device")
                raise InvalidRequest("no such endpoint")
            data = self.pattern.take(length) if transfer.incoming else b""
            self._done.append(Completion(transfer, length, data, time=1e-3))
        return 0.0

    def reap(self, timeout):
        done, self._done = self._done, []
        return done

    def cancel(self):
        self._done = []

    def bus_reset(self) -> bool:
        self.resets += 1
        self._done = []  # a reset drops every transfer (UsbPlatform.bus_reset)
        return True


class Drain:
    """Reads and throws away what the export sends on ``sock`` (a hostile guest need not read,
    but a test's must, or both ends would wait on full socket buffers)."""

    def __init__(self, sock: socket.socket) -> None:
        self.bytes = 0
        self.thread = threading.Thread(target=self._run, args=(sock,), daemon=True)
        self.thread.start()

    def _run(self, sock: socket.socket) -> None:
        try:
            while chunk := sock.recv(1 << 16):
                self.bytes += len(chunk)
        except OSError:
            pass


# -- the hostile guest ---------------------------------------------------------------------------

_TYPES = [int(t) for t in PacketType]


def _header(rng: random.Random, ids64: bool, kind: int, length: int) -> bytes:
    packet_id = rng.getrandbits(64 if ids64 else 32)
    return struct.pack("<IIQ" if ids64 else "<III", kind, length, packet_id)


#: How often each kind of hostile message comes (the connection-ending ones rarely, so a
#: session carries a dozen messages on average).
_KINDS = {"random": 3, "short_fields": 2, "bulk": 3, "control": 3, "cancel": 1,
          "out_of_order": 2, "truncated": 0.5, "oversized": 0.5, "hello_again": 0.3}


_ENDINGS = ("truncated", "oversized", "hello_again")


def _message(rng: random.Random, ids64: bool, counts: dict[str, int],
             gentle: bool, endings: bool) -> tuple[bytes, bool]:
    """One hostile message and whether the export must drop the connection on it. ``gentle``
    (a simulated device behind the export) leaves out what costs it minutes of simulation: bus
    resets and transfers it would carry out at megabytes; ``endings`` False the messages that
    end a session."""
    kinds = {k: w for k, w in _KINDS.items() if endings or k not in _ENDINGS}
    kind = rng.choices(list(kinds), weights=list(kinds.values()))[0]
    counts[kind] = counts.get(kind, 0) + 1
    negotiated = Negotiated(GUEST_CAPS, peer=GUEST_CAPS if ids64 else frozenset())
    if kind == "random":  # any type, a body of random bytes of a length the type may carry
        ptype = rng.choice(_TYPES + [rng.randrange(28, 100), rng.randrange(105, 1 << 32)])
        if ptype == PacketType.HELLO or (gentle and ptype in (PacketType.RESET,
                                                              PacketType.BULK_PACKET)):
            ptype = PacketType.GET_CONFIGURATION
        body = rng.randbytes(rng.randrange(0, 64))
        return _header(rng, ids64, ptype, len(body)) + body, False
    if kind == "truncated":  # a header that promises more than follows (the session ends)
        ptype = rng.choice((PacketType.CONTROL_PACKET, PacketType.BULK_PACKET,
                            PacketType.INTERFACE_INFO))
        promised = rng.randrange(16, 4096)
        return _header(rng, ids64, ptype, promised) + rng.randbytes(rng.randrange(promised)), \
            True
    if kind == "oversized":  # 4 GiB, or one byte above what the type may carry
        ptype = rng.choice(_TYPES[1:])
        length = rng.choice((0xFFFF_FFFF, max_length(ptype, negotiated) + 1))
        return _header(rng, ids64, ptype, length) + rng.randbytes(rng.randrange(32)), True
    if kind == "short_fields":  # a type-specific header cut short
        ptype = rng.choice((PacketType.CONTROL_PACKET, PacketType.BULK_PACKET,
                            PacketType.SET_CONFIGURATION, PacketType.SET_ALT_SETTING))
        body = rng.randbytes(rng.randrange(0, 4))
        return _header(rng, ids64, ptype, len(body)) + body, False
    if kind == "bulk":  # endpoints the device lacks, zero, huge and 4 GiB lengths
        endpoint = rng.choice((0x81, 0x02, 0x83, 0x00, 0x80, 0x8F, 0x7F, rng.randrange(256)))
        length = rng.choice((0, 1, 512, 0xFFFF_FFFF, (16 << 20) + 1,
                             rng.randrange((16 << 20) + 1, 1 << 32)))
        data = b"" if endpoint & 0x80 else rng.randbytes(rng.choice((0, 1, 511, 512)))
        body = BULK_32.pack(endpoint, 0, length & 0xFFFF, 0, length >> 16) + data
        return _header(rng, ids64, PacketType.BULK_PACKET, len(body)) + body, False
    if kind == "control":  # standard, class and vendor requests with random fields
        setup = CONTROL.pack(rng.randrange(256), rng.randrange(256), rng.choice(
            (0x00, 0x80, 0x01, 0x81, 0x02, 0x21, 0xA1, 0xC0, 0x40, rng.randrange(256))), 0,
            rng.randrange(1 << 16), rng.randrange(1 << 16), rng.randrange(1 << 16))
        body = setup + rng.randbytes(rng.randrange(0, 64))
        return _header(rng, ids64, PacketType.CONTROL_PACKET, len(body)) + body, False
    if kind == "cancel":  # ids never used
        return _header(rng, ids64, PacketType.CANCEL_DATA_PACKET, 0), False
    if kind == "out_of_order":  # what only the usb-host sends, or a reset mid-stream
        ptype = rng.choice((PacketType.DEVICE_CONNECT, PacketType.INTERFACE_INFO,
                            PacketType.EP_INFO, PacketType.CONFIGURATION_STATUS,
                            PacketType.DEVICE_DISCONNECT, PacketType.DEVICE_DISCONNECT_ACK,
                            PacketType.ALT_SETTING_STATUS, PacketType.FILTER_REJECT,
                            PacketType.GET_CONFIGURATION,
                            PacketType.GET_CONFIGURATION if gentle else PacketType.RESET))
        body = rng.randbytes(rng.randrange(0, 160))
        return _header(rng, ids64, ptype, len(body)) + body, False
    # hello_again: a second hello would change the header size under the reader
    return Negotiated(GUEST_CAPS).hello("again"), True


def hostile_session(sock: socket.socket, rng: random.Random, messages: int,
                    counts: dict[str, int], *, gentle: bool = False,
                    endings: bool = True) -> int:
    """Send up to ``messages`` hostile messages on a fresh connection (first a hello, or not:
    a packet before the hello is one of them); returns how many were sent. The session ends at
    a message after which the export must drop it (or can only wait for bytes that never
    come), or when the budget is spent. ``gentle``, ``endings``: see :func:`_message`."""
    ids64 = rng.random() < 0.8
    if endings and rng.random() < 0.05:  # no hello at all: the first packet breaks the order
        counts["no_hello"] = counts.get("no_hello", 0) + 1
        sock.sendall(_header(rng, False, PacketType.GET_CONFIGURATION, 0))
        return 1
    caps = GUEST_CAPS if ids64 else GUEST_CAPS - {Cap.IDS_64BIT}
    sock.sendall(Negotiated(caps).hello(rng.choice(("fuzz", "x" * 80, "\xff bad utf-8"))))
    sent = 1
    while sent < messages:
        data, ends = _message(rng, ids64, counts, gentle, endings)
        # Split at a random point: the export must reassemble whatever the segments.
        cut = rng.randrange(len(data) + 1)
        try:
            sock.sendall(data[:cut])
            sock.sendall(data[cut:])
        except OSError:
            return sent  # dropped by the export already
        sent += 1
        if ends:
            return sent
    return sent
