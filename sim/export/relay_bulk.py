"""How a usbredir export carries the guest's bulk packets to the device (one job: the data).

Each endpoint's packets go to the platform's transfer queue in the guest's order, and the
endpoints run side by side, as a host controller's schedule runs them: a transfer pending on one
endpoint (UAS's status pipe, whose IN waits for the device's next IU) never holds back another
endpoint's (the command IU that the IU answers). Per endpoint, the packets a guest queued with
one length are submitted together (up to :data:`MAX_BATCH` and :data:`MAX_BATCH_BYTES`: so many
share one request to the simulator), each answered as its transfer completes; the endpoint's
next packets wait until the batch has ended, so a packet cancelled while it waits never reaches
the bus. One already on the bus cannot be pulled back and is answered ``cancelled`` when it ends
— unless every packet of the batch was cancelled: then everything in flight is cancelled on the
platform (a transfer the device will never end, such as an IN nobody answers, must not hold its
endpoint for good) and the other endpoints' transfers are submitted again. Nothing in flight
times out: a host controller does not time a transfer either, the guest's driver does and
cancels it. A bus reset ends every packet in flight or waiting (:meth:`BulkRelay._end_bulk`).
:class:`BulkRelay` is a part of :class:`~.usbredir_export.UsbredirExport`, which
provides the connection.
"""

from __future__ import annotations

import collections
import itertools
import logging
from dataclasses import dataclass, field
from typing import Any

from busprobe.backends.usb.transfers import Completion, Transfer
from busprobe.transport import DeviceGone, TransportError

from .relay_requests import status_of
from .usbredir_wire import Negotiated, Packet, PacketType, Status, bulk_length

__all__ = ["BulkRelay", "MAX_BATCH", "MAX_BATCH_BYTES", "REAP_S"]

log = logging.getLogger(__name__)

#: Most guest transfers, and bytes, of one endpoint submitted together: every answer of a batch
#: comes as its transfer ends, and the endpoint's next batch when all have, so the bound keeps
#: answers flowing (the simulation moves ~0.2 MB/s of bus data per wall second) while small
#: transfers still share one request to the simulator.
MAX_BATCH = 32
MAX_BATCH_BYTES = 64 << 10
#: Seconds of the platform's clock one reap waits while transfers are in flight and the guest
#: has sent nothing new: one microframe (~25 ms of wall time in the simulation).
REAP_S = 125e-6


@dataclass
class _Batch:
    """An endpoint's transfers on the bus: packet by transfer tag, and those still flying."""

    packets: dict[int, Packet] = field(default_factory=dict)
    transfers: dict[int, Transfer] = field(default_factory=dict)


def _length(packet: Packet) -> int:
    return bulk_length(packet.fields) if packet.fields[0] & 0x80 else len(packet.data)


class BulkRelay:
    """The bulk side of an export (:meth:`_bulk` takes a packet, :meth:`_pump` answers what
    completed)."""

    platform: Any
    negotiated: Negotiated

    def _send(self, data: bytes) -> None: ...
    def _answered(self, packet_id: int) -> None: ...
    def _take_cancelled(self, packet_id: int) -> bool: ...
    def _is_cancelled(self, packet_id: int) -> bool: ...

    def _relay_init(self) -> None:
        self._waiting: dict[int, collections.deque[Packet]] = collections.defaultdict(
            collections.deque)
        self._flying: dict[int, _Batch] = {}
        self._tags = itertools.count()

    @property
    def bulk_in_flight(self) -> bool:
        return bool(self._flying)

    def _bulk(self, packet: Packet) -> None:
        endpoint = packet.fields[0]
        self._waiting[endpoint].append(packet)
        if endpoint not in self._flying:
            self._launch(endpoint)

    def _launch(self, endpoint: int) -> None:
        """Submit the endpoint's next batch (its waiting packets of one length)."""
        waiting = self._waiting[endpoint]
        batch = _Batch()
        length = None
        while waiting and len(batch.packets) < MAX_BATCH:
            packet = waiting[0]
            if self._take_cancelled(packet.id):
                waiting.popleft()
                log.info("usbredir: bulk %#04x id %#x cancelled before reaching the bus",
                         endpoint, packet.id)
                self._reply_bulk(packet, Status.CANCELLED, b"", 0)
                continue
            size = _length(packet)
            if batch.packets and (size != length or
                                  (len(batch.packets) + 1) * max(size, 1) > MAX_BATCH_BYTES):
                break
            waiting.popleft()
            length = size
            tag = next(self._tags)
            batch.packets[tag] = packet
            batch.transfers[tag] = Transfer(endpoint, size, None if endpoint & 0x80
                                            else bytes(packet.data), tag=tag,
                                            stream_id=packet.fields[3])
        if not batch.packets:
            return
        log.info("usbredir: bulk %#04x %d x %d B", endpoint, len(batch.packets), length)
        self._flying[endpoint] = batch
        try:
            self.platform.submit(list(batch.transfers.values()))
        except DeviceGone:
            raise
        except TransportError as exc:
            self._fail(exc)

    def _pump(self) -> None:
        """Answer the transfers that completed within :data:`REAP_S`; launch what waits behind
        a batch that has ended."""
        if self._cancel_abandoned():
            return
        try:
            done = self.platform.reap(REAP_S)
        except DeviceGone:
            raise
        except TransportError as exc:
            self._fail(exc)
            return
        for completion in done:
            self._complete(completion)

    def _complete(self, completion: Completion) -> None:
        endpoint, tag = completion.transfer.endpoint, completion.transfer.tag
        batch = self._flying.get(endpoint)
        if batch is None or tag not in batch.transfers:
            return  # cancelled on the platform and already answered
        del batch.transfers[tag]
        packet = batch.packets.pop(tag)
        if completion.stalled:
            self._reply_bulk(packet, Status.STALL, b"", completion.actual)
            self._stalled(endpoint)
            return
        if self._take_cancelled(packet.id):
            log.info("usbredir: bulk %#04x cancelled on the bus (answered cancelled)", endpoint)
            status = Status.CANCELLED
        else:
            status = Status.SUCCESS
        self._reply_bulk(packet, status, completion.data if endpoint & 0x80 else b"",
                         completion.actual)
        if not batch.transfers:
            del self._flying[endpoint]
            self._launch(endpoint)

    def _stalled(self, endpoint: int) -> None:
        """The endpoint STALLed: the rest of its batch is answered STALL too (the host's queue
        for it halts), and the platform's queue is restarted, as a stream that stalls is
        cancelled (:func:`~busprobe.backends.usb.transfers.run_plan`); the other endpoints'
        transfers are submitted again. The guest clears the halt with CLEAR_FEATURE."""
        self._restart_platform(lambda: [endpoint])

    def _restart_platform(self, ended) -> None:
        """Reap what already completed (answered, not dropped), cancel everything on the
        platform, answer every packet of the batches ``ended()`` names (STALL for a stalled
        endpoint, CANCELLED for an abandoned one), submit the other batches' transfers again
        and launch what waits behind the ended ones."""
        try:
            for completion in self.platform.reap(0.0):
                self._complete(completion)
            self.platform.cancel()
        except DeviceGone:
            raise
        except TransportError as exc:
            self._fail(exc)
            return
        names = ended()
        for endpoint in names:
            batch = self._flying.pop(endpoint, None)
            if batch is None:  # it ended in the reap above
                continue
            for packet in batch.packets.values():
                self._end_packet(packet, Status.STALL)
        again = [t for batch in self._flying.values() for t in batch.transfers.values()]
        if again:
            try:
                self.platform.submit(again)
            except DeviceGone:
                raise
            except TransportError as exc:
                self._fail(exc)
                return
        for endpoint in names:
            if endpoint not in self._flying:
                self._launch(endpoint)

    def _cancel_abandoned(self) -> bool:
        """Cancel everything on the platform when a batch's every packet was cancelled by the
        guest (those answered CANCELLED, the others submitted again); whether it did."""
        abandoned = [endpoint for endpoint, batch in self._flying.items()
                     if all(self._is_cancelled(p.id) for p in batch.packets.values())]
        if not abandoned:
            return False
        self._restart_platform(lambda: [e for e in abandoned if e in self._flying])
        return True

    def _fail(self, exc: TransportError) -> None:
        """The platform failed a transfer (which one it does not say): answer every packet in
        flight with the error, and leave nothing on the bus."""
        log.info("usbredir: bulk: %s", exc)
        try:
            self.platform.cancel()
        except TransportError:
            pass
        flying, self._flying = self._flying, {}
        for batch in flying.values():
            for packet in batch.packets.values():
                self._reply_bulk(packet, status_of(exc), b"", 0)
        for endpoint in list(self._waiting):
            if self._waiting[endpoint]:
                self._launch(endpoint)

    def _end_bulk(self, status: Status) -> None:
        """Answer every packet in flight or waiting with ``status`` (CANCELLED where the guest
        cancelled it), submitting nothing: the platform has dropped what it had (a bus
        reset)."""
        flying, self._flying = self._flying, {}
        waiting = [packet for queue in self._waiting.values() for packet in queue]
        self._waiting.clear()
        ended = [packet for batch in flying.values() for packet in batch.packets.values()]
        for packet in ended + waiting:
            self._end_packet(packet, status)
        if ended or waiting:
            log.info("usbredir: the reset ended %d bulk packets in flight, %d waiting",
                     len(ended), len(waiting))

    def _end_packet(self, packet: Packet, status: Status) -> None:
        """Answer ``packet`` with ``status`` and no data, or CANCELLED if the guest cancelled
        it."""
        cancelled = self._take_cancelled(packet.id)
        self._reply_bulk(packet, Status.CANCELLED if cancelled else status, b"", 0)

    def _reply_bulk(self, packet: Packet, status: Status, data: bytes, moved: int) -> None:
        self._answered(packet.id)
        body = self.negotiated.bulk_body(packet.fields[0], status, moved, packet.fields[3])
        self._send(self.negotiated.encode(PacketType.BULK_PACKET, packet.id, body, data))
