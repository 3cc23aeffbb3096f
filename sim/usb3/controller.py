"""A SuperSpeed xHCI model that moves bulk transfers by a :class:`Usb3HostProfile`.

The profile is data (``host/busprobe/model/hosts/usb3/*.toml``); nothing here branches on its
name. Scheduling semantics (USB 3.2 §8.10, §8.12):

* IN: the host tokens the endpoint with an ACK TP granting ``NumP = min(max_burst_in, packets
  the ready transfers still want)``; it answers every data packet, ``turnaround_ns`` after the
  packet's last symbol, with an ACK TP for the next sequence number and the window re-stated
  (NumP 0 once nothing more is wanted). A packet with a bad CRC-32 is answered with Rty set and
  the same sequence number. NRDY parks the endpoint until ERDY.
* OUT: the host sends data packets back to back while fewer than ``max_burst_out`` are
  unacknowledged and the device's last NumP allows; each ACK TP retires every packet before its
  sequence number; Rty rewinds to it; NRDY parks until ERDY.
* Transfers are submitted and reaped through the engine shared with the USB 2.0 model
  (:class:`~busprobe.sim.transfer_engine.TransferEngine`): a transfer completes at its last
  ACK + ``completion_latency_us``, and one submitted in answer is ready ``resubmit_latency_us``
  later. The controller moves one transfer at a time, the endpoint whose oldest transfer is
  ready first; between transfers of an endpoint within a run the host waits
  ``retoken_delay_us`` before it tokens the endpoint again.
* An ITP goes out every 125 µs of bus time (USB 3.2 §8.7), header credits permitting.
* Line time is the partner's: every symbol of every packet, SKP and idle, four a cycle.
"""

from __future__ import annotations

import math

import cocotb
from busprobe.model.usb3_hosts import Usb3HostProfile
from cocotb.task import Task
from cocotb.triggers import Event, First, Timer
from usb_protocol.types import USBStandardRequests
from usb_protocol.types.superspeed import HeaderPacketType, TransactionPacketSubtype

from ..transfer_engine import Pending, StreamOutcome, TransferEngine
from .framing import HeaderPacket
from .host_streams import EndpointStreams, move_on_streams
from .pipe import CLOCK_HZ, CLOCK_PERIOD_PS
from .protocol import DIR_IN, DIR_OUT, SuperSpeedProtocol, data_header, itp_header, tp_header

__all__ = ["SuperSpeedHostController", "StreamOutcome", "ITP_INTERVAL_CYCLES"]

#: One bus interval, 125 µs (USB 3.2 §8.7).
ITP_INTERVAL_CYCLES = CLOCK_HZ // 8000
#: A transfer that makes no progress for this long (simulated) is abandoned as a timeout.
STUCK_CYCLES = CLOCK_HZ // 100
SEQUENCE_MODULO = 32
ACK, NRDY, ERDY, STALL = (TransactionPacketSubtype.ACK, TransactionPacketSubtype.NRDY,
                          TransactionPacketSubtype.ERDY, TransactionPacketSubtype.STALL)
#: The ENDPOINT_HALT feature selector (USB 3.2 Table 9-7).
ENDPOINT_HALT = 0
#: A packet due later is handed to the partner this many cycles before its start (enough for
#: the hand-over, so it still starts in that very cycle; :meth:`SuperSpeedHostController._send_at`).
QUEUE_LEAD_CYCLES = 8
#: What the controller counts while it works on bulk transfers.
COUNTERS = ("nrdys", "retries", "packets", "ack_tps", "stream_errors", "nostreams")


def _cycles(seconds: float) -> int:
    return math.ceil(seconds * CLOCK_HZ)


class SuperSpeedHostController(TransferEngine):
    """Bulk transfers and control transfers on a device behind a :class:`SuperSpeedProtocol`.

    Parameters
    ----------
    protocol : SuperSpeedProtocol
        The protocol layer (headers, control transfers) over the PIPE link partner.
    profile : Usb3HostProfile
        How this xHCI schedules (see the module docstring).
    max_packet_size : int
        The bulk endpoints' packet size.
    """

    clock_hz = CLOCK_HZ

    def __init__(self, protocol: SuperSpeedProtocol, profile: Usb3HostProfile,
                 max_packet_size: int = 1024) -> None:
        super().__init__(resubmit_cycles=_cycles(profile.resubmit_latency_us * 1e-6),
                         counters=COUNTERS)
        self.protocol = protocol
        self.profile = profile
        self.max_packet_size = max_packet_size
        self.turnaround = _cycles(profile.turnaround_ns * 1e-9)
        self._sequence: dict[int, int] = {}  # endpoint address -> next sequence number
        self._last_end: dict[int, int] = {}  # endpoint address -> its last transfer's end
        self._next_itp = 0
        self._bus_interval = 0
        self._corrupt_out: set[int] = set()
        self._out_packets_sent = 0
        self._movers: dict[int, Task] = {}  # endpoint address -> its transfer on the bus
        self._moved = Event()
        self._failure: Exception | None = None
        #: Endpoint address -> its streams, once allocated (:meth:`enable_streams`).
        self.streams: dict[int, EndpointStreams] = {}
        protocol.keep = self._for_a_queued_endpoint

    def enable_streams(self, address: int, max_streams: int) -> EndpointStreams:
        """Give bulk endpoint ``address`` stream rings for Stream IDs 1..``max_streams`` (what
        an xHCI does when its driver allocates streams): its transfers then move on the stream
        their ``stream_id`` names, in the order the device selects them
        (:mod:`.host_streams`)."""
        self.streams[address] = EndpointStreams(max_streams)
        return self.streams[address]

    def free_streams(self, address: int) -> None:
        self.streams.pop(address, None)

    def _for_a_queued_endpoint(self, header: HeaderPacket) -> bool:
        """A data packet or TP of an endpoint with transfers queued: its mover will want it,
        even if at the moment it is sending, not waiting (IN and OUT move at once)."""
        return header.type in (HeaderPacketType.DATA, HeaderPacketType.TRANSACTION) and any(
            queue and address & 0x7F == header.field(1, 8, 4)
            for address, queue in self.queues.items())

    @property
    def corrupt_out(self) -> set[int]:
        """Fault injection: indices (from the first OUT data packet sent after this is set) of
        OUT data packets sent with a corrupted CRC-32."""
        return self._corrupt_out

    @corrupt_out.setter
    def corrupt_out(self, indices: set[int]) -> None:
        self._corrupt_out, self._out_packets_sent = set(indices), 0

    def reset_state(self) -> None:
        self._sequence.clear()

    async def control(self, request_type: int, request: int, value: int, index: int,
                      length_or_data: int | bytes) -> bytes:
        self.host_acted()
        data = await self.protocol.control(request_type, request, value, index, length_or_data)
        # What restarts a device's bulk sequence numbers restarts the host's too, as an xHCI's
        # Reset Endpoint / Configure Endpoint commands do: SET_CONFIGURATION and SET_INTERFACE
        # all of them, CLEAR_FEATURE(ENDPOINT_HALT) its endpoint's (USB 3.2 §9.4.5, §9.1.1.5).
        if request_type in (0x00, 0x01) and request in (USBStandardRequests.SET_CONFIGURATION,
                                                         USBStandardRequests.SET_INTERFACE):
            self._sequence.clear()
        elif (request_type, request, value) == (0x02, USBStandardRequests.CLEAR_FEATURE,
                                                 ENDPOINT_HALT):
            self._sequence.pop(index & 0xFF, None)
        return data

    # -- time ---------------------------------------------------------------------------------

    @property
    def cycle(self) -> int:
        return self.protocol.link.partner.cycle

    def _itp_if_due(self) -> None:
        """An ITP every bus interval (sent when the host next has the lane)."""
        if self._next_itp == 0:
            self._next_itp = self.cycle - self.cycle % ITP_INTERVAL_CYCLES + ITP_INTERVAL_CYCLES
        while self.cycle >= self._next_itp:
            # Claimed at once (both movers send them), sent by a task of its own: a mover that
            # awaited it lost its place on the lane (a UAS status prime went behind its IU).
            self._bus_interval += 1
            self._next_itp += ITP_INTERVAL_CYCLES
            cocotb.start_soon(self.protocol.link.send_header(itp_header(self._bus_interval)))

    async def _device_tp(self, endpoint: int, deadline: int, what: str) -> HeaderPacket:
        # Data packets too are taken by endpoint: an OUT mover that took any data packet
        # would swallow the IN mover's (and, the last of a burst, the whole IN transfer).
        accept = self.protocol.from_endpoint(endpoint)
        while True:
            self._itp_if_due()
            wait = min(deadline, self._next_itp) - self.cycle
            try:
                return await self.protocol.expect(accept, max(wait, 1), what)
            except AssertionError:
                if self.cycle >= deadline:
                    raise

    async def _wait_until(self, cycle: int) -> None:
        while self.cycle < cycle:
            self._itp_if_due()
            await self.protocol.link.partner.wait_until(min(cycle, self._next_itp))

    # -- the engine's bus ---------------------------------------------------------------------

    def _idle_start(self) -> int:
        return self.cycle

    def _completes_at(self, last_handshake_end: int) -> int:
        return last_handshake_end + _cycles(self.profile.completion_latency_us * 1e-6)

    async def _advance_to(self, cycle: int) -> None:
        await self._wait_until(cycle)

    def _new_run(self) -> None:
        self._last_end.clear()  # a run's first transfer is tokened at once

    async def _work(self, before: int | None) -> bool:
        """Start a mover for every endpoint whose oldest transfer can start before ``before``,
        then wait until one finishes (True) or ``before`` comes (False). IN and OUT move at once:
        SuperSpeed is dual simplex, each direction on a lane of its own."""
        # In the order their oldest transfers were submitted, as an xHCI serves doorbells rung
        # one after another (by the endpoints' first use, a UAS write's COMMAND IU went before
        # its data stream's prime after reads and behind it otherwise: 2 % apart).
        waiting = sorted((queue[0].ready_at, queue[0].order, address)
                         for address, queue in self.queues.items()
                         if queue and address not in self._movers)
        for ready_at, _, address in waiting:
            start = max(ready_at, self.cycle)
            if before is None or start < before:
                self._movers[address] = cocotb.start_soon(self._mover(address, start))
        if not self._movers or (before is not None and before <= self.cycle):
            return False
        self._moved.clear()
        if before is None:
            await self._moved.wait()
        else:
            await First(self._moved.wait(), Timer((before - self.cycle) * CLOCK_PERIOD_PS, "ps"))
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        return self._moved.is_set()

    async def _mover(self, address: int, start: int) -> None:
        """Move the oldest transfer of ``address`` from ``start`` on; a failure is raised by
        :meth:`_work` in the engine's flow."""
        try:
            await self._wait_until(start)
            pending = self.queues[address][0]
            at = self.cycle
            if address in self._last_end and self.profile.retoken_delay_us:
                at = max(at, self._last_end[address]
                         + _cycles(self.profile.retoken_delay_us * 1e-6))
            if address in self.streams:
                pending, end, actual, stalled = await move_on_streams(self, address, at,
                                                                     STUCK_CYCLES)
            else:
                move = self._move_in if pending.transfer.incoming else self._move_out
                end, actual, stalled, _ = await move(pending, at)
            self._last_end[address] = end
            self.finish(pending, end, actual=actual, stalled=stalled)
        except Exception as exc:  # raised again by _work, in the engine's flow
            self._failure = exc
        finally:
            self._movers.pop(address, None)
            self._moved.set()

    def cancel(self) -> None:
        for task in self._movers.values():
            task.cancel()
        self._movers.clear()
        super().cancel()

    # -- bulk ---------------------------------------------------------------------------------

    async def _send_at(self, start: int, dws: tuple[int, int, int], payload: bytes | None = None,
                       **options) -> None:
        """Send a header packet not before cycle ``start``. The partner sends its queued
        blocks in order, each not before its start: one queued long before its start (an
        endpoint's turnaround or re-token delay) would hold every packet queued behind it, the
        other endpoints' too. So it waits here until :data:`QUEUE_LEAD_CYCLES` before."""
        if start - QUEUE_LEAD_CYCLES > self.cycle:
            await self._wait_until(start - QUEUE_LEAD_CYCLES)
        await self.protocol.link.send_header(dws, payload, start_at=start, **options)

    async def _move_in(self, pending: Pending, at: int, stream_id: int = 0
                       ) -> tuple[int, int, bool, bool]:
        """Token the IN endpoint and take packets until the transfer is done; returns the end
        of its last packet, the bytes received, whether the endpoint stalled and whether the
        transfer is done. On a stream (``stream_id``) the tokens and every data packet name it,
        and an NRDY ends the stream before the transfer (done False: it goes on when the
        device selects the stream again)."""
        protocol, profile = self.protocol, self.profile
        mps, counters = self.max_packet_size, self.counters
        address, length = pending.transfer.endpoint, pending.transfer.length
        endpoint = address & 0x7F
        received = pending.received
        wanted = max(1, math.ceil((length - len(received)) / mps))
        sequence = self._sequence.get(address, 0)

        async def token(start: int, *, packets: int, retry: bool = False) -> None:
            await self._send_at(start, tp_header(protocol.address, ACK, endpoint=endpoint,
                                                 direction=DIR_IN, sequence=sequence,
                                                 packets=packets, retry=retry,
                                                 packets_pending=bool(stream_id and packets),
                                                 stream_id=stream_id))
            counters["ack_tps"] += 1

        await token(at, packets=min(profile.max_burst_in, wanted))
        while True:
            header = await self._device_tp(endpoint, self.cycle + STUCK_CYCLES,
                                           f"IN data on endpoint {endpoint}")
            if header.type == HeaderPacketType.TRANSACTION:
                kind = header.field(1, 0, 4)
                if kind == STALL:
                    self._sequence[address] = sequence
                    return header.end, len(received), True, True
                if kind == NRDY:
                    counters["nrdys"] += 1
                    if stream_id and self.streams[address].answers_a_prime():
                        continue
                    if stream_id:  # the stream ends here (USB 3.2 §8.12.1.4)
                        self._sequence[address] = sequence
                        return header.end, len(received), False, False
                if kind == ERDY and stream_id:
                    # The device selects streams in Idle only: one in Move Data is an error.
                    counters["stream_errors"] += 1
                elif kind == ERDY:  # token again, same sequence
                    await token(self.cycle + self.turnaround,
                                packets=min(profile.max_burst_in, wanted))
                continue
            if header.field(1, 0, 5) != sequence or header.payload is None:
                # Out of order or a bad payload: ask again for this one (Rty).
                counters["retries"] += 1
                await token(header.end + self.turnaround,
                            packets=min(profile.max_burst_in, wanted), retry=True)
                continue
            if header.dws[2] & 0xFFFF != stream_id:
                raise AssertionError(f"IN data on endpoint {endpoint} named stream "
                                     f"{header.dws[2] & 0xFFFF}, not {stream_id}")
            payload = header.payload
            received += payload
            counters["packets"] += 1
            wanted -= 1
            sequence = (sequence + 1) % SEQUENCE_MODULO
            done = wanted == 0 or len(payload) < mps
            await token(header.end + self.turnaround,
                        packets=0 if done else min(profile.max_burst_in, wanted))
            if done:
                self._sequence[address] = sequence
                return header.end, len(received), False, True

    async def _move_out(self, pending: Pending, at: int, stream_id: int = 0, *,
                        granted: int | None = None) -> tuple[int, int, bool, bool]:
        """Send the transfer's packets in bursts the device's ACKs allow; returns the end of
        the last ACK, the bytes sent, whether the endpoint stalled and True (done). On a stream
        (``stream_id``, started by an ERDY granting ``granted`` packets) every data packet and
        every ACK TP taken names it."""
        link, protocol, profile = self.protocol.link, self.protocol, self.profile
        mps, counters = self.max_packet_size, self.counters
        address = pending.transfer.endpoint
        endpoint = address & 0x7F
        data = pending.transfer.data or bytes(pending.transfer.length)
        chunks = [data[i:i + mps] for i in range(0, len(data), mps)] or [b""]
        if pending.transfer.zlp and len(data) and len(data) % mps == 0:
            chunks.append(b"")  # libusb's ADD_ZERO_PACKET: the device sees where it ends
        base = self._sequence.get(address, 0)
        granted = profile.max_burst_out if granted is None else granted
        acked, sent, rewound_at, end = 0, 0, -1, at
        while acked < len(chunks):
            while sent < len(chunks) and sent - acked < min(granted, profile.max_burst_out):
                if len(self._movers) > 1:
                    # Another endpoint needs this lane too (its ACK TPs, dual simplex): the
                    # host keeps one data packet waiting, not a burst, so they go in between.
                    await link.partner.wait_backlog(1)
                wire_index = self._out_packets_sent
                self._out_packets_sent += 1
                await self._send_at(at, data_header(
                    protocol.address, endpoint=endpoint, direction=DIR_OUT,
                    sequence=(base + sent) % SEQUENCE_MODULO, length=len(chunks[sent]),
                    packets_pending=sent + 1 < len(chunks), stream_id=stream_id),
                    chunks[sent], corrupt_crc32=wire_index in self._corrupt_out)
                self._corrupt_out.discard(wire_index)
                sent += 1
            header = await self._device_tp(endpoint, self.cycle + STUCK_CYCLES,
                                           f"ACK on OUT endpoint {endpoint}")
            if header.type != HeaderPacketType.TRANSACTION:
                continue
            kind = header.field(1, 0, 4)
            if kind == STALL:
                self._sequence[address] = (base + acked) % SEQUENCE_MODULO
                return header.end, acked * mps, True, True
            if kind in (ACK, ERDY) and header.dws[2] & 0xFFFF != stream_id:
                raise AssertionError(f"{TransactionPacketSubtype(kind).name} on OUT endpoint "
                                     f"{endpoint} named stream {header.dws[2] & 0xFFFF}, "
                                     f"not {stream_id}")
            if kind == NRDY:
                counters["nrdys"] += 1
                if not (stream_id and self.streams[address].answers_a_prime()):
                    granted = 0
                continue
            next_sequence = header.field(1, 21, 5)
            granted = header.field(1, 16, 5)
            newly = (next_sequence - base - acked) % SEQUENCE_MODULO
            if kind == ACK:
                counters["ack_tps"] += 1
                acked += min(newly, sent - acked)
                retry = bool(header.field(1, 6, 1))
                if retry and rewound_at != acked:  # Rty: resend from next_sequence
                    counters["retries"] += sent - acked
                    sent, rewound_at = acked, acked
                elif not retry:
                    # The device answers every packet sent before the rewind with the same
                    # Rty ACK; only the first rewinds, until it acknowledges progress.
                    rewound_at = -1
            elif kind == ERDY:
                sent = acked  # the packets it answered NRDY are sent again
            at = header.end + self.turnaround
            end = header.end
        counters["packets"] += len(chunks)
        self._sequence[address] = (base + len(chunks)) % SEQUENCE_MODULO
        pending.offset = len(data)
        return end, len(data), False, True
