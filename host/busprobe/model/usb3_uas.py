"""USB Attached SCSI with bulk streams at SuperSpeed, per host profile: stepped command by
command by the rules of the simulated xHCI (``sim/usb3/controller.py``, ``host_streams.py``).

UAS moves each command over three pipes at once (UAS-2, UASP §4.4 with streams): the driver
submits the command's status transfer (the status pipe, stream = tag), its data transfer (the
data pipe of its direction, same stream) and the COMMAND IU (the command pipe, no streams); the
device selects the streams; the command is done when both its data and its SENSE IU are in
(Linux's ``uas_try_complete``, busprobe's :class:`~busprobe.backends.usb.uas.UasRun`), and the
next command goes then, ``queue_depth`` outstanding. What decides the figure is not one transfer
time (:mod:`.usb3_run`) but the chain of handshakes between those pipes, so each command is
stepped through them, in PIPE cycles (125 MHz, 4 symbols a cycle on each lane):

* each pipe's *mover* is the controller's: one transfer of an endpoint at a time, ``retoken``
  after the endpoint's previous transfer ended (none before an endpoint's first of a run); a
  stream endpoint's turn starts by priming every transfer queued before it and not primed yet,
  in order on the downstream lane (IN: an ACK TP with Packets Pending, 20 B; OUT: the
  transfer's first data packet, which the device drops, so the host resends it), then waits
  for the device's ERDY (a host that primes each pipe once with the Prime Stream ID,
  ``pipe_primes``, sends no prime after the run's first turn: the device selects from then on);
  a transfer submitted while the mover waits is primed at once (the
  simulation's doorbell, ``DOORBELL_CYCLES``, primes it within 1 µs: a bound takes 0); the
  host answers the ERDY ``turnaround`` later (Start Stream: the ACK TP, or the first data
  packet again) and the transfer moves as on an endpoint without streams
  (:func:`.usb3_run.transfer_seconds`: IN from that ACK TP to the last data packet, OUT from
  the first data packet to the device's last ACK TP); the status transfer is an ACK TP, the
  device's answer and the 16-byte SENSE IU;
* the command pipe: the 32-byte COMMAND IU in one data packet, the device's ACK TP for it;
* the host's packets share its lane in the order it queues them: a command's primes and its
  COMMAND IU go in the driver's order (status, data, command: Linux's ``uas_submit_urbs``, and
  the simulated xHCI starts its movers in submission order), each behind a packet already on
  the lane (a write's IU behind its data stream's prime, a whole packet), the next command's
  behind the host's ACK of the last SENSE IU; the host answers a header packet after its LGOOD
  (and its LCRD, unless it returns credits later) at the least;
* completion ``completion`` after a transfer's end, the next command ``resubmit`` after the
  completion that ends the one before it;
* the device answers with the measured times of busprobe's gateware (a DP's ACK 12 cycles
  after it, a data packet 20 after the ACK TP asking for it, an NRDY no sooner than an ACK) and
  is otherwise never the bottleneck (:data:`IDEAL_DEVICE`): a command's data are there as soon
  as its IU is in (a read's SENSE once they start to move), an OUT command's data taken at
  once; what the protocol orders stays: an ERDY only after the device has answered the
  stream's prime with NRDY, a stream only after the one before it on that pipe has ended (on
  IN: the host has ACKed its last packet), the streams in the order the commands came, an OUT
  command's SENSE only after its last data packet, the SENSE IU and the data-in packets on one
  upstream lane.

Every duration is a lower bound of the simulated one (a packet's own bytes at 500 MB/s, no SKP
or ITP outside the data transfers, the device's link commands left out but for the one case
below; packets of different pipes wait for each other on a lane only as above and for the
SENSE within the data-in packets), so no simulated run ends before the stepped one.
:data:`BUSPROBE_DEVICE` adds what busprobe's UAS engine takes beyond an ideal device: its
decode; a read's first packet filled at 4 bytes a cycle before it goes (the ERDY goes with its
first beat, so the host's answer overlaps the fill); and what its link shows, read off the
simulation's link trace (``BUSPROBE_LINK_TRACE``): the idle cycle after each TP the host
sends it, the status stream's ERDY on the upstream lane ahead of the data packet filled
beside it (or between two data packets), the LGOOD and LCRD of the status stream's ACK TP
ahead of a SENSE IU that follows a data-in train, its ERDY for a read's next stream some
cycles after the host's ACK of the last one's last packet, and its answers a few cycles slower
than the two-endpoint design's. The ceiling is the ideal device's, and that figure says how far the
device itself keeps the run below it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..protocol import uas
from ..protocol.names import Direction
from .usb3 import (
    DEVICE_RESPONSE_CYCLES,
    DP_OVERHEAD,
    DPH_BYTES,
    DPP_OVERHEAD,
    LINK_COMMANDS_PER_TP,
    SS_RATE,
    TP_BYTES,
)
from .usb3_hosts import Usb3HostProfile
from .usb3_run import Usb3Link, transfer_seconds
from .usb3_uas_device import CYCLE, IDEAL_DEVICE, UasDevice

__all__ = ["UasTimes", "uas_run", "uas_period", "UasTiming", "uas_timing", "dp_seconds", "TP",
           "ANSWER_IN", "ANSWER_OUT"]

TP = TP_BYTES / SS_RATE
#: The LGOOD + LCRD that answer a header packet, on the other side's lane; the LGOOD alone
#: (sent at once, where the LCRD may come later).
LGOOD_LCRD = LINK_COMMANDS_PER_TP / SS_RATE
LGOOD = LGOOD_LCRD / 2
#: The device's answers (seconds): a data packet after the ACK TP asking for it; an ACK TP (or
#: NRDY) after the packet it answers.
ANSWER_IN, ANSWER_OUT = (DEVICE_RESPONSE_CYCLES[way] * CYCLE for way in ("in", "out"))


def dp_seconds(payload: int) -> float:
    """Seconds of a data packet with ``payload`` bytes on its lane (header, framing, CRC)."""
    return (DPH_BYTES + DPP_OVERHEAD + 4 * math.ceil(payload / 4)) / SS_RATE


@dataclass(frozen=True)
class UasTimes:
    """A stepped run: when each command was done (seconds from the first submission), and for
    each where its time went (``stages``: seconds from its being ready to each event)."""

    done: list[float]
    stages: list[dict[str, float]]

    @property
    def end(self) -> float:
        return max(self.done)


class _Pipe:
    """The host's mover of one stream endpoint and the device's side of it (see module)."""

    def __init__(self, prime: float, retoken: float, answer: float, nrdy: float, *,
                 pipe: bool = False) -> None:
        self.prime, self.retoken, self.answer, self.nrdy = prime, retoken, answer, nrdy
        #: Primed by pipe (the Prime Stream ID): one prime, the run's first turn's, stands for
        #: every later transfer (the pipe stays primed; the device selects any stream).
        self.pipe = pipe
        self.erdy = -math.inf  # the device's last ERDY on this pipe
        self.primed: dict[int, float] = {}  # transfer -> end of its prime on the lane
        self.queued: dict[int, float] = {}  # transfer -> when its prime was queued
        self.end: list[float] = []

    def turn_start(self, j: int, ready: float) -> float:
        """When turn ``j`` can begin: its transfer ready, the re-token delay after the last."""
        return ready if j == 0 else max(ready, self.end[j - 1] + self.retoken)

    def primes(self, j: int, submitted: list[float], ready: float, last: int,
               ahead: float = -math.inf) -> tuple[float, float]:
        """Turn ``j`` begins (transfer ``j`` moves: the device selects in command order): its
        start, and where the primes it sends first end on the downstream lane, none starting
        before ``ahead`` (the host's packets queued before them). ``submitted`` holds when
        every transfer known so far was submitted (on the host's ring); transfers up to
        ``last`` may be queued."""
        at = self.turn_start(j, ready)
        lane = max(at, ahead)
        if self.pipe and 0 in self.primed:
            for m in range(j, last + 1):
                self.primed.setdefault(m, self.primed[0])
            return at, lane
        if self.pipe:  # the pipe's one prime, for every transfer queued by then
            lane += self.prime
            for m in range(j, last + 1):
                self.primed[m], self.queued[m] = lane, at
            return at, lane
        for m in range(j, last + 1):  # primed at the turn's start, oldest first
            # (the run's first transfers are queued before any mover starts)
            if m not in self.primed and (submitted[m] < at or j == 0):
                lane += self.prime
                self.primed[m], self.queued[m] = lane, at
        if j not in self.primed:  # submitted as the turn started
            lane = max(lane, submitted[j]) + self.prime
            self.primed[j], self.queued[j] = lane, max(at, submitted[j])
        return at, lane

    def select(self, j: int, submitted: list[float], erdy_floor: float, lane: float,
               last: int) -> float:
        """Turn ``j`` goes on from :meth:`primes` (``lane``): the start of its Start Stream
        (the host's answer to the device's ERDY)."""
        # The device answers the prime NRDY first, then ERDY; the host answers that.
        erdy = self.erdy = max(erdy_floor, self.primed[j] + self.nrdy)
        start = max(erdy + TP + self.answer, lane)
        for m in range(j + 1, last + 1):
            # Submitted while the mover waits: primed before the stream starts (in the
            # simulation within 1 µs of its submission, the host's doorbell).
            if m not in self.primed and submitted[m] < start:
                lane = max(lane, submitted[m]) + self.prime
                self.primed[m], self.queued[m] = lane, submitted[m]
                start = max(start, lane)
        return start

    def on_lane(self, at: float, window: range, after: int | None = None,
                since: float = math.inf) -> float:
        """Where the primes of transfers ``window`` queued by ``at`` and still on the lane then
        end (-inf: none is); those of transfers past ``after`` only if queued before ``since``
        (a packet of transfer ``after`` queued then goes ahead of those of the transfers
        submitted with it, which the driver queues after it)."""
        ends = []
        for m in window:
            if m not in self.queued:
                continue
            later = after is not None and m > after
            ahead = self.queued[m] < since if later else self.queued[m] <= at
            if ahead and at < self.primed[m]:
                ends.append(self.primed[m])
        return max(ends, default=-math.inf)


def _behind(at: float, queued: float, end: float) -> float:
    """``end`` if a packet queued at ``queued`` and off the lane at ``end`` is ahead of one
    queued at ``at``, else -inf."""
    return end if queued <= at < end else -math.inf


def _ahead(at: float, packets: list[tuple[float, float]]) -> float:
    """Where the last of ``packets`` (queued, off the lane) ahead of one queued at ``at`` ends
    (-inf: none is)."""
    return max((_behind(at, queued, end) for queued, end in packets), default=-math.inf)


@dataclass(frozen=True)
class UasTiming:
    """A host profile's times for one direction and command length, in seconds
    (``turnaround``: when the host queues an answer to a packet's end, its turnaround less the
    cycle a bound may take off it; ``answer``: when that answer can start, after the host's
    link commands for the packet)."""

    direction: str
    length: int
    mps: int
    link: Usb3Link
    completion: float
    resubmit: float
    retoken: float
    turnaround: float
    answer: float

    def span(self) -> float:
        return transfer_seconds(self.link, self.length, DP_OVERHEAD, DPH_BYTES + DPP_OVERHEAD)


def uas_timing(link: Usb3Link, profile: Usb3HostProfile, length: int) -> UasTiming:
    # The host answers a header packet after its LGOOD (and its LCRD, unless it returns the
    # credit later), which go first on its lane (sim/usb3/link.py).
    commands = LGOOD if profile.credit_return_ns else LGOOD_LCRD
    turnaround = max(profile.turnaround_ns * 1e-9 - CYCLE, 0.0)
    return UasTiming(link.direction, length, link.max_packet_size, link,
                     profile.completion_latency_us * 1e-6, profile.resubmit_latency_us * 1e-6,
                     profile.retoken_delay_us * 1e-6, turnaround, max(turnaround, commands))


def uas_run(link: Usb3Link, profile: Usb3HostProfile, length: int, *, commands: int,
            queue_depth: int, device: UasDevice = IDEAL_DEVICE,
            primed: bool = False, pipe_primes: bool = False) -> UasTimes:
    """``commands`` UAS commands of ``length`` bytes on ``link`` (its direction is the data's),
    ``queue_depth`` outstanding, the first submitted at 0 (see module); ``primed``: the first
    command's streams were primed before; ``pipe_primes``: the host primes each stream pipe
    once with the Prime Stream ID (IN an ACK TP, OUT a zero-length data packet) instead of
    naming each stream, and the device selects from then on (``sim/usb3/host_streams.py``)."""
    if link.direction not in (Direction.IN, Direction.OUT):
        raise ValueError(f"UAS moves data in or out, not {link.direction}")
    if length < 1 or commands < 1 or queue_depth < 1:
        raise ValueError("a UAS run needs commands of at least one byte, queue depth >= 1")
    t = uas_timing(link, profile, length)
    reading = t.direction == Direction.IN
    span, q = t.span(), min(queue_depth, commands)
    first_packet = min(length, t.mps)
    # The host's TPs on its lane; the device's on its own; the device's answers.
    host_tp = TP + device.host_tp_gap * CYCLE
    answer_in = ANSWER_IN + device.answer_in * CYCLE
    answer_out = ANSWER_OUT + device.answer_out * CYCLE
    nrdy_after = answer_out + TP  # a prime's NRDY, its end after the prime's
    out_prime = dp_seconds(0) if pipe_primes else dp_seconds(first_packet)
    data = _Pipe(host_tp if reading else out_prime, t.retoken, t.answer, nrdy_after,
                 pipe=pipe_primes)
    status = _Pipe(host_tp, t.retoken, t.answer, nrdy_after, pipe=pipe_primes)
    sense_packet = dp_seconds(uas.SENSE_HEADER_SIZE)
    # A data-in train's time from its Start Stream to its last packet, less the first packet's
    # wait (the device's answer to that ACK TP, or its fill).
    train_span = span - TP - ANSWER_IN
    if primed:
        data.primed[0] = status.primed[0] = -math.inf
    submitted = [0.0] * q
    done: list[float] = []
    command_end = -math.inf  # the command pipe's last ACK
    # The host's ACKs of the last command's last packets in (its SENSE IU, a read's last data
    # packet): (queued as the packet came, off the host's lane).
    acks: list[tuple[float, float]] = []
    sense_acked = -math.inf
    stages: list[dict[str, float]] = []
    for j in range(commands):
        ready = submitted[j]
        last = min(commands, j + q) - 1  # the transfers the host may have queued by now
        # The host's packets go on its lane in the order it queues them, each behind those
        # queued before it: the ACK of the last SENSE IU (queued as it came, before the status
        # pipe's next turn), then the driver's order (status, data, command).
        window = range(max(0, j - q), last + 1)
        # (the status pipe's next turn comes after its mover queued the SENSE IU's ACK)
        s_at = status.turn_start(j, ready)
        s_at, s_lane = status.primes(j, submitted, ready, last,
                                     ahead=max(_ahead(s_at, acks), sense_acked))
        d_at = data.turn_start(j, ready)
        d_at, d_lane = data.primes(j, submitted, ready, last,
                                   ahead=max(_ahead(d_at, acks), status.on_lane(d_at, window)))
        # The command pipe: the IU's data packet, the device's ACK TP.
        at = ready if j == 0 else max(ready, command_end + t.retoken)
        # (a command's IU goes behind its own primes, not those of the commands submitted
        # with it after it: the simulated xHCI's lane at a run's start is the first command's
        # status prime, data prime and IU, then the next's primes)
        queued = at
        while (behind := max(_ahead(at, acks),
                             status.on_lane(at, window, after=j, since=queued),
                             data.on_lane(at, window, after=j, since=queued))) > at:
            at = behind
        # The host's link commands for the device's NRDY to the status prime go on its lane at
        # the first packet boundary after it came, ahead of the IU if it came before the IU
        # started (a write's: during its data prime, a whole packet).
        nrdy = status.primed.get(j, -math.inf) + status.nrdy
        if nrdy < at and not (pipe_primes and j > 0):
            at = max(at, max(nrdy, data.primed.get(j, -math.inf)) + LGOOD)
        command_in = at + dp_seconds(uas.COMMAND_SIZE)
        command_end = command_in + answer_out + TP
        known = command_end + device.decode_for(reading, pipe_primes) * CYCLE  # decoded
        previous = data.end[-1] if data.end else -math.inf
        if reading:  # the host ACKed its last packet
            floor = max(known, previous + t.answer + TP + device.next_in * CYCLE)
        else:  # the device ACKed the last packet
            floor = max(known, previous)
        d_start = data.select(j, submitted, floor, d_lane, last)
        status_floor = status.end[-1] + t.answer + TP if status.end else -math.inf
        if reading:
            # The first packet goes once whole (its fill overlaps the host's answer); the
            # SENSE is handed over once its data are (the device starts sending them), and
            # its stream's ERDY goes on the upstream lane then.
            train = max(d_start + TP + answer_in, known + device.fill(first_packet)
                        + device.send * CYCLE)
            sense_ready = known + device.fill(length) + device.sense_after * CYCLE
            s_start = status.select(j, submitted, max(sense_ready, d_start, status_floor),
                                    s_lane, last)
            if status.erdy <= train < status.erdy + TP:
                train = status.erdy + TP  # the ERDY went first
            d_end = train + train_span
            if train < status.erdy < d_end and length > t.mps and not link.latency_bound:
                d_end += TP  # between two data packets sent back to back
            sense = s_start + TP + answer_in  # the SENSE IU's packet starts
        else:
            d_end = d_start + span + device.last_ack(pipe_primes) * CYCLE
            # The status stream is selected once the last data packet starts on the lane
            # (the host's answer goes behind that packet); the SENSE follows its ACK.
            last_end = d_end - device.last_ack(pipe_primes) * CYCLE - link.tail
            last_start = last_end - dp_seconds(length - (math.ceil(length / t.mps) - 1) * t.mps)
            s_start = max(status.select(j, submitted,
                                        max(last_start + device.status_erdy * CYCLE,
                                            status_floor), s_lane, last), last_end)
            sense = max(s_start + TP + answer_in, d_end + device.after_last * CYCLE)
        data.end.append(d_end)
        s_end = sense + sense_packet
        status.end.append(s_end)
        later = max(d_end, s_end)
        if reading and not link.latency_bound and sense < d_end and s_end > train:
            # One upstream lane: the SENSE packet and the data packets after the first; a
            # device that sends link commands first sends the LGOOD and LCRD for the status
            # stream's ACK TP, which came during the train, before it.
            if device.commands_first and sense > train:
                later = max(later, d_end + LGOOD_LCRD + sense_packet)
            later = max(later, min(sense, train) + (d_end - train) + sense_packet)
        done.append(later + t.completion)
        acks = []  # (a read's last data packet ends at ``later``)
        for end in sorted((later, s_end) if reading else (s_end,)):
            off = end + t.answer + host_tp
            acks.append((end + t.turnaround, max(off, acks[-1][1] + host_tp) if acks else off))
            if end == s_end:
                sense_acked = acks[-1][1]
        if j + q < commands:
            # (on the host's rings ``resubmit`` after the completion it answers: a prime
            # before that, as this once had it, clogged a write's data pipe for nothing)
            submitted.append(max(done[-1] + t.resubmit, submitted[-1]))
        stages.append({"command IU in": command_in - ready, "data turn": d_at - ready,
                       "data stream": d_start - ready, "data end": d_end - ready,
                       "status turn": s_at - ready, "SENSE end": s_end - ready,
                       "done": done[-1] - ready})
    return UasTimes(done, stages)


_PERIODS: dict[tuple[object, ...], float] = {}


def uas_period(link: Usb3Link, profile: Usb3HostProfile, length: int, *, queue_depth: int,
               device: UasDevice = IDEAL_DEVICE, pipe_primes: bool = False) -> float:
    """Seconds per command of the stepped schedule in steady state: a run long enough for its
    start-up to pass, whole rounds of the queue from its middle to where its last
    ``queue_depth`` commands (which no later one follows) begin (kept per arguments: a sweep
    asks more than once)."""
    key = (link, repr(profile), length, queue_depth, device, pipe_primes)
    if key not in _PERIODS:
        if len(_PERIODS) >= 256:
            _PERIODS.clear()
        commands = max(48, 8 * queue_depth)
        times = uas_run(link, profile, length, commands=commands, queue_depth=queue_depth,
                        device=device, pipe_primes=pipe_primes)
        # Whole rounds of the queue: its commands may complete in bursts.
        first = commands // 2
        rounds = (commands - queue_depth - 1 - first) // queue_depth
        last = first + rounds * queue_depth
        _PERIODS[key] = (times.done[last] - times.done[first]) / (last - first)
    return _PERIODS[key]
