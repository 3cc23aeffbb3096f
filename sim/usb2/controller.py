"""A USB 2.0 host controller that schedules bulk and control transfers by a :class:`HostProfile`.

The profile is data (``host/busprobe/model/hosts/*.toml``); nothing here branches on its name.

Scheduling semantics (the ceiling model's closed form matches these; keep them in step):

* Line time comes from the real packets (:mod:`busprobe.model.usb2_wire`): SYNC, PID, payload,
  CRC, bit stuffing, EOP, the host's 88-bit back-to-back delay (token -> DATA on OUT) and the
  8-bit turnaround before the host answers a device packet; the device's own response time is
  whatever the gateware takes.
* Every microframe starts with an SOF (96 bit times incl. its 40-bit EOP). A transaction starts
  only if its *reserved* line time fits before the microframe ends; the reservation is the
  spec's budget for it: unstuffed packets with 8-bit turnarounds (§5.8.4 counts no stuffing).
* At most ``max_bulk_{in,out}_per_uframe`` transactions on the endpoint per microframe (NAKed
  ones count, as an EHCI/xHCI schedule pass does), and ``inter_transaction_gap_ns`` of idle bus
  after each transaction.
* A transfer of ``length`` bytes ends at its short packet (IN), or when ``length`` bytes moved
  (plus a ZLP on OUT when asked and ``length`` is a multiple of 512). It *completes* to the
  application ``completion_latency_us`` after its last handshake, rounded up to the next
  microframe boundary when ``completion_on_uframe``.
* ``queue_depth`` transfers are submitted at the start (cycle ``t0``). The controller works on
  the oldest; the next queued one starts right after it on the bus. Each completion submits a new
  transfer (while fewer than ``count`` were submitted) which becomes schedulable
  ``resubmit_latency_us`` after that completion: queue depth 1 pays completion + resubmit
  latency once per transfer.
* Throughput = bytes / (last completion - t0), in simulated time (60 MHz cycles).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from busprobe.model import usb2_wire as wire
from busprobe.model.usb2_hosts import HostProfile
from busprobe.model.usb2_wire import Pid
from usb_protocol.types import USBStandardFeatures, USBStandardRequests

from .bulk_queue import (
    STUCK_UFRAMES,
    BulkQueue,
    StreamOutcome,
    StreamStuck,
    TransferStall,
)
from .link import DeviceTimeout, LinkError, UlpiHostModel

__all__ = ["HostController", "StreamOutcome", "TransferStall", "StreamStuck"]

log = logging.getLogger(__name__)

CONTROL_MPS = 64


class HostController:
    """Schedules transfers for one device on a :class:`UlpiHostModel` by a :class:`HostProfile`.

    Parameters
    ----------
    link : UlpiHostModel
        The link layer (line timeline, transactions).
    profile : HostProfile
        How this controller schedules (see the module docstring for the semantics).
    """

    def __init__(self, link: UlpiHostModel, profile: HostProfile) -> None:
        self.link = link
        self.profile = profile
        self.address = 0
        self.toggles: dict[tuple[int, str], Pid] = {}
        self._uframe_counts: dict[tuple[int, str], int] = {}
        self._counted_uframe = -1
        self.gap_cycles = wire.bits_to_cycles(round(profile.inter_transaction_gap_ns
                                                    * wire.BIT_RATE / 1e9))

    def reset_state(self) -> None:
        """After a bus reset: address 0, every data toggle back to DATA0."""
        self.address = 0
        self.toggles.clear()

    # -- bookkeeping --------------------------------------------------------------------------

    def _count(self, endpoint: int, direction: str) -> int:
        if self._counted_uframe != self.link.uframe:
            self._counted_uframe = self.link.uframe
            self._uframe_counts.clear()
        return self._uframe_counts.get((endpoint, direction), 0)

    def _bump(self, endpoint: int, direction: str) -> None:
        key = (endpoint, direction)
        self._uframe_counts[key] = self._count(endpoint, direction) + 1
        self.link.free_at += self.gap_cycles

    @staticmethod
    def reservation(direction: str, payload: int) -> int:
        """Cycles the schedule reserves for a transaction (spec budget: unstuffed, 8-bit IPDs)."""
        return wire.bits_to_cycles(wire.transaction_bits(direction, payload).total)

    def toggle(self, endpoint: int, direction: str) -> Pid:
        """The data PID the host expects (IN) or sends (OUT) next on ``endpoint``."""
        return self.toggles.get((endpoint, direction), Pid.DATA0)

    def flip(self, endpoint: int, direction: str) -> None:
        """A data packet was accepted on ``endpoint``: the next one has the other PID."""
        current = self.toggle(endpoint, direction)
        self.toggles[(endpoint, direction)] = Pid.DATA1 if current == Pid.DATA0 else Pid.DATA0

    # -- control transfers ------------------------------------------------------------------

    async def control(self, request_type: int, request: int, value: int, index: int,
                      data_or_length: bytes | int = 0, *,
                      between: Callable[[], Awaitable[object]] | None = None) -> bytes:
        """One control transfer on endpoint 0 (§8.5.3); returns the IN data stage's bytes.

        ``between``, if given, runs before every data- and status-stage transaction: other
        traffic a host schedules while the control transfer is in progress (§5.5.5 allows it).
        """
        link, address = self.link, self.address

        async def stage(attempt: Callable) -> object:
            if between is not None:
                await between()
            return await self._until_handshake(attempt)

        device_to_host = bool(request_type & 0x80)
        length = data_or_length if isinstance(data_or_length, int) else len(data_or_length)
        setup = bytes((request_type, request, value & 0xFF, value >> 8, index & 0xFF, index >> 8,
                       length & 0xFF, length >> 8))
        await self._until_handshake(lambda: link.transaction_out(
            address, 0, Pid.DATA0, setup, setup=True, reserve_cycles=self.reservation("out", 8)))
        toggle = Pid.DATA1
        received = bytearray()
        if device_to_host:
            while len(received) < length:
                result = await stage(lambda: link.transaction_in(
                    address, 0, reserve_cycles=self.reservation("in", CONTROL_MPS)))
                if result.data_pid != toggle:
                    continue  # a retry of data we already have
                toggle = Pid.DATA0 if toggle == Pid.DATA1 else Pid.DATA1
                received += result.payload
                if len(result.payload) < CONTROL_MPS:
                    break
            await stage(lambda: link.transaction_out(
                address, 0, Pid.DATA1, b"", reserve_cycles=self.reservation("out", 0)))
            return bytes(received[:length])
        data = b"" if isinstance(data_or_length, int) else bytes(data_or_length)
        for offset in range(0, len(data), CONTROL_MPS):
            chunk = data[offset:offset + CONTROL_MPS]
            await stage(lambda chunk=chunk, toggle=toggle: link.transaction_out(
                address, 0, toggle, chunk, reserve_cycles=self.reservation("out", len(chunk))))
            toggle = Pid.DATA0 if toggle == Pid.DATA1 else Pid.DATA1
        await stage(lambda: link.transaction_in(
            address, 0, reserve_cycles=self.reservation("in", 0)))
        self._after_standard_request(request_type, request, value, index)
        return b""

    def _after_standard_request(self, request_type: int, request: int, value: int,
                                index: int) -> None:
        """The toggles a host starts over after a request that makes the device start over
        (USB 2.0 §9.1.1.5, §9.4.5): every endpoint's after SET_CONFIGURATION and SET_INTERFACE,
        one endpoint's after CLEAR_FEATURE(ENDPOINT_HALT). Without it the host model sends the
        device's DATA0 as a repeat after a guest re-configures it through the usbredir export."""
        if (request_type, request) in ((0x00, USBStandardRequests.SET_CONFIGURATION),
                                       (0x01, USBStandardRequests.SET_INTERFACE)):
            self.toggles.clear()
        elif (request_type, request, value) == (0x02, USBStandardRequests.CLEAR_FEATURE,
                                                USBStandardFeatures.ENDPOINT_HALT):
            self.toggles.pop((index & 0x0F, "in" if index & 0x80 else "out"), None)

    async def _until_handshake(self, attempt: Callable) -> object:
        """Retry a control-stage transaction while NAKed; raise on STALL or repeated errors."""
        errors = 0
        start_uframe = self.link.uframe
        while True:
            try:
                result = await attempt()
            except DeviceTimeout:
                errors += 1
                if errors >= 3:  # §8.5.1: three errors retire the transfer
                    raise
                continue
            if result.handshake == Pid.STALL:
                raise TransferStall("device STALLed a control request")
            if result.handshake in (Pid.ACK, Pid.NYET) or (result.data_pid is not None
                                                            and result.handshake == Pid.ACK):
                return result
            if result.handshake is None:  # corrupt data: retry
                errors += 1
                if errors >= 3:
                    raise LinkError("three corrupt packets in a row on endpoint 0")
                continue
            if self.link.uframe - start_uframe > STUCK_UFRAMES:
                raise StreamStuck("control request NAKed for 100 ms")
            await self.link.next_uframe()  # NAK: try again in the next microframe

    # -- bulk streams -------------------------------------------------------------------------

    async def stream(self, direction: str, endpoint: int, length: int, count: int,
                     queue_depth: int, *, max_packet_size: int = 512,
                     source: Callable[[int], bytes] | None = None,
                     sink: Callable[[bytes], None] | None = None,
                     zlp: bool = False) -> StreamOutcome:
        """Move ``count`` bulk transfers of ``length`` bytes keeping ``queue_depth`` queued.

        OUT data comes from ``source(length)`` when a transfer is submitted; each completed IN
        transfer's data goes to ``sink`` in order. See the module docstring for the timing.
        """
        link = self.link
        queue = BulkQueue(self, direction, endpoint, length, count, queue_depth,
                          t0=max(link.free_at, link.phy.cycle), max_packet_size=max_packet_size,
                          source=source, sink=sink, zlp=zlp)
        while queue.busy:
            if queue.ready_at > link.free_at:
                await link.advance_to(queue.ready_at)
            if queue.at_limit():
                await link.next_uframe()
                continue
            queue.check_stuck()
            await queue.transact()
        await link.advance_to(queue.end)
        return queue.outcome()

    async def loopback(self, out_endpoint: int, in_endpoint: int, length: int, count: int,
                       queue_depth: int, *, max_packet_size: int = 512,
                       source: Callable[[int], bytes] | None = None,
                       sink: Callable[[bytes], None] | None = None) -> StreamOutcome:
        """``count`` OUT transfers and ``count`` IN transfers of ``length`` bytes, both queues
        ``queue_depth`` deep and served in turn, as a controller serves two endpoints of one
        device: what a device looping OUT back to IN returns.

        The outcome counts the bytes that came back (IN), from the first submission to the last
        completion of either direction; NAKs and transactions are those of both endpoints.
        """
        link = self.link
        t0 = max(link.free_at, link.phy.cycle)
        queues = [BulkQueue(self, "out", out_endpoint, length, count, queue_depth, t0=t0,
                            max_packet_size=max_packet_size, source=source),
                  BulkQueue(self, "in", in_endpoint, length, count, queue_depth, t0=t0,
                            max_packet_size=max_packet_size, sink=sink)]
        turn = 0
        while any(queue.busy for queue in queues):
            order = queues[turn:] + queues[:turn]
            chosen = next((queue for queue in order if queue.busy and not queue.at_limit()
                           and queue.ready_at <= link.free_at), None)
            if chosen is None:
                waiting = [queue.ready_at for queue in queues
                           if queue.busy and not queue.at_limit()]
                if waiting and min(waiting) > link.free_at:
                    await link.advance_to(min(waiting))
                else:
                    await link.next_uframe()
                continue
            chosen.check_stuck()
            await chosen.transact()
            turn = (queues.index(chosen) + 1) % len(queues)
        sent, returned = queues
        await link.advance_to(max(sent.end, returned.end))
        outcome = returned.outcome("loopback")
        outcome.end = max(sent.end, returned.end)
        outcome.naks += sent.naks
        outcome.nyets += sent.nyets
        outcome.transactions += sent.transactions
        return outcome
