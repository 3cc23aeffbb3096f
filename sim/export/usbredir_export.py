"""A usbredir device server (the protocol's *usb-host* side) for a device behind a UsbPlatform.

Any usbredir guest (QEMU's ``usb-redir``, the tests' small client) sees the device the platform
drives: for ``sim:usb2`` that is the busprobe gateware in Verilator, so every descriptor, vendor
request and bulk byte the guest gets was produced by the gateware, carried by the ULPI host model.

How requests map onto the platform:

* ``control_packet`` → :meth:`UsbPlatform.control`; ``set_configuration``, ``get_configuration``,
  ``set_alt_setting``, ``get_alt_setting`` → the standard requests they stand for (the guest's
  SET_ADDRESS never comes: QEMU answers it itself; the platform's own host keeps its address);
* ``bulk_packet`` → :meth:`UsbPlatform.bulk`. Transfers a guest queued on one endpoint with one
  length are carried out as one stream with that queue depth (up to :data:`MAX_BATCH_BYTES`), as
  a host controller keeps them queued on the bus; each gets its own answer, in order. An IN
  answer comes when the simulation has produced the data;
* ``cancel_data_packet`` → a transfer still waiting is answered ``cancelled`` and never reaches
  the bus; one already on the bus cannot be pulled back (the simulator carries a stream out whole)
  and is answered ``cancelled`` when it ends; one already answered is forgotten (QEMU reuses
  packet ids: a cancel that crossed the answer must not cancel the next request with that id);
* ``reset`` → :meth:`bus_reset` (a real bus reset and re-enumeration in the simulation);
* a STALL is answered ``stall``, a timeout ``timeout``; the device gone (the simulator died or
  stopped, caught by its watchdog) → ``device_disconnect`` and the connection is closed.
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from busprobe.transport import (
    DeviceGone,
    EndpointStalled,
    InvalidRequest,
    TransferTimeout,
    TransportError,
)
from usb_protocol.types import USBStandardRequests

from .device_info import DeviceInfo, read_device_info
from .usbredir_wire import (
    ALT_SETTING_STATUS,
    CONFIGURATION_STATUS,
    CONTROL,
    ENDPOINT_SLOTS,
    INTERFACE_INFO,
    Cap,
    Negotiated,
    Packet,
    PacketReader,
    PacketType,
    Speed,
    Status,
    TransferType,
    endpoint_slot,
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
#: Packet types that are malformed without their type-specific header.
_WITH_FIELDS = frozenset({PacketType.CONTROL_PACKET, PacketType.BULK_PACKET,
                          PacketType.SET_CONFIGURATION, PacketType.SET_ALT_SETTING,
                          PacketType.GET_ALT_SETTING})
#: Requests a cancel_data_packet can name (they are answered with a data packet).
_ANSWERED = frozenset({PacketType.CONTROL_PACKET, PacketType.BULK_PACKET})


def bulk_length(fields: tuple) -> int:
    """Length of a decoded bulk_packet header (16-bit, or 32-bit with ``length_high``)."""
    return fields[2] | (fields[4] << 16 if len(fields) > 4 else 0)


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
    check_device : callable, optional
        Called while no request is waiting; raises :class:`DeviceGone` when the device is gone
        (a dead simulator is a disconnect even when the guest is idle).
    """

    def __init__(self, platform: Any, connection: socket.socket, *, version: str,
                 check_device: Callable[[], None] = lambda: None) -> None:
        self.platform = platform
        self.connection = connection
        self.version = version
        self.check_device = check_device
        self.negotiated = Negotiated(CAPABILITIES)
        self.info: DeviceInfo | None = None
        self._incoming: queue.Queue[Packet | None] = queue.Queue()
        self._held: Packet | None = None
        self._cancelled: set[int] = set()
        # Requests received and not answered yet, by id: QEMU reuses ids (a stopped xHCI
        # endpoint's transfers come again with theirs), so one id can be waiting twice.
        self._outstanding: Counter[int] = Counter()
        self._lock = threading.Lock()

    # -- the connection -----------------------------------------------------------------------

    def serve(self) -> str:
        """Answer the guest until it closes the connection (returns ``"closed"``) or the device
        is gone (sends device_disconnect, returns the one-line reason)."""
        self.info = read_device_info(self.platform.control)
        self._send(self.negotiated.hello(self.version))
        reader = threading.Thread(target=self._read, name="usbredir-reader", daemon=True)
        reader.start()
        try:
            while True:
                try:
                    packet = self._next()
                    if packet is None:
                        return "closed"
                    self._handle(packet)
                except DeviceGone as exc:
                    self._send(self.negotiated.encode(PacketType.DEVICE_DISCONNECT, 0))
                    return str(exc)
        except (BrokenPipeError, ConnectionResetError):
            return "closed"
        finally:
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _read(self) -> None:
        reader = PacketReader(self.negotiated)
        try:
            while chunk := self.connection.recv(1 << 20):
                reader.feed(chunk)
                for packet in reader.packets():
                    with self._lock:
                        if packet.type == PacketType.CANCEL_DATA_PACKET:
                            if packet.id in self._outstanding:
                                self._cancelled.add(packet.id)
                            continue
                        if packet.type in _ANSWERED:
                            self._outstanding[packet.id] += 1
                    self._incoming.put(packet)
        except OSError:
            pass
        self._incoming.put(None)

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
        handler(packet)

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
        # Told apart by identity: two requests with one id (reused) and the same data are equal.
        live = [p for p in batch if not self._take_cancelled(p.id)]
        kept = {id(p) for p in live}
        dropped = [p for p in batch if id(p) not in kept]
        if dropped:
            log.info("usbredir: bulk %#04x %d cancelled before reaching the bus (ids %s)",
                     endpoint, len(dropped), " ".join(f"{p.id:#x}" for p in dropped))
        for packet in dropped:
            self._reply_bulk(packet, Status.CANCELLED, b"", 0)
        if not live:
            return
        received: list[bytes] = []
        log.info("usbredir: bulk %#04x %d x %d B", endpoint, len(live), length)
        try:
            result = self.platform.bulk(endpoint, length, len(live), len(live),
                                        None if incoming else [p.data for p in live],
                                        received.append if incoming else None)
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
        """interface_info and ep_info, then device_connect (the spec's order)."""
        info = self.info
        assert info is not None
        self._announce_interfaces()
        connect = self.negotiated.connect
        fields = [Speed.HIGH, info.cls, info.subclass, info.protocol, info.vendor, info.product]
        if self.negotiated.has(Cap.CONNECT_DEVICE_VERSION):
            fields.append(info.bcd_device)
        self._send(self.negotiated.encode(PacketType.DEVICE_CONNECT, 0, connect.pack(*fields)))

    def _announce_interfaces(self) -> None:
        info = self.info
        assert info is not None
        columns = [bytearray(ENDPOINT_SLOTS) for _ in range(4)]
        for slot, interface in enumerate(info.interfaces[:ENDPOINT_SLOTS]):
            for column, value in zip(columns, (interface.number, interface.cls,
                                               interface.subclass, interface.protocol),
                                     strict=True):
                column[slot] = value
        self._send(self.negotiated.encode(PacketType.INTERFACE_INFO, 0, INTERFACE_INFO.pack(
            len(info.interfaces), *map(bytes, columns))))
        types = [TransferType.INVALID] * ENDPOINT_SLOTS
        intervals, interfaces, packets = [0] * ENDPOINT_SLOTS, [0] * ENDPOINT_SLOTS, \
            [0] * ENDPOINT_SLOTS
        for address in (0x00, 0x80):
            types[endpoint_slot(address)] = TransferType.CONTROL
            packets[endpoint_slot(address)] = info.max_packet_size0
        for endpoint in info.endpoints:
            slot = endpoint_slot(endpoint.address)
            types[slot], intervals[slot] = endpoint.transfer_type, endpoint.interval
            interfaces[slot], packets[slot] = endpoint.interface, endpoint.max_packet_size
        self._send(self.negotiated.ep_info(types, intervals, interfaces, packets))
