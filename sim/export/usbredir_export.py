"""A usbredir device server (the protocol's *usb-host* side) for a device behind a UsbPlatform.

Any usbredir guest (QEMU's ``usb-redir``, the tests' small client) sees the device the platform
drives: for ``sim:usb2`` that is the busprobe gateware in Verilator, so every descriptor, vendor
request and bulk byte the guest gets was produced by the gateware, carried by the ULPI host model.

How requests map onto the platform:

* ``control_packet`` → :meth:`UsbPlatform.control`; ``set_configuration``, ``get_configuration``,
  ``set_alt_setting``, ``get_alt_setting`` → the standard requests they stand for, the
  interfaces and endpoints in force announced again after a change (:mod:`.relay_requests`;
  the guest's SET_ADDRESS never comes: QEMU answers it itself; the platform's own host keeps
  its address);
* ``bulk_packet`` → the platform's transfer queue (:mod:`.relay_bulk`): transfers a guest
  queued on one endpoint with one length are submitted together as a queued stream, each
  answered in order;
* ``cancel_data_packet`` → a transfer still waiting is answered ``cancelled`` and never reaches
  the bus; one already on the bus cannot be pulled back (the simulator carries a stream out whole)
  and is answered ``cancelled`` when it ends; one already answered is forgotten (QEMU reuses
  packet ids: a cancel that crossed the answer must not cancel the next request with that id);
* ``alloc_bulk_streams`` / ``free_bulk_streams`` → the platform's ``alloc_streams`` /
  ``free_streams`` (the simulated xHCI's stream rings) for endpoints whose companions offer
  streams, answered ``bulk_streams_status``; a ``bulk_packet``'s ``stream_id`` goes with its
  transfer onto the stream ring it names;
* ``reset`` → :meth:`bus_reset` (a real bus reset and re-enumeration in the simulation), skipped
  while the device is as a reset leaves it (only standard reads reached it since the last one:
  a guest's enumeration resets two to three times);
* a STALL is answered ``stall``, a timeout ``timeout``; the device gone (the simulator died or
  stopped, caught by its watchdog) → ``device_disconnect`` and the connection is closed.

Nothing the guest sends is trusted (docs/DESIGN.md §7.1): a broken frame or hello order drops
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

from busprobe.transport import DeviceGone

from .announce import announcement
from .connection import HELLO_TIMEOUT_S, PacketQueue, RecentIds, configure, refusal
from .device_info import DeviceInfo, read_device_info
from .relay_bulk import BulkRelay
from .relay_requests import RequestRelay
from .usbredir_wire import (
    BULK_STREAMS_STATUS,
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
    endpoints_of,
)

__all__ = ["UsbredirExport", "CAPABILITIES", "bulk_length"]

log = logging.getLogger(__name__)

#: What this server advertises: the ones QEMU's xHCI needs (64-bit ids; max packet sizes; bulk
#: transfers over 64 KiB), bcdDevice in device_connect, and bulk streams (``max_streams`` in
#: ep_info is 0 on every endpoint of a device without them).
CAPABILITIES = frozenset({Cap.BULK_STREAMS, Cap.CONNECT_DEVICE_VERSION,
                          Cap.EP_INFO_MAX_PACKET_SIZE, Cap.IDS_64BIT, Cap.BULK_LENGTH_32BIT})
_IDLE_CHECK_S = 0.5
#: What the reader queues when the connection has ended.
_END = Packet(-1, 0)
#: Packet types that are malformed without their type-specific header.
_WITH_FIELDS = frozenset({PacketType.CONTROL_PACKET, PacketType.BULK_PACKET,
                          PacketType.SET_CONFIGURATION, PacketType.SET_ALT_SETTING,
                          PacketType.GET_ALT_SETTING, PacketType.ALLOC_BULK_STREAMS,
                          PacketType.FREE_BULK_STREAMS})
#: Requests a cancel_data_packet can name (they are answered with a data packet).
_ANSWERED = frozenset({PacketType.CONTROL_PACKET, PacketType.BULK_PACKET})


class UsbredirExport(RequestRelay, BulkRelay):
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
    as_reset : bool
        Whether the device is as a bus reset and enumeration leave it (just opened, or reset
        after the last guest): the guest's first resets are then skipped
        (:attr:`RequestRelay.as_reset`). False: every reset is carried out.
    """

    def __init__(self, platform: Any, connection: socket.socket, *, version: str,
                 speed: Speed = Speed.HIGH,
                 check_device: Callable[[], None] = lambda: None,
                 as_reset: bool = False) -> None:
        self.platform = platform
        self.as_reset = as_reset
        self.speed = speed
        self.connection = connection
        self.version = version
        self.check_device = check_device
        self.negotiated = Negotiated(CAPABILITIES)
        self.info: DeviceInfo | None = None
        self.settings: dict[int, int] = {}
        #: Why the connection was dropped (the guest broke the protocol, went silent or stopped
        #: reading), or None.
        self.dropped: str | None = None
        self._incoming = PacketQueue()
        self._relay_init()
        self._cancelled = RecentIds()
        self._streams: dict[int, int] = {}  # endpoint address -> streams allocated
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
            if self.bulk_in_flight:  # nobody is left to answer: nothing stays on the bus
                try:
                    self.platform.cancel()
                except Exception as exc:  # the device may be gone already; closing anyway
                    log.info("usbredir: cancelling at the end: %s", exc)
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
        """The guest's next packet; while bulk transfers are in flight, their completions are
        answered as they come in between."""
        checked = time.monotonic()
        while True:
            if not self.bulk_in_flight:
                try:
                    return self._incoming.get(timeout=_IDLE_CHECK_S)
                except queue.Empty:
                    self.check_device()
                    continue
            try:
                return self._incoming.get_nowait()
            except queue.Empty:
                self._pump()
            if time.monotonic() - checked > _IDLE_CHECK_S:
                self.check_device()
                checked = time.monotonic()

    def _send(self, data: bytes) -> None:
        self.connection.sendall(data)

    def _answered(self, packet_id: int) -> None:
        with self._lock:
            self._outstanding[packet_id] -= 1
            if self._outstanding[packet_id] <= 0:
                del self._outstanding[packet_id]
                self._cancelled.discard(packet_id)

    def _is_cancelled(self, packet_id: int) -> bool:
        with self._lock:
            return packet_id in self._cancelled

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
                   PacketType.ALLOC_BULK_STREAMS: self._alloc_bulk_streams,
                   PacketType.FREE_BULK_STREAMS: self._free_bulk_streams,
                   PacketType.RESET: self._reset}.get(kind)  # type: ignore[arg-type]
        if handler is None or (kind in _WITH_FIELDS and not packet.fields):
            # disconnect acks, filters, iso/interrupt requests for endpoints we do not have
            log.info("usbredir: ignored packet type %s", kind.name if kind else packet.type)
            return
        if not self._acceptable(packet):
            return
        self._note_effect(packet)
        handler(packet)

    def _after_bus_reset(self) -> None:
        """What a port reset ends (the platform dropped its transfers and freed its streams):
        every bulk packet received before it is answered (IOERROR, CANCELLED if the guest
        cancelled it) and none reaches the device after it; the streams are forgotten (the
        guest allocates them again) and every interface is at alternate 0, as the enumeration
        after the reset leaves it. Before, packets queued behind a batch went to the reset
        device on streams it had not allocated, and the guest's first command after Linux's
        ``uas`` reset its device waited behind them until it timed out."""
        self._end_bulk(Status.IOERROR)
        self._streams.clear()
        if self.settings:
            self.settings.clear()
            self._announce_interfaces()

    def _alloc_bulk_streams(self, packet: Packet) -> None:
        """Streams 1..``no_streams`` on each endpoint of the mask, if every one offers that
        many (its companion's MaxStreams); answered ``bulk_streams_status``."""
        mask, count = packet.fields
        endpoints = endpoints_of(mask)
        offered = {e.address: e.max_streams for e in self.in_force().endpoints}
        if not endpoints or count < 1 or any(offered.get(e, 0) < count for e in endpoints):
            log.info("usbredir: alloc_bulk_streams %#x x %d refused (offered %s)", mask, count,
                     offered)
            self._streams_status(mask, 0, Status.INVAL)
            return
        self.platform.alloc_streams(endpoints, count)
        self._streams.update(dict.fromkeys(endpoints, count))
        self._streams_status(mask, count, Status.SUCCESS)

    def _free_bulk_streams(self, packet: Packet) -> None:
        (mask,) = packet.fields
        allocated = [e for e in endpoints_of(mask) if self._streams.pop(e, 0)]
        if allocated:  # freeing what was never allocated is nothing to do
            self.platform.free_streams(allocated)
        self._streams_status(mask, 0, Status.SUCCESS)

    def _streams_status(self, mask: int, count: int, status: Status) -> None:
        self._send(self.negotiated.encode(PacketType.BULK_STREAMS_STATUS, 0,
                                          BULK_STREAMS_STATUS.pack(mask, count, status)))

    def _acceptable(self, packet: Packet) -> bool:
        """Whether ``packet`` may reach the platform; if not, it is answered here."""
        status = refusal(packet, self.in_force())
        if status is None and packet.kind == PacketType.BULK_PACKET:
            # A stream the guest did not allocate (or stream 0 on an endpoint with streams)
            # would wait for a device that never selects it: refused here, as an xHCI does.
            allocated, stream_id = self._streams.get(packet.fields[0], 0), packet.fields[3]
            if not (stream_id == 0 if allocated == 0 else 1 <= stream_id <= allocated):
                status = Status.INVAL
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

    # -- what the guest learns before the first descriptor ------------------------------------

    def _announce(self) -> None:
        info = self.in_force()
        assert info is not None
        for message in announcement(self.negotiated, info, self.speed):
            self._send(message)
