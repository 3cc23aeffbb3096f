"""A usbredir device server (the protocol's *usb-host* side) for a device behind a UsbPlatform.

Any usbredir guest (QEMU's ``usb-redir``, the tests' small client) sees the device the platform
drives: for ``sim:usb2`` that is the busprobe gateware in Verilator, so every descriptor, vendor
request and bulk byte the guest gets was produced by the gateware, carried by the ULPI host model.

How requests map onto the platform:

* ``control_packet`` → :meth:`UsbPlatform.control`; ``set_configuration``, ``get_configuration``,
  ``set_alt_setting``, ``get_alt_setting`` → the standard requests they stand for (the guest's
  SET_ADDRESS never comes: QEMU answers it itself; the platform's own host keeps its address);
* ``bulk_packet`` → the platform's transfer queue. Transfers a guest queued on one endpoint with
  one length are submitted together as a queued stream with that queue depth (up to
  :data:`MAX_BATCH_BYTES`, :class:`~busprobe.backends.usb.plans.QueuedStream`), as a host
  controller keeps them queued on the bus; each gets its own answer, in order. An IN answer comes
  when the simulation has produced the data;
* ``cancel_data_packet`` → a transfer still waiting is answered ``cancelled`` and never reaches
  the bus; one already on the bus cannot be pulled back (the simulator carries a stream out whole)
  and is answered ``cancelled`` when it ends; one already answered is forgotten (QEMU reuses
  packet ids: a cancel that crossed the answer must not cancel the next request with that id);
* ``reset`` → :meth:`bus_reset` (a real bus reset and re-enumeration in the simulation);
* a STALL is answered ``stall``, a timeout ``timeout``; the device gone (the simulator died or
  stopped, caught by its watchdog) → ``device_disconnect`` and the connection is closed.

Nothing the guest sends is trusted (docs/DESIGN.md §2.5): a broken frame or hello order drops
the connection (:attr:`UsbredirExport.dropped` says why), and :mod:`.connection` bounds the rest.
"""

from __future__ import annotations

import logging
import queue
import select
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from busprobe.backends.usb.plans import QueuedStream
from busprobe.backends.usb.transfers import run_plan, silence_for
from busprobe.transport import (
    DeviceGone,
    EndpointStalled,
    InvalidRequest,
    TransferTimeout,
    TransportError,
)
from usb_protocol.types import USBStandardRequests

from .announce import announcement, interfaces_announcement
from .connection import HELLO_TIMEOUT_S, PacketQueue, RecentIds, configure, refusal
from .device_info import DeviceInfo, read_device_info
from .usbredir_wire import (
    ALT_SETTING_STATUS,
    CONFIGURATION_STATUS,
    CONTROL,
    Cap,
    Negotiated,
    Packet,
    PacketReader,
    PacketType,
    ProtocolError,
    Speed,
    Status,
    bulk_length,
)

__all__ = ["UsbredirExport", "CAPABILITIES", "bulk_length"]

log = logging.getLogger(__name__)

#: What this server advertises: the ones QEMU's xHCI needs (64-bit ids; max packet sizes; bulk
#: transfers over 64 KiB), and bcdDevice in device_connect.
CAPABILITIES = frozenset({Cap.CONNECT_DEVICE_VERSION, Cap.EP_INFO_MAX_PACKET_SIZE,
                          Cap.IDS_64BIT, Cap.BULK_LENGTH_32BIT})
#: Most guest transfers, and bytes, carried out as one stream: every answer of a stream comes
#: when it ends, so the bound keeps answers flowing (the simulation moves ~0.2 MB/s of bus
#: data per wall second) while small transfers still share one request to the simulator.
MAX_BATCH = 32
MAX_BATCH_BYTES = 64 << 10
_IDLE_CHECK_S = 0.5
#: bmRequestType of standard requests (USB 2.0 §9.3.1): to/from the device, to/from an interface.
_TO_DEVICE, _FROM_DEVICE, _TO_INTERFACE, _FROM_INTERFACE = 0x00, 0x80, 0x01, 0x81
#: What the reader queues when the connection has ended.
_END = Packet(-1, 0)
#: Packet types that are malformed without their type-specific header.
_WITH_FIELDS = frozenset({PacketType.CONTROL_PACKET, PacketType.BULK_PACKET,
                          PacketType.SET_CONFIGURATION, PacketType.SET_ALT_SETTING,
                          PacketType.GET_ALT_SETTING})
#: Requests a cancel_data_packet can name (they are answered with a data packet).
_ANSWERED = frozenset({PacketType.CONTROL_PACKET, PacketType.BULK_PACKET})


def _status_of(exc: TransportError) -> Status:
    if isinstance(exc, EndpointStalled):
        return Status.STALL
    if isinstance(exc, TransferTimeout):
        return Status.TIMEOUT
    if isinstance(exc, InvalidRequest):
        return Status.INVAL
    return Status.IOERROR


class UsbredirExport:
    """Serve one usbredir connection for the device behind ``platform`` (already open).

    Parameters
    ----------
    platform : UsbPlatform
        Carries out control transfers and bulk streams; ``bus_reset()`` if it can reset the bus.
    connection : socket.socket
        Connected to the guest.
    version : str
        Sent in our hello.
    speed : Speed
        What ``device_connect`` says the device runs at (``SUPER`` for the SuperSpeed device).
    check_device : callable, optional
        Called while no request is waiting; raises :class:`DeviceGone` when the device is gone
        (a dead simulator is a disconnect even when the guest is idle).
    """

    def __init__(self, platform: Any, connection: socket.socket, *, version: str,
                 speed: Speed = Speed.HIGH,
                 check_device: Callable[[], None] = lambda: None) -> None:
        self.platform = platform
        self.speed = speed
        self.connection = connection
        self.version = version
        self.check_device = check_device
        self.negotiated = Negotiated(CAPABILITIES)
        self.info: DeviceInfo | None = None
        #: Why the connection was dropped (the guest broke the protocol, went silent or stopped
        #: reading), or None.
        self.dropped: str | None = None
        self._incoming = PacketQueue()
        self._held: Packet | None = None
        self._cancelled = RecentIds()
        # Requests received and not answered, by id: QEMU reuses ids (a stopped xHCI endpoint's
        # transfers come again with theirs); bounded as the queue is (each is answered once).
        self._outstanding: Counter[int] = Counter()
        self._lock = threading.Lock()

    # -- the connection -----------------------------------------------------------------------

    def serve(self) -> str:
        """Answer the guest until it closes the connection (returns ``"closed"``) or the device
        is gone (sends device_disconnect, returns the one-line reason)."""
        configure(self.connection)
        self.info = read_device_info(self.platform.control)
        self._send(self.negotiated.hello(self.version))
        reader = threading.Thread(target=self._read, name="usbredir-reader", daemon=True)
        reader.start()
        try:
            while True:
                try:
                    packet = self._next()
                    if packet is None or packet is _END:
                        return "closed"
                    self._handle(packet)
                except DeviceGone as exc:
                    self._send(self.negotiated.encode(PacketType.DEVICE_DISCONNECT, 0))
                    return str(exc)
        except OSError as exc:  # reset, broken pipe, or the send timeout: the guest is gone
            if not isinstance(exc, (BrokenPipeError, ConnectionResetError)):
                self.dropped = self.dropped or f"sending failed: {exc.strerror or exc}"
            return "closed"
        finally:
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._incoming.close()  # a reader waiting for room wakes up and ends
            reader.join(10)

    def _read(self) -> None:
        reader = PacketReader(self.negotiated)
        deadline = time.monotonic() + HELLO_TIMEOUT_S
        try:
            while True:
                if not reader.hello_seen:  # a silent connection does not hold the device
                    ready, _, _ = select.select([self.connection], [], [],
                                                max(0.0, deadline - time.monotonic()))
                    if not ready:
                        self.dropped = f"no hello within {HELLO_TIMEOUT_S:g} s"
                        break
                chunk = self.connection.recv(1 << 20)
                if not chunk:
                    break
                reader.feed(chunk)
                for packet in reader.packets():
                    with self._lock:
                        if packet.type == PacketType.CANCEL_DATA_PACKET:
                            if packet.id in self._outstanding:
                                self._cancelled.add(packet.id)
                            continue
                        if packet.kind in _ANSWERED and packet.fields:
                            self._outstanding[packet.id] += 1
                    self._incoming.put(packet)
        except ProtocolError as exc:
            self.dropped = f"protocol error: {exc}"
            log.warning("usbredir: dropping the guest: %s", exc)
        except (OSError, ValueError):  # closed under us (ValueError: select on a closed fd)
            pass
        # A packet, not None: the bulk batching may hold it back like any other, and a None
        # held back would read as "nothing held" and lose the end of the connection.
        self._incoming.put(_END)

    def _next(self) -> Packet | None:
        if self._held is not None:
            packet, self._held = self._held, None
            return packet
        while True:
            try:
                return self._incoming.get(timeout=_IDLE_CHECK_S)
            except queue.Empty:
                self.check_device()

    def _send(self, data: bytes) -> None:
        self.connection.sendall(data)

    def _answered(self, packet_id: int) -> None:
        with self._lock:
            self._outstanding[packet_id] -= 1
            if self._outstanding[packet_id] <= 0:
                del self._outstanding[packet_id]
                self._cancelled.discard(packet_id)

    def _take_cancelled(self, packet_id: int) -> bool:
        with self._lock:
            if packet_id in self._cancelled:
                self._cancelled.discard(packet_id)
                return True
            return False

    # -- requests -----------------------------------------------------------------------------

    def _handle(self, packet: Packet) -> None:
        kind = packet.kind
        if kind == PacketType.HELLO:
            log.info("usbredir guest %r", self.negotiated.peer_version)
            self._announce()
            return
        handler = {PacketType.CONTROL_PACKET: self._control, PacketType.BULK_PACKET: self._bulk,
                   PacketType.SET_CONFIGURATION: self._set_configuration,
                   PacketType.GET_CONFIGURATION: self._get_configuration,
                   PacketType.SET_ALT_SETTING: self._set_alt_setting,
                   PacketType.GET_ALT_SETTING: self._get_alt_setting,
                   PacketType.RESET: self._reset}.get(kind)  # type: ignore[arg-type]
        if handler is None or (kind in _WITH_FIELDS and not packet.fields):
            # disconnect acks, filters, iso/interrupt requests for endpoints we do not have
            log.info("usbredir: ignored packet type %s", kind.name if kind else packet.type)
            return
        if not self._acceptable(packet):
            return
        handler(packet)

    def _acceptable(self, packet: Packet) -> bool:
        """Whether ``packet`` may reach the platform; if not, it is answered here."""
        status = refusal(packet, self.info)
        if status is None:
            return True
        log.info("usbredir: %s %d refused (%s)", packet.kind.name if packet.kind else "?",
                 packet.id, status.name)
        if packet.kind == PacketType.BULK_PACKET:
            self._reply_bulk(packet, status, b"", 0)
        else:
            endpoint, request, request_type, _, value, index, _ = packet.fields
            self._answered(packet.id)
            self._send(self.negotiated.encode(PacketType.CONTROL_PACKET, packet.id, CONTROL.pack(
                endpoint, request, request_type, status, value, index, 0)))
        return False

    def _set_configuration(self, packet: Packet) -> None:
        (value,) = packet.fields
        status, _ = self._standard(_TO_DEVICE, USBStandardRequests.SET_CONFIGURATION, value, 0)
        self._send(self.negotiated.encode(PacketType.CONFIGURATION_STATUS, packet.id,
                                          CONFIGURATION_STATUS.pack(status, value)))
        self._announce_interfaces()  # the spec has the usb-host announce them again

    def _get_configuration(self, packet: Packet) -> None:
        status, data = self._standard(_FROM_DEVICE, USBStandardRequests.GET_CONFIGURATION, 0, 0,
                                      1)
        self._send(self.negotiated.encode(PacketType.CONFIGURATION_STATUS, packet.id,
                                          CONFIGURATION_STATUS.pack(status, data[0] if data
                                                                    else 0)))

    def _set_alt_setting(self, packet: Packet) -> None:
        interface, alt = packet.fields
        status, _ = self._standard(_TO_INTERFACE, USBStandardRequests.SET_INTERFACE, alt,
                                   interface)
        self._send(self.negotiated.encode(PacketType.ALT_SETTING_STATUS, packet.id,
                                          ALT_SETTING_STATUS.pack(status, interface, alt)))

    def _get_alt_setting(self, packet: Packet) -> None:
        (interface,) = packet.fields
        status, data = self._standard(_FROM_INTERFACE, USBStandardRequests.GET_INTERFACE, 0,
                                      interface, 1)
        self._send(self.negotiated.encode(PacketType.ALT_SETTING_STATUS, packet.id,
                                          ALT_SETTING_STATUS.pack(status, interface,
                                                                  data[0] if data else 0)))

    def _reset(self, packet: Packet) -> None:
        reset = getattr(self.platform, "bus_reset", None)
        if reset is not None:  # no answer: the spec has none for a reset
            reset()

    def _standard(self, request_type: int, request: int, value: int, index: int,
                  length_or_data: int | bytes = b"") -> tuple[Status, bytes]:
        try:
            return Status.SUCCESS, self.platform.control(request_type, request, value, index,
                                                         length_or_data)
        except DeviceGone:
            raise
        except TransportError as exc:
            log.info("usbredir: request %#04x: %s", request, exc)
            return _status_of(exc), b""

    def _control(self, packet: Packet) -> None:
        endpoint, request, request_type, _, value, index, length = packet.fields
        incoming = bool(request_type & 0x80)
        status, data = self._standard(request_type, request, value, index,
                                      length if incoming else packet.data)
        moved = len(data) if incoming else (len(packet.data) if status == Status.SUCCESS else 0)
        if self._take_cancelled(packet.id):
            status = Status.CANCELLED
        self._answered(packet.id)
        self._send(self.negotiated.encode(
            PacketType.CONTROL_PACKET, packet.id,
            CONTROL.pack(endpoint, request, request_type, status, value, index, moved), data))

    def _bulk(self, first: Packet) -> None:
        endpoint = first.fields[0]
        incoming = bool(endpoint & 0x80)
        length = bulk_length(first.fields) if incoming else len(first.data)
        batch = [first]
        while (len(batch) < MAX_BATCH and (len(batch) + 1) * max(length, 1) <= MAX_BATCH_BYTES
               and self._held is None):
            try:
                more = self._incoming.get_nowait()
            except queue.Empty:
                break
            same = (more is not None and more.type == PacketType.BULK_PACKET and more.fields
                    and more.fields[0] == endpoint
                    and (bulk_length(more.fields) if incoming else len(more.data)) == length)
            if same:
                batch.append(more)  # type: ignore[arg-type]
            else:
                self._held = more
        # By identity: two requests with one (reused) id and the same data are equal.
        kept = {id(p) for p in batch if not self._take_cancelled(p.id)}
        live, dropped = ([p for p in batch if (id(p) in kept) == k] for k in (True, False))
        for packet in dropped:
            log.info("usbredir: bulk %#04x id %#x cancelled before reaching the bus", endpoint,
                     packet.id)
            self._reply_bulk(packet, Status.CANCELLED, b"", 0)
        if not live:
            return
        received: list[bytes] = []
        log.info("usbredir: bulk %#04x %d x %d B", endpoint, len(live), length)
        what = f"bulk {endpoint:#04x}"
        plan = QueuedStream(endpoint, length, len(live), len(live),
                            outgoing=None if incoming else [p.data for p in live], what=what)
        try:
            start, end = run_plan(self.platform, plan, what=what, silence=silence_for(length))
            plan.deliver(received.append)
            result = plan.result(start, end)
        except DeviceGone:
            raise
        except TransportError as exc:
            log.info("usbredir: bulk %#04x x%d: %s", endpoint, len(live), exc)
            for packet in live:
                self._reply_bulk(packet, _status_of(exc), b"", 0)
            return
        for index, packet in enumerate(live):
            data = received[index] if incoming and index < len(received) else b""
            moved = len(data) if incoming else (length if index < result.transfers else 0)
            status = Status.CANCELLED if self._take_cancelled(packet.id) else Status.SUCCESS
            if status == Status.CANCELLED:
                log.info("usbredir: bulk %#04x cancelled on the bus (answered cancelled)",
                         endpoint)
            self._reply_bulk(packet, status, data, moved)

    def _reply_bulk(self, packet: Packet, status: Status, data: bytes, moved: int) -> None:
        self._answered(packet.id)
        body = self.negotiated.bulk_body(packet.fields[0], status, moved)
        self._send(self.negotiated.encode(PacketType.BULK_PACKET, packet.id, body, data))

    # -- what the guest learns before the first descriptor ------------------------------------

    def _announce(self) -> None:
        assert self.info is not None
        for message in announcement(self.negotiated, self.info, self.speed):
            self._send(message)

    def _announce_interfaces(self) -> None:
        assert self.info is not None
        for message in interfaces_announcement(self.negotiated, self.info, self.speed):
            self._send(message)
