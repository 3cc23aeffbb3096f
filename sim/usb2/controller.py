"""A USB 2.0 host controller that schedules bulk and control transfers by a :class:`HostProfile`.

The profile is data (``host/busprobe/model/hosts/*.toml``); nothing here branches on its name.
Bulk transfers are submitted and reaped through the engine shared with the SuperSpeed model
(:class:`~busprobe.sim.transfer_engine.TransferEngine`, whose docstring gives the completion
and resubmission rules); this module decides which transaction goes on the bus next.

Scheduling semantics (the ceiling model's closed form matches these; keep them in step):

* Line time comes from the real packets (:mod:`busprobe.protocol.usb2_wire`): SYNC, PID, payload,
  CRC, bit stuffing, EOP, the host's 88-bit back-to-back delay (token -> DATA on OUT) and the
  8-bit turnaround before the host answers a device packet; the device's own response time is
  whatever the gateware takes.
* Every microframe starts with an SOF (96 bit times incl. its 40-bit EOP). A transaction starts
  only if its *reserved* line time fits before the microframe ends; the reservation is the
  spec's budget for it: unstuffed packets with 8-bit turnarounds (§5.8.4 counts no stuffing).
* At most ``max_bulk_{in,out}_per_uframe`` transactions on an endpoint per microframe (NAKed
  ones count, as an EHCI/xHCI schedule pass does), and ``inter_transaction_gap_ns`` of idle bus
  after each transaction.
* Each endpoint's transfers go in submission order; the controller works on an endpoint's
  oldest, and endpoints with work take turns, one transaction each (a loopback's OUT and IN).
* A transfer of ``length`` bytes ends at its short packet (IN), or when ``length`` bytes moved
  (plus a ZLP on OUT when asked and ``length`` is a multiple of 512). It *completes* to the
  application ``completion_latency_us`` after its last handshake, rounded up to the next
  microframe boundary when ``completion_on_uframe``; a transfer submitted in answer becomes
  schedulable ``resubmit_latency_us`` after that completion, so queue depth 1 pays completion
  + resubmit latency once per transfer.
* Throughput = bytes / (last completion - first submission), in simulated time (60 MHz cycles).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Mapping

from busprobe.model.usb2_hosts import HostProfile
from busprobe.protocol import usb2_wire as wire
from busprobe.protocol.names import Direction
from busprobe.protocol.usb2 import CLOCK_HZ, MAX_PACKET_SIZE
from busprobe.protocol.usb2_wire import Pid
from usb_protocol.types import USBStandardFeatures, USBStandardRequests

from ..transfer_engine import Pending, StreamOutcome, TransferEngine
from .bulk_transactions import (
    STUCK_UFRAMES,
    EndpointState,
    StreamStuck,
    TransferStall,
    transact_in,
    transact_out,
)
from .link import DeviceTimeout, LinkError, UlpiHostModel

__all__ = ["HostController", "StreamOutcome", "TransferStall", "StreamStuck", "cycles_from_us",
           "RoundRobin", "round_robin"]

log = logging.getLogger(__name__)

CONTROL_MPS = 64
#: What the controller counts while it works on bulk transfers.
COUNTERS = ("naks", "nyets", "transactions", "repeats")


class RoundRobin:
    """Whose turn it is on a bus: the slots (an endpoint; on a hub, a device's endpoint) with
    work, in the order they first had some, one transaction each in turn.

    Attributes
    ----------
    _order : list
        Slots with work this run, in turn order.
    _turn : int
        Index in ``_order`` of the slot whose turn is next.
    """

    _order: list[Hashable]
    _turn: int

    def _slot_limited(self, slot: Hashable) -> bool:
        """The slot has had its transactions this microframe."""
        raise NotImplementedError

    async def _slot_transact(self, slot: Hashable) -> None:
        """One transaction for the slot's oldest transfer."""
        raise NotImplementedError


async def round_robin(bus: RoundRobin, link: UlpiHostModel,
                      queues: Mapping[Hashable, deque[Pending]], before: int | None) -> bool:
    """The bus's next piece of work on ``queues`` (slot -> transfers, oldest first) if it starts
    before ``before``: one transaction for the next slot in turn that may go now, or idle line
    time until one may; False when there is none (see the module docstring)."""
    for slot, queue in queues.items():
        if queue and slot not in bus._order:
            bus._order.append(slot)
    if not any(queues.values()):
        bus._order, bus._turn = [], 0
        return False
    order = bus._order[bus._turn:] + bus._order[:bus._turn]
    chosen = next((slot for slot in order if queues.get(slot)
                   and not bus._slot_limited(slot)
                   and queues[slot][0].ready_at <= link.free_at), None)
    if chosen is None:
        waiting = [queues[slot][0].ready_at for slot in order
                   if queues.get(slot) and not bus._slot_limited(slot)]
        target = min(waiting) if waiting and min(waiting) > link.free_at else link.uframe_end
        if before is not None and before <= target:
            return False
        await link.advance_to(target)
        return True
    if before is not None and before <= link.free_at:
        return False
    await bus._slot_transact(chosen)
    bus._turn = (bus._order.index(chosen) + 1) % len(bus._order)
    return True


def cycles_from_us(us: float) -> int:
    return round(us * CLOCK_HZ / 1e6)


class HostController(TransferEngine, RoundRobin):
    """Schedules transfers for one device on a :class:`UlpiHostModel` by a :class:`HostProfile`.

    Parameters
    ----------
    link : UlpiHostModel
        The link layer (line timeline, transactions).
    profile : HostProfile
        How this controller schedules (see the module docstring for the semantics).

    Attributes
    ----------
    address : int
        The device's address.
    endpoints : dict
        Endpoint address -> :class:`EndpointState` (toggle, PING, progress).
    max_packet_size : int
        The bulk endpoints' packet size.
    """

    clock_hz = CLOCK_HZ

    def __init__(self, link: UlpiHostModel, profile: HostProfile) -> None:
        super().__init__(resubmit_cycles=cycles_from_us(profile.resubmit_latency_us),
                         counters=COUNTERS)
        self.link = link
        self.profile = profile
        self.address = 0
        self.max_packet_size = MAX_PACKET_SIZE
        self.endpoints: dict[int, EndpointState] = {}
        self._uframe_counts: dict[int, int] = {}
        self._counted_uframe = -1
        self._order: list[Hashable] = []  # endpoints with work this run, in turn order
        self._turn = 0
        self.gap_cycles = wire.bits_to_cycles(round(profile.inter_transaction_gap_ns
                                                    * wire.BIT_RATE / 1e9))
        self.completion_cycles = cycles_from_us(profile.completion_latency_us)

    def reset_state(self) -> None:
        """After a bus reset: address 0, every data toggle back to DATA0."""
        self.address = 0
        self.endpoints.clear()

    def endpoint(self, address: int) -> EndpointState:
        return self.endpoints.setdefault(address, EndpointState(address))

    def toggle(self, endpoint: int, direction: str) -> Pid:
        """The data PID the host expects (IN) or sends (OUT) next on ``endpoint`` (its
        number)."""
        return self.endpoint(endpoint | (0x80 if direction == Direction.IN else 0)).toggle

    @staticmethod
    def reservation(direction: str, payload: int) -> int:
        """Cycles the schedule reserves for a transaction (spec budget: unstuffed, 8-bit IPDs)."""
        return wire.bits_to_cycles(wire.transaction_bits(direction, payload).total)

    # -- the engine's bus ---------------------------------------------------------------------
    @property
    def cycle(self) -> int:
        return self.link.phy.cycle

    def _idle_start(self) -> int:
        return max(self.link.free_at, self.link.phy.cycle)

    async def _advance_to(self, cycle: int) -> None:
        await self.link.advance_to(cycle)

    def _completes_at(self, last_handshake_end: int) -> int:
        finished = last_handshake_end + self.completion_cycles
        if self.profile.completion_on_uframe:
            base = self.link.uframe_start
            while base < finished:
                base += wire.UFRAME_CYCLES
            finished = base
        return finished

    def _uframe_count(self, address: int) -> int:
        if self._counted_uframe != self.link.uframe:
            self._counted_uframe = self.link.uframe
            self._uframe_counts.clear()
        return self._uframe_counts.get(address, 0)

    def _at_limit(self, address: int) -> bool:
        direction = Direction.IN if address & 0x80 else Direction.OUT
        return self._uframe_count(address) >= self.profile.max_per_uframe(direction)

    async def _work(self, before: int | None) -> bool:
        return await round_robin(self, self.link, self.queues, before)

    def _slot_limited(self, address: int) -> bool:
        return self._at_limit(address)

    async def _slot_transact(self, address: int) -> None:
        await self._transact(address)

    async def _transact(self, address: int) -> None:
        """One transaction for the oldest transfer on ``address``."""
        state, pending = self.endpoint(address), self.queues[address][0]
        state.check_stuck(self.link.uframe)
        transact = transact_in if state.direction == Direction.IN else transact_out
        done, result = await transact(
            self.link, self.address, state, pending,
            reserve=self.reservation(state.direction, self.max_packet_size),
            max_packet_size=self.max_packet_size, counters=self.counters)
        self._uframe_counts[address] = self._uframe_count(address) + 1
        self.link.free_at += self.gap_cycles
        if not done:
            return
        assert result is not None
        stalled = result.handshake == Pid.STALL
        actual = len(pending.received) if state.direction == Direction.IN else pending.offset
        self.finish(pending, result.end, actual=actual, stalled=stalled)
        if not self.queues[address]:
            state.progress_uframe = None

    # -- control transfers ------------------------------------------------------------------

    async def control(self, request_type: int, request: int, value: int, index: int,
                      data_or_length: bytes | int = 0, *,
                      between: Callable[[], Awaitable[object]] | None = None) -> bytes:
        """One control transfer on endpoint 0 (§8.5.3); returns the IN data stage's bytes.

        ``between``, if given, runs before every data- and status-stage transaction: other
        traffic a host schedules while the control transfer is in progress (§5.5.5 allows it).
        """
        link, address = self.link, self.address
        self.host_acted()

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
            self.endpoints.clear()
        elif (request_type, request, value) == (0x02, USBStandardRequests.CLEAR_FEATURE,
                                                USBStandardFeatures.ENDPOINT_HALT):
            self.endpoints.pop(index & 0x8F, None)

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
