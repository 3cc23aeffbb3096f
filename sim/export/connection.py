"""What keeps one usbredir connection bounded, whatever the peer does (docs/DESIGN.md §7.1).

A guest that sends faster than the device answers, never reads our answers, sends nothing at
all, or cancels ids it never used, must cost the exporter a bounded amount of memory and time:

* :class:`PacketQueue` holds the decoded packets waiting to be served, at most
  :data:`QUEUE_BYTES` of them (and :data:`QUEUE_PACKETS`): the reader thread then stops reading,
  so TCP holds the guest back;
* :func:`refusal` keeps requests the device cannot serve off the bus: a bulk transfer for an
  endpoint it does not have, an IN of zero length or either above :data:`MAX_BULK_DATA`, is
  ``inval`` (a zero-length OUT is a zero-length packet, and is sent); the
  guest's SET_ADDRESS is answered without reaching the device (the platform's host keeps its
  address);
* :class:`RecentIds` remembers the cancelled ids, the newest :data:`MAX_CANCELLED` of them;
* :func:`configure` gives the socket a send timeout (a guest that stops reading for
  :data:`SEND_TIMEOUT_S` is dropped) and :data:`HELLO_TIMEOUT_S` is how long a new connection
  may stay silent before its hello.
"""

from __future__ import annotations

import collections
import queue
import socket
import struct
import threading
from typing import Any

from .device_info import DeviceInfo
from .usbredir_wire import MAX_BULK_DATA, Packet, PacketType, Status, TransferType, bulk_length

__all__ = ["PacketQueue", "RecentIds", "configure", "refusal", "QUEUE_BYTES", "QUEUE_PACKETS",
           "MAX_CANCELLED", "SEND_TIMEOUT_S", "HELLO_TIMEOUT_S"]

#: Bytes of packets waiting to be served (four of the largest bulk packets the wire allows).
QUEUE_BYTES = 64 << 20
#: Packets waiting to be served; a guest queues at most a few dozen per endpoint.
QUEUE_PACKETS = 4096
#: Cancelled ids remembered; a cancel only matters for a packet that is queued.
MAX_CANCELLED = QUEUE_PACKETS
#: A guest that reads none of our answers for this long is dropped.
SEND_TIMEOUT_S = 60.0
#: A new connection must send its hello within this many seconds (QEMU sends it at once).
HELLO_TIMEOUT_S = 10.0


def _size(packet: Any) -> int:
    """What a queued packet holds (its raw bytes, the data split off them, and some)."""
    return 64 + len(getattr(packet, "raw", b"")) + len(getattr(packet, "data", b""))


class PacketQueue:
    """``queue.Queue``'s ``put``/``get``/``get_nowait`` for packets, bounded by bytes and count.

    ``put`` waits while the queue is full (one packet always fits an empty queue); after
    :meth:`close` nothing waits any more and ``put`` drops what it is given.
    """

    def __init__(self, max_bytes: int = QUEUE_BYTES, max_packets: int = QUEUE_PACKETS) -> None:
        self.max_bytes, self.max_packets = max_bytes, max_packets
        self._items: collections.deque[Any] = collections.deque()
        self._bytes = 0
        self._closed = False
        self._changed = threading.Condition()

    def put(self, packet: Any) -> None:
        size = _size(packet)
        with self._changed:
            while not self._closed and self._items and (
                    self._bytes + size > self.max_bytes or len(self._items) >= self.max_packets):
                self._changed.wait()
            if self._closed:
                return
            self._items.append(packet)
            self._bytes += size
            self._changed.notify_all()

    def get(self, timeout: float | None = None) -> Any:
        with self._changed:
            if not self._changed.wait_for(lambda: self._items, timeout):
                raise queue.Empty
            packet = self._items.popleft()
            self._bytes -= _size(packet)
            self._changed.notify_all()
            return packet

    def get_nowait(self) -> Any:
        return self.get(timeout=0)

    def close(self) -> None:
        """Wake every waiting ``put``; from now on ``put`` drops its packet."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()


class RecentIds:
    """A set of packet ids that keeps only the newest ``limit`` (``add``, ``in``, ``discard``)."""

    def __init__(self, limit: int = MAX_CANCELLED) -> None:
        self.limit = limit
        self._ids: dict[int, None] = {}

    def add(self, packet_id: int) -> None:
        self._ids.pop(packet_id, None)
        self._ids[packet_id] = None
        while len(self._ids) > self.limit:
            del self._ids[next(iter(self._ids))]

    def discard(self, packet_id: int) -> None:
        self._ids.pop(packet_id, None)

    def __contains__(self, packet_id: object) -> bool:
        return packet_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)


def configure(connection: socket.socket) -> None:
    """A send timeout on ``connection``: ``sendall`` to a guest that stopped reading fails
    (``OSError``) after :data:`SEND_TIMEOUT_S` instead of blocking the exporter for good. The
    reader thread's ``recv`` keeps blocking: a quiet guest is allowed."""
    seconds = int(SEND_TIMEOUT_S)
    microseconds = int((SEND_TIMEOUT_S - seconds) * 1e6)
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                          struct.pack("ll", seconds, microseconds))


_SET_ADDRESS, _TO_DEVICE = 5, 0x00  # USB 2.0 Table 9-4, §9.3.1


def refusal(packet: Packet, info: DeviceInfo | None) -> Status | None:
    """The status to answer ``packet`` with instead of relaying it, or None to relay it."""
    if packet.kind == PacketType.CONTROL_PACKET:
        request, request_type = packet.fields[1], packet.fields[2]
        return Status.SUCCESS if (request, request_type) == (_SET_ADDRESS, _TO_DEVICE) else None
    if packet.kind != PacketType.BULK_PACKET:
        return None
    endpoint = packet.fields[0]
    length = bulk_length(packet.fields) if endpoint & 0x80 else len(packet.data)
    bulk = {e.address for e in info.endpoints if e.transfer_type == TransferType.BULK} \
        if info is not None else set()
    # An OUT of 0 bytes is a zero-length packet, a transfer of its own (Linux's usbtest sends
    # them); an IN asking for 0 bytes asks for nothing.
    least = 1 if endpoint & 0x80 else 0
    return None if endpoint in bulk and least <= length <= MAX_BULK_DATA else Status.INVAL
