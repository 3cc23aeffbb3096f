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
* ``queue_depth`` transfers are submitted at the start; each completion (its last ACK,
  + ``completion_latency_us``) submits the next, ready ``resubmit_latency_us`` later. Between
  transfers the host waits ``retoken_delay_us`` before it tokens the endpoint again.
* An ITP goes out every 125 µs of bus time (USB 3.2 §8.7), header credits permitting.
* Line time is the partner's: every symbol of every packet, SKP and idle, four a cycle.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from busprobe.model.usb3_hosts import Usb3HostProfile
from usb_protocol.types.superspeed import HeaderPacketType, TransactionPacketSubtype

from .framing import HeaderPacket
from .pipe import CLOCK_HZ
from .protocol import DIR_IN, DIR_OUT, DeviceStall, SuperSpeedProtocol, data_header, tp_header

__all__ = ["SuperSpeedHostController", "StreamOutcome", "ITP_INTERVAL_CYCLES"]

#: One bus interval, 125 µs (USB 3.2 §8.7).
ITP_INTERVAL_CYCLES = CLOCK_HZ // 8000
#: A transfer that makes no progress for this long (simulated) is abandoned as a timeout.
STUCK_CYCLES = CLOCK_HZ // 100
SEQUENCE_MODULO = 32
ACK, NRDY, ERDY, STALL = (TransactionPacketSubtype.ACK, TransactionPacketSubtype.NRDY,
                          TransactionPacketSubtype.ERDY, TransactionPacketSubtype.STALL)


@dataclass
class StreamOutcome:
    """What :meth:`SuperSpeedHostController.stream` measured (cycles of the 125 MHz clock)."""

    direction: str
    bytes: int
    transfers: int
    short_transfers: int
    start: int
    end: int
    nrdys: int = 0
    retries: int = 0
    packets: int = 0
    ack_tps: int = 0


def _cycles(seconds: float) -> int:
    return math.ceil(seconds * CLOCK_HZ)


class SuperSpeedHostController:
    """Bulk streams and control transfers on a device behind a :class:`SuperSpeedProtocol`."""

    def __init__(self, protocol: SuperSpeedProtocol, profile: Usb3HostProfile,
                 max_packet_size: int = 1024) -> None:
        self.protocol = protocol
        self.profile = profile
        self.max_packet_size = max_packet_size
        self.turnaround = _cycles(profile.turnaround_ns * 1e-9)
        self._sequence: dict[tuple[int, int], int] = {}
        self._next_itp = 0
        self._bus_interval = 0
        #: Fault injection: indices (from the stream's first packet) of OUT data packets sent
        #: with a corrupted CRC-32.
        self.corrupt_out: set[int] = set()

    def reset_state(self) -> None:
        self._sequence.clear()

    async def control(self, request_type: int, request: int, value: int, index: int,
                      length_or_data: int | bytes) -> bytes:
        return await self.protocol.control(request_type, request, value, index, length_or_data)

    # -- time ---------------------------------------------------------------------------------

    @property
    def cycle(self) -> int:
        return self.protocol.link.partner.cycle

    async def _itp_if_due(self) -> None:
        """An ITP every bus interval (sent when the host next has the lane)."""
        link = self.protocol.link
        if self._next_itp == 0:
            self._next_itp = self.cycle - self.cycle % ITP_INTERVAL_CYCLES + ITP_INTERVAL_CYCLES
        while self.cycle >= self._next_itp:
            from .protocol import itp_header
            self._bus_interval += 1
            await link.send_header(itp_header(self._bus_interval))
            self._next_itp += ITP_INTERVAL_CYCLES

    async def _device_tp(self, endpoint: int, deadline: int, what: str) -> HeaderPacket:
        def accept(header: HeaderPacket) -> bool:
            return header.type == HeaderPacketType.DATA or (
                header.type == HeaderPacketType.TRANSACTION
                and header.field(1, 8, 4) == endpoint)
        while True:
            await self._itp_if_due()
            wait = min(deadline, self._next_itp) - self.cycle
            try:
                return await self.protocol.expect(accept, max(wait, 1), what)
            except AssertionError:
                if self.cycle >= deadline:
                    raise

    # -- bulk ---------------------------------------------------------------------------------

    async def stream(self, direction: str, endpoint: int, length: int, count: int,
                     queue_depth: int, *, source: Callable[[int], bytes] | None = None,
                     sink: Callable[[bytes], None] | None = None) -> StreamOutcome:
        """``count`` transfers of ``length`` bytes, ``queue_depth`` of them queued at a time."""
        if direction == "in":
            return await self._stream_in(endpoint, length, count, queue_depth, sink)
        return await self._stream_out(endpoint, length, count, queue_depth, source)

    def _ready_times(self, count: int, queue_depth: int, start: int) -> list[int]:
        return [start] * min(count, queue_depth)

    def _completed(self, ready: list[int], count: int, end: int) -> None:
        """A transfer ended at ``end``: submit the next one, as a driver's callback would."""
        if len(ready) < count:
            done = end + _cycles(self.profile.completion_latency_us * 1e-6)
            ready.append(done + _cycles(self.profile.resubmit_latency_us * 1e-6))

    async def _stream_in(self, endpoint: int, length: int, count: int, queue_depth: int,
                         sink: Callable[[bytes], None] | None) -> StreamOutcome:
        link, protocol, profile = self.protocol.link, self.protocol, self.profile
        mps = self.max_packet_size
        key = (endpoint, DIR_IN)
        start = self.cycle
        outcome = StreamOutcome("in", 0, 0, 0, start, start)
        ready = self._ready_times(count, queue_depth, start)
        packets_per = max(1, math.ceil(length / mps))
        for index in range(count):
            await self._wait_until(max(ready[index], self.cycle))
            wanted, received = packets_per, bytearray()
            sequence = self._sequence.get(key, 0)
            at = self.cycle
            if index and profile.retoken_delay_us:
                at = max(at, outcome.end + _cycles(profile.retoken_delay_us * 1e-6))
            await link.send_header(tp_header(protocol.address, ACK, endpoint=endpoint,
                                             direction=DIR_IN, sequence=sequence,
                                             packets=min(profile.max_burst_in, wanted)),
                                   start_at=at)
            outcome.ack_tps += 1
            while True:
                header = await self._device_tp(endpoint, self.cycle + STUCK_CYCLES,
                                               f"IN data on endpoint {endpoint}")
                if header.type == HeaderPacketType.TRANSACTION:
                    kind = header.field(1, 0, 4)
                    if kind == STALL:
                        raise DeviceStall(f"IN endpoint {endpoint} stalled")
                    if kind == NRDY:
                        outcome.nrdys += 1
                    if kind == ERDY:  # token again, same sequence
                        await link.send_header(tp_header(
                            protocol.address, ACK, endpoint=endpoint, direction=DIR_IN,
                            sequence=sequence, packets=min(profile.max_burst_in, wanted)),
                            start_at=self.cycle + self.turnaround)
                        outcome.ack_tps += 1
                    continue
                if header.field(1, 0, 5) != sequence or header.payload is None:
                    # Out of order or a bad payload: ask again for this one (Rty).
                    outcome.retries += 1
                    await link.send_header(tp_header(
                        protocol.address, ACK, endpoint=endpoint, direction=DIR_IN,
                        sequence=sequence, packets=min(profile.max_burst_in, wanted),
                        retry=True), start_at=header.end + self.turnaround)
                    outcome.ack_tps += 1
                    continue
                payload = header.payload
                received += payload
                outcome.packets += 1
                wanted -= 1
                sequence = (sequence + 1) % SEQUENCE_MODULO
                done = wanted == 0 or len(payload) < mps
                await link.send_header(tp_header(
                    protocol.address, ACK, endpoint=endpoint, direction=DIR_IN,
                    sequence=sequence, packets=0 if done else min(profile.max_burst_in, wanted)),
                    start_at=header.end + self.turnaround)
                outcome.ack_tps += 1
                if done:
                    outcome.end = header.end
                    break
            self._sequence[key] = sequence
            outcome.bytes += len(received)
            outcome.transfers += 1
            outcome.short_transfers += len(received) < length
            if sink is not None:
                sink(bytes(received))
            self._completed(ready, count, outcome.end)
        return outcome

    async def _wait_until(self, cycle: int) -> None:
        while self.cycle < cycle:
            await self._itp_if_due()
            await self.protocol.link.partner.wait_until(min(cycle, self._next_itp))

    async def _stream_out(self, endpoint: int, length: int, count: int, queue_depth: int,
                          source: Callable[[int], bytes] | None) -> StreamOutcome:
        link, protocol, profile = self.protocol.link, self.protocol, self.profile
        mps = self.max_packet_size
        key = (endpoint, DIR_OUT)
        start = self.cycle
        outcome = StreamOutcome("out", 0, 0, 0, start, start)
        ready = self._ready_times(count, queue_depth, start)
        for index in range(count):
            await self._wait_until(max(ready[index], self.cycle))
            data = source(length) if source is not None else bytes(length)
            chunks = [data[i:i + mps] for i in range(0, len(data), mps)] or [b""]
            base = self._sequence.get(key, 0)
            acked, sent, granted, rewound_at = 0, 0, profile.max_burst_out, -1
            at = self.cycle
            if index and profile.retoken_delay_us:
                at = max(at, outcome.end + _cycles(profile.retoken_delay_us * 1e-6))
            while acked < len(chunks):
                while sent < len(chunks) and sent - acked < min(granted, profile.max_burst_out):
                    wire_index = outcome.packets + sent - acked
                    await link.send_header(data_header(
                        protocol.address, endpoint=endpoint, direction=DIR_OUT,
                        sequence=(base + sent) % SEQUENCE_MODULO, length=len(chunks[sent]),
                        packets_pending=sent + 1 < len(chunks)), chunks[sent], start_at=at,
                        corrupt_crc32=wire_index in self.corrupt_out)
                    self.corrupt_out.discard(wire_index)
                    sent += 1
                header = await self._device_tp(endpoint, self.cycle + STUCK_CYCLES,
                                               f"ACK on OUT endpoint {endpoint}")
                if header.type != HeaderPacketType.TRANSACTION:
                    continue
                kind = header.field(1, 0, 4)
                if kind == STALL:
                    raise DeviceStall(f"OUT endpoint {endpoint} stalled")
                if kind == NRDY:
                    outcome.nrdys += 1
                    granted = 0
                    continue
                next_sequence = header.field(1, 21, 5)
                granted = header.field(1, 16, 5)
                newly = (next_sequence - base - acked) % SEQUENCE_MODULO
                if kind == ACK:
                    outcome.ack_tps += 1
                    acked += min(newly, sent - acked)
                    retry = bool(header.field(1, 6, 1))
                    if retry and rewound_at != acked:  # Rty: resend from next_sequence
                        outcome.retries += sent - acked
                        sent, rewound_at = acked, acked
                    elif not retry:
                        # The device answers every packet sent before the rewind with the same
                        # Rty ACK; only the first rewinds, until it acknowledges progress.
                        rewound_at = -1
                elif kind == ERDY:
                    sent = acked  # the packets it answered NRDY are sent again
                at = header.end + self.turnaround
                outcome.end = header.end
            outcome.packets += len(chunks)
            self._sequence[key] = (base + len(chunks)) % SEQUENCE_MODULO
            outcome.bytes += len(data)
            outcome.transfers += 1
            outcome.short_transfers += len(data) % mps != 0
            self._completed(ready, count, outcome.end)
        return outcome
