"""The simulated xHCI's side of bulk streams (USB 3.2 §8.12.1.4): per-endpoint stream rings,
priming, the device's selection by ERDY, and one stream moving at a time.

An endpoint with streams enabled (:meth:`.controller.SuperSpeedHostController.enable_streams`,
what an xHCI does when the driver allocates them) keeps its submitted transfers in one queue;
the stream ring of Stream ID ``s`` is the transfers whose ``stream_id`` is ``s``, oldest first.
The host side of the protocol, for each turn of the endpoint's mover:

1. *Prime Pipe*: every ring with a transfer waiting (on the ring: its ``ready_at`` has come)
   and not yet primed is primed, in the order its oldest transfer was submitted (and, while
   the host waits in *Idle*, each ring a transfer is submitted on later, within
   :data:`DOORBELL_CYCLES`): IN with an ACK TP asking
   for a packet with Packets Pending and the stream's ID, OUT with the transfer's first data
   packet on the stream. The
   device answers NRDY (it will choose); the host counts the answers it still owes, so an NRDY
   that arrives while a stream moves is not taken for that stream's end.
2. *Idle*: the host waits for the device's ERDY; it names the stream the device selects. An
   ERDY naming a stream the host has not primed (or none) is counted (``stream_errors``) and
   ignored.
3. *Start Stream / Move Data*: the oldest transfer of that ring moves as on an endpoint without
   streams (:meth:`~.controller.SuperSpeedHostController._move_in` / ``_move_out``), every
   packet naming the stream; a second ERDY during it is counted and ignored. The stream ends
   with the transfer, or (IN) an NRDY, after which the device selects it again.

That is a host that primes by naming each stream (a host-initiated selection the device
refuses and makes later). An endpoint can instead prime its *pipe*
(``EndpointStreams.pipe_primes``, ``SimUsb3Platform.prime_pipes``)
with the Stream ID USB 3.2 §8.12.1.4 reserves for it (Prime, 0xFFFE: what device controllers
report as a "prime" event, Linux's dwc3 and cdnsp drivers): one prime once a transfer waits on
any ring (IN an ACK TP, OUT a zero-length data packet, naming Prime), after which the device
may select any stream. An ERDY selecting a stream with no transfer waiting is refused with
NoStream (0xFFFF: IN an ACK TP asking for nothing, OUT a zero-length data packet; counted in
``nostreams``), and the pipe is primed again only when the driver submits another transfer
(so a device that selects the same stream again does not ping-pong with the host). The
sweep's ``sim:usb3?primes=pipe`` asks for it, and the UAS model's ceiling
(``model/usb3_uas.py``) then steps one prime a pipe.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from busprobe.protocol.streams import NOSTREAM_STREAM_ID, PRIME_STREAM_ID, StreamState
from usb_protocol.types.superspeed import HeaderPacketType, TransactionPacketSubtype

from ..transfer_engine import Pending
from .framing import HeaderPacket
from .protocol import DIR_IN, DIR_OUT, DeviceTimeout, data_header, tp_header

#: ``host`` below is the :class:`~.controller.SuperSpeedHostController` whose mover calls in
#: (typed Any: the controller imports this module).
Host = Any

__all__ = ["EndpointStreams", "move_on_streams"]

#: How often an idle stream endpoint looks for transfers submitted on streams not primed: 1 µs.
DOORBELL_CYCLES = 125

ACK, NRDY, ERDY = (TransactionPacketSubtype.ACK, TransactionPacketSubtype.NRDY,
                   TransactionPacketSubtype.ERDY)


@dataclass
class EndpointStreams:
    """The host's stream state of one bulk endpoint.

    Attributes
    ----------
    max_streams : int
        Stream IDs 1..max_streams were allocated.
    state : StreamState
    primed : list of int
        Streams primed and not selected yet, in priming order.
    current : int
        The stream selected last (0: none yet).
    selected : list of int
        Every stream the device selected, in order (what the tests read).
    unanswered : int
        Primes sent whose NRDY has not come yet: the next NRDYs answer them (an NRDY names no
        stream), not the stream moving.
    pipe_primes : bool
        Prime the pipe (the Prime Stream ID) and refuse a selection with no transfer waiting
        (NoStream), rather than name each stream.
    pipe_primed : bool
        With ``pipe_primes``: the pipe is primed (until a refusal).
    refused_at : int or None
        The cycle of the last refusal: only a transfer on the rings after it primes again.
    """

    max_streams: int
    state: StreamState = StreamState.PRIME_PIPE
    primed: list[int] = field(default_factory=list)
    current: int = 0
    selected: list[int] = field(default_factory=list)
    unanswered: int = 0
    pipe_primes: bool = False
    pipe_primed: bool = False
    refused_at: int | None = None

    def answers_a_prime(self) -> bool:
        """An NRDY came: True if it answers a prime (and is taken as that)."""
        if self.unanswered:
            self.unanswered -= 1
            return True
        return False


def _stream_of(header) -> int:
    return header.dws[2] & 0xFFFF


async def _out_packet(host: Host, address: int, stream_id: int, payload: bytes = b"", *,
                      packets_pending: bool = False) -> None:
    """A data packet on OUT endpoint ``address`` naming ``stream_id``, at the endpoint's next
    sequence number: a stream's prime (its transfer's first packet), or zero-length the pipe's
    prime or the refusal of a selection."""
    protocol = host.protocol
    await protocol.link.send_header(data_header(
        protocol.address, endpoint=address & 0x7F, direction=DIR_OUT,
        sequence=host._sequence.get(address, 0), length=len(payload),
        packets_pending=packets_pending, stream_id=stream_id), payload)


async def _in_ack(host: Host, address: int, stream_id: int, *, packets: int,
                  packets_pending: bool = False) -> None:
    """An ACK TP on IN endpoint ``address`` naming ``stream_id``, asking for ``packets`` from
    the endpoint's next sequence number: a stream's or the pipe's prime, or a refusal."""
    protocol = host.protocol
    await protocol.link.send_header(tp_header(
        protocol.address, ACK, endpoint=address & 0x7F, direction=DIR_IN,
        sequence=host._sequence.get(address, 0), packets=packets,
        packets_pending=packets_pending, stream_id=stream_id))
    host.counters["ack_tps"] += 1


async def _prime(host: Host, address: int, pending: Pending, *, pipe: bool = False) -> None:
    """Prime the stream of ``pending`` (IN: an ACK TP with Packets Pending; OUT: its first
    data packet, which the device drops and answers NRDY), or with ``pipe`` the pipe (IN the
    same ACK TP naming the Prime Stream ID, OUT a zero-length data packet naming it)."""
    stream_id = PRIME_STREAM_ID if pipe else pending.transfer.stream_id
    if pending.transfer.incoming:
        await _in_ack(host, address, stream_id, packets=1, packets_pending=True)
    elif pipe:
        await _out_packet(host, address, stream_id, packets_pending=True)
    else:
        data = pending.transfer.data or bytes(pending.transfer.length)
        first = data[:host.max_packet_size]
        await _out_packet(host, address, stream_id, first,
                          packets_pending=len(data) > len(first))


async def _refuse(host: Host, address: int) -> None:
    """NoStream: the host has no transfer on the stream the device selected (IN: an ACK TP
    asking for nothing; OUT: a zero-length data packet, which the device does not answer),
    both naming NoStream."""
    if address & 0x80:
        await _in_ack(host, address, NOSTREAM_STREAM_ID, packets=0)
    else:
        await _out_packet(host, address, NOSTREAM_STREAM_ID)
    host.counters["nostreams"] += 1
    streams = host.streams[address]
    streams.pipe_primed, streams.refused_at = False, host.cycle
    streams.state = StreamState.PRIME_PIPE


async def _prime_rings(host: Host, address: int, queue: deque[Pending],
                       ready_by: int | None = None) -> bool:
    """Prime every ring with a transfer waiting (submitted by ``ready_by``, if given) that is
    not primed yet, or the pipe (``pipe_primes``); True if any was."""
    streams, primed = host.streams[address], False
    if streams.pipe_primes:
        if streams.pipe_primed:
            return False
        for pending in list(queue):
            waiting = ready_by is None or pending.ready_at <= ready_by
            if waiting and (streams.refused_at is None or pending.ready_at > streams.refused_at):
                await _prime(host, address, pending, pipe=True)
                streams.unanswered += 1
                streams.pipe_primed, streams.state = True, StreamState.IDLE
                return True
        return False
    for pending in list(queue):
        stream_id = pending.transfer.stream_id
        if stream_id not in streams.primed and (ready_by is None or pending.ready_at <= ready_by):
            await _prime(host, address, pending)
            streams.primed.append(stream_id)
            streams.unanswered += 1
            streams.state = StreamState.IDLE
            primed = True
    return primed


async def _selection(host: Host, address: int, queue: deque[Pending],
                     stuck_cycles: int) -> HeaderPacket:
    """The device's next transaction packet or data packet for the endpoint while it is idle
    (its ERDY, an NRDY answering a prime). A transfer submitted meanwhile on a stream not
    primed is primed within :data:`DOORBELL_CYCLES` of its submission (an xHCI primes when the
    driver rings the stream's doorbell; the mover first did so only at its next turn, so a
    READ's data transfer queued after later commands' never reached the device, which waits
    for it before their data); ``stuck_cycles`` without an answer after the last prime, and
    without a data packet moving on any of the device's endpoints, fails (a READ's status
    stream waits for all its data: one of 8 MiB takes over 10 ms, and failed)."""
    endpoint = address & 0x7F
    what = f"ERDY selecting a stream on endpoint {endpoint}"
    deadline, moved = host.cycle + stuck_cycles, host.counters["packets"]
    while True:
        try:
            return await host._device_tp(endpoint, min(deadline, host.cycle + DOORBELL_CYCLES),
                                         what)
        except DeviceTimeout:
            if host.cycle >= deadline:
                if host.counters["packets"] == moved:
                    raise DeviceTimeout(f"no {what} within {stuck_cycles} cycles") from None
                # busy on another endpoint, not stuck
                deadline, moved = host.cycle + stuck_cycles, host.counters["packets"]
        if await _prime_rings(host, address, queue, ready_by=host.cycle):
            deadline = host.cycle + stuck_cycles


async def move_on_streams(host: Host, address: int, at: int, stuck_cycles: int
                          ) -> tuple[Pending, int, int, bool]:
    """One turn of a stream endpoint's mover: prime, take the device's selection, move that
    stream's oldest transfer until it is done. Returns the transfer, the end of its last
    handshake, the bytes moved and whether the endpoint stalled; no answer for
    ``stuck_cycles`` fails it."""
    streams, queue = host.streams[address], host.queues[address]
    await host._wait_until(at)
    while True:
        # Only transfers on the rings by now: one the driver submitted is there its
        # resubmit latency later (primed before that, every queued write's prime, a whole
        # data packet each, went ahead of the stream the device had already selected).
        await _prime_rings(host, address, queue, ready_by=host.cycle)
        header = await _selection(host, address, queue, stuck_cycles)
        if header.type != HeaderPacketType.TRANSACTION:
            host.counters["stream_errors"] += 1  # data outside Move Data
            continue
        kind = header.field(1, 0, 4)
        if kind == NRDY:
            host.counters["nrdys"] += 1
            streams.answers_a_prime()
            continue
        if kind != ERDY:
            continue
        selected = _stream_of(header)
        if streams.pipe_primes:
            if not streams.pipe_primed:
                host.counters["stream_errors"] += 1
                continue
            if not any(p.transfer.stream_id == selected and p.ready_at <= host.cycle
                       for p in queue):
                await _refuse(host, address)
                continue
        elif selected not in streams.primed:
            host.counters["stream_errors"] += 1
            continue
        else:
            streams.primed.remove(selected)
        streams.current, streams.state = selected, StreamState.START_STREAM
        streams.selected.append(selected)
        pending = next(p for p in queue if p.transfer.stream_id == selected)
        start = header.end + host.turnaround
        if pending.transfer.incoming:
            end, actual, stalled, done = await host._move_in(pending, start, selected)
        else:
            end, actual, stalled, done = await host._move_out(
                pending, start, selected, granted=header.field(1, 16, 5))
        streams.state = StreamState.IDLE if streams.pipe_primed else StreamState.PRIME_PIPE
        if done:
            return pending, end, actual, stalled
        if not streams.pipe_primes:
            streams.primed.insert(0, selected)  # ended early: the device resumes it first
