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
  for the device's ERDY; a transfer submitted while the mover waits is primed at once (the
  simulation's doorbell, ``DOORBELL_CYCLES``, primes it within 1 µs: a bound takes 0); the
  host answers the ERDY ``turnaround`` later (Start Stream: the ACK TP, or the first data
  packet again) and the transfer moves as on an endpoint without streams
  (:func:`.usb3_run.transfer_seconds`: IN from that ACK TP to the last data packet, OUT from
  the first data packet to the device's last ACK TP); the status transfer is an ACK TP, the
  device's answer and the 16-byte SENSE IU;
* the command pipe: the 32-byte COMMAND IU in one data packet, the device's ACK TP for it;
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

Every duration is a lower bound of the simulated one (a packet's own bytes at 500 MB/s, no link
commands, SKP or ITP outside the data transfers; packets of different pipes never wait for each
other on a lane, but for the SENSE within the data-in packets), so no simulated run ends before
the stepped one. :data:`BUSPROBE_DEVICE` adds what busprobe's UAS engine takes beyond an ideal
device (its decode, and a read's first packet filled at 4 bytes a cycle before it goes: the
ERDY goes with its first beat, so the host's answer overlaps the fill); the ceiling is the ideal
device's, and that figure says how far the device itself keeps the run below it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..protocol import uas
from ..protocol.names import Direction
from ..transport import BusDescription
from .ceiling_type import Ceiling
from .usb3 import (
    DEVICE_RESPONSE_CYCLES,
    DP_OVERHEAD,
    DPH_BYTES,
    DPP_OVERHEAD,
    PIPE_CLOCK_HZ,
    SS_RATE,
    TP_BYTES,
    usb3_link,
)
from .usb3_hosts import Usb3HostProfile, load_usb3_profile
from .usb3_run import Usb3Link, transfer_seconds

__all__ = ["UasDevice", "IDEAL_DEVICE", "BUSPROBE_DEVICE", "UasTimes", "UasBound", "uas_run",
           "uas_period", "uas_bound", "uas_ceiling"]

CYCLE = 1 / PIPE_CLOCK_HZ
TP = TP_BYTES / SS_RATE
#: The device's answers (seconds): a data packet after the ACK TP asking for it; an ACK TP (or
#: NRDY) after the packet it answers.
ANSWER_IN, ANSWER_OUT = (DEVICE_RESPONSE_CYCLES[way] * CYCLE for way in ("in", "out"))


def _dp(payload: int) -> float:
    """Seconds of a data packet with ``payload`` bytes on its lane (header, framing, CRC)."""
    return (DPH_BYTES + DPP_OVERHEAD + 4 * math.ceil(payload / 4)) / SS_RATE


@dataclass(frozen=True)
class UasDevice:
    """What a device takes beyond the protocol's answers, in PIPE cycles: ``decode`` from the
    COMMAND IU's ACK to its first data beat (a read's ERDY goes with it); ``bytes_per_cycle``
    (0: at once) the rate at which a data-in packet is filled (its first packet is sent once
    whole); a write's SENSE ``after_last`` cycles after its last data packet's ACK."""

    name: str
    decode: int = 0
    bytes_per_cycle: int = 0
    after_last: int = 0

    def fill(self, length: int) -> float:
        """Seconds to fill ``length`` bytes."""
        return length / self.bytes_per_cycle * CYCLE if self.bytes_per_cycle else 0.0


#: Never the bottleneck: the ceiling's device.
IDEAL_DEVICE = UasDevice("ideal")
#: busprobe's ``usb3-storage`` (``gateware/common/uas_engine.py``, a word a cycle): the IU's
#: decode ~22 cycles after its ACK, then the first beat in the data-in ring and the ERDY with it
#: (``BurstInEndpoint``'s tagged announcement), the packet whole 256 cycles later; a write's
#: SENSE at its last data packet's ACK (the check reads that packet beside it); each taken a
#: few cycles short, as a bound.
BUSPROBE_DEVICE = UasDevice("busprobe usb3-storage", decode=20, bytes_per_cycle=4, after_last=4)


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

    def __init__(self, prime: float, retoken: float, answer: float) -> None:
        self.prime, self.retoken, self.answer = prime, retoken, answer
        self.primed: dict[int, float] = {}  # transfer -> end of its prime on the lane
        self.end: list[float] = []

    def turn(self, j: int, submitted: list[float], ready: float, erdy_floor: float,
             last: int) -> tuple[float, float]:
        """Turn ``j`` (transfer ``j`` moves: the device selects in command order): its start
        and the start of its Start Stream (the host's answer to the ERDY). ``submitted`` holds
        the submission of every transfer known so far; transfers up to ``last`` may be queued."""
        at = ready if j == 0 else max(ready, self.end[j - 1] + self.retoken)
        lane = at  # where the pipe's own packets on the downstream lane end
        for m in range(j, last + 1):  # primed at the turn's start, oldest first
            # (the run's first transfers are queued before any mover starts)
            if m not in self.primed and (submitted[m] < at or j == 0):
                lane += self.prime
                self.primed[m] = lane
        if j not in self.primed:  # submitted as the turn started
            lane = max(lane, submitted[j]) + self.prime
            self.primed[j] = lane
        # The device answers the prime NRDY first, then ERDY; the host answers that.
        erdy = max(erdy_floor, self.primed[j] + ANSWER_OUT + TP)
        start = max(erdy + TP + self.answer, lane)
        for m in range(j + 1, last + 1):
            # Submitted while the mover waits: primed before the stream starts (in the
            # simulation within 1 µs of its submission, the host's doorbell).
            if m not in self.primed and submitted[m] < start:
                lane = max(lane, submitted[m]) + self.prime
                self.primed[m] = lane
                start = max(start, lane)
        return at, start


@dataclass(frozen=True)
class _Timing:
    direction: str
    length: int
    mps: int
    link: Usb3Link
    completion: float
    resubmit: float
    retoken: float
    answer: float  # the host's turnaround, less the cycle a bound may take off it

    def span(self) -> float:
        return transfer_seconds(self.link, self.length, DP_OVERHEAD, DPH_BYTES + DPP_OVERHEAD)


def _timing(link: Usb3Link, profile: Usb3HostProfile, length: int) -> _Timing:
    return _Timing(link.direction, length, link.max_packet_size, link,
                   profile.completion_latency_us * 1e-6, profile.resubmit_latency_us * 1e-6,
                   profile.retoken_delay_us * 1e-6,
                   max(profile.turnaround_ns * 1e-9 - CYCLE, 0.0))


def uas_run(link: Usb3Link, profile: Usb3HostProfile, length: int, *, commands: int,
            queue_depth: int, device: UasDevice = IDEAL_DEVICE,
            primed: bool = False) -> UasTimes:
    """``commands`` UAS commands of ``length`` bytes on ``link`` (its direction is the data's),
    ``queue_depth`` outstanding, the first submitted at 0 (see module); ``primed``: the first
    command's streams were primed before."""
    if link.direction not in (Direction.IN, Direction.OUT):
        raise ValueError(f"UAS moves data in or out, not {link.direction}")
    if length < 1 or commands < 1 or queue_depth < 1:
        raise ValueError("a UAS run needs commands of at least one byte, queue depth >= 1")
    t = _timing(link, profile, length)
    reading = t.direction == Direction.IN
    span, q = t.span(), min(queue_depth, commands)
    first_packet = min(length, t.mps)
    data = _Pipe(TP if reading else _dp(first_packet), t.retoken, t.answer)
    status = _Pipe(TP, t.retoken, t.answer)
    if primed:
        data.primed[0] = status.primed[0] = -math.inf
    submitted = [0.0] * q
    done: list[float] = []
    command_end = -math.inf  # the command pipe's last ACK
    stages: list[dict[str, float]] = []
    for j in range(commands):
        ready = submitted[j] + (t.resubmit if j >= q else 0.0)
        last = min(commands, j + q) - 1  # the transfers the host may have queued by now
        # The command pipe: the IU's data packet, the device's ACK TP.
        at = ready if j == 0 else max(ready, command_end + t.retoken)
        command_in = at + _dp(uas.COMMAND_SIZE)
        command_end = command_in + ANSWER_OUT + TP
        known = command_end + device.decode * CYCLE  # the device has decoded it
        previous = data.end[-1] if data.end else -math.inf
        if reading:
            floor = max(known, previous + t.answer + TP)  # the host ACKed its last packet
        else:
            floor = known
        d_at, d_start = data.turn(j, submitted, ready, floor, last)
        if reading:  # the first packet goes once whole
            d_start = max(d_start, known + device.fill(first_packet))
        d_end = d_start + span
        data.end.append(d_end)
        if reading:  # handed over once its data are (the device starts sending them)
            sense_ready = max(known + device.fill(length), d_start)
        else:
            sense_ready = d_end + device.after_last * CYCLE
        s_floor = max(sense_ready, status.end[-1] + t.answer + TP if status.end else -math.inf)
        s_at, s_start = status.turn(j, submitted, ready, s_floor, last)
        sense = s_start + TP + ANSWER_IN  # the SENSE IU's packet starts
        s_end = sense + _dp(uas.SENSE_HEADER_SIZE)
        status.end.append(s_end)
        later = max(d_end, s_end)
        if reading and not link.latency_bound:
            # One upstream lane: the SENSE packet and the data packets after the first.
            train = d_start + TP + ANSWER_IN
            if sense < d_end and s_end > train:
                later = max(later, min(sense, train) + (d_end - train)
                            + _dp(uas.SENSE_HEADER_SIZE))
        done.append(later + t.completion)
        if j + q < commands:
            submitted.append(max(done[-1], submitted[-1]))
        stages.append({"command IU in": command_in - ready, "data turn": d_at - ready,
                       "data stream": d_start - ready, "data end": d_end - ready,
                       "status turn": s_at - ready, "SENSE end": s_end - ready,
                       "done": done[-1] - ready})
    return UasTimes(done, stages)


_PERIODS: dict[tuple[object, ...], float] = {}


def uas_period(link: Usb3Link, profile: Usb3HostProfile, length: int, *, queue_depth: int,
               device: UasDevice = IDEAL_DEVICE) -> float:
    """Seconds per command of the stepped schedule in steady state: a run long enough for its
    start-up to pass, whole rounds of the queue from its middle to where its last
    ``queue_depth`` commands (which no later one follows) begin (kept per arguments: a sweep
    asks more than once)."""
    key = (link, repr(profile), length, queue_depth, device)
    if key not in _PERIODS:
        if len(_PERIODS) >= 256:
            _PERIODS.clear()
        commands = max(48, 8 * queue_depth)
        times = uas_run(link, profile, length, commands=commands, queue_depth=queue_depth,
                        device=device)
        # Whole rounds of the queue: its commands may complete in bursts.
        first = commands // 2
        rounds = (commands - queue_depth - 1 - first) // queue_depth
        last = first + rounds * queue_depth
        _PERIODS[key] = (times.done[last] - times.done[first]) / (last - first)
    return _PERIODS[key]


@dataclass(frozen=True)
class UasBound:
    """The least time a run (or, in steady state, a command) can take, and what sets it:
    ``data`` (the data pipe's transfers, re-token delays and primes in a row), ``status`` (the
    status pipe's likewise) or ``driver`` (each command's own chain and the driver's
    turnaround, ``queue_depth`` of them in flight)."""

    seconds: float
    terms: dict[str, float]

    @property
    def binding(self) -> str:
        return max(self.terms, key=self.terms.__getitem__)


def uas_bound(link: Usb3Link, profile: Usb3HostProfile, length: int, *, queue_depth: int,
              commands: int | None = None, device: UasDevice = IDEAL_DEVICE) -> UasBound:
    """A lower bound of a run of ``commands`` commands (``None``: of one command's period in
    steady state) that holds whatever the phases of the pipes against each other.

    The stepped schedule (:func:`uas_run`) puts each prime where a command's submission falls
    against a pipe's turns, so a slower device may shift the phases to a better schedule
    (behind ``small-burst``, whose completions come in bursts, the simulated disk read 2.3 %
    above the ideal device's stepped schedule at 1 KiB × QD 8 OUT). So the ceiling is this: the
    first ``queue_depth`` commands stepped (submitted together, nothing to phase); then each
    pipe moves every transfer after its re-token delay and primes every later one (the data
    pipe's prime is a whole data packet on OUT); and each command's successor follows it by
    the driver's turnaround and the least a command takes (stepped alone, its streams primed
    before it when others are in flight)."""
    t = _timing(link, profile, length)
    q = min(queue_depth, commands or queue_depth)
    span = t.span()
    prime = TP if t.direction == Direction.IN else _dp(min(length, t.mps))
    sense = TP + ANSWER_IN + _dp(uas.SENSE_HEADER_SIZE)
    alone = uas_run(link, profile, length, commands=1, queue_depth=1, device=device,
                    primed=q > 1).done[0]
    cycle = t.resubmit + alone
    if commands is None:
        return UasBound(max(span + t.retoken + prime, sense + t.retoken + TP, cycle / q),
                        {"data": span + t.retoken + prime, "status": sense + t.retoken + TP,
                         "driver": cycle / q})
    start = uas_run(link, profile, length, commands=q, queue_depth=q, device=device)
    n, terms = commands, {"data": 0.0, "status": 0.0, "driver": 0.0}
    for k, stage in enumerate(start.stages):  # ready at 0: their times are absolute
        later = n - k
        primes = n - q if k == 0 else 0
        terms["data"] = max(terms["data"], stage["data stream"] + later * span
                            + (later - 1) * t.retoken + primes * prime + t.completion)
        terms["status"] = max(terms["status"], stage["SENSE end"] - sense + later * sense
                              + (later - 1) * t.retoken + primes * TP + t.completion)
    last = (n - 1) % q
    terms["driver"] = start.done[last] + (n - 1) // q * cycle
    return UasBound(max(terms.values()), terms)


def uas_ceiling(bus: BusDescription, direction: str, *, length: int,
                queue_depth: int | None = None, transfers: int | None = None,
                profile: Usb3HostProfile | None = None) -> Ceiling:
    """busprobe's UAS framing on the SuperSpeed null disk (``sweep --protocol uas``): each
    transfer one command of ``length`` bytes, ``queue_depth`` (default 1) outstanding; the
    steady state, or with ``transfers`` the host-timed run of that many commands
    (:func:`uas_bound`, an ideal device). ``parts``: ``stepped`` the stepped schedule's
    figure, ``busprobe_device`` / ``busprobe_stepped`` both with busprobe's UAS engine."""
    if direction not in (Direction.IN, Direction.OUT):
        raise ValueError(f"UAS moves data in or out, not {direction}")
    q = queue_depth or 1
    if q > uas.TASK_SET_DEPTH:
        raise ValueError(f"UAS with streams keeps at most {uas.TASK_SET_DEPTH} commands "
                         f"outstanding (one stream a tag), not {q}")
    profile = profile or load_usb3_profile(bus.host_profile or "ideal")
    link = usb3_link(bus, direction, profile)
    t = _timing(link, profile, length)
    commands = max(48, 8 * q)
    us = {k: v * 1e6 for k, v in uas_run(link, profile, length, commands=commands,
                                          queue_depth=q).stages[commands // 2].items()}

    def figures(device: UasDevice) -> tuple[float, float, UasBound]:
        """(bound, stepped, the bound's terms) in bytes/s."""
        bound = uas_bound(link, profile, length, queue_depth=q, commands=transfers,
                          device=device)
        if transfers is None:
            stepped = length / uas_period(link, profile, length, queue_depth=q, device=device)
            return length / bound.seconds, stepped, bound
        run = uas_run(link, profile, length, commands=transfers, queue_depth=q,
                      device=device)
        return transfers * length / bound.seconds, transfers * length / run.end, bound

    throughput, stepped, bound = figures(IDEAL_DEVICE)
    mine, mine_stepped, _ = figures(BUSPROBE_DEVICE)
    prime = "an ACK TP" if direction == Direction.IN else "its first data packet (dropped)"
    what = ("one command's period in steady state" if transfers is None else
            f"a run of {transfers} commands, host clock from the first submission to the last "
            f"completion")
    lines = [
        f"usb3-ss UAS with bulk streams, host {profile.name}: one command of {length} B "
        f"{direction.upper()} per transfer, {q} outstanding; each its status and data transfer "
        f"on the stream of its tag, then the COMMAND IU ({uas.COMMAND_SIZE} B OUT)",
        f"stepped by the simulated xHCI's rules: a pipe moves one transfer at a time, "
        f"{profile.retoken_delay_us:g} µs after its last; each stream primed with {prime}, "
        f"NRDY, selected by the device's ERDY and answered {profile.turnaround_ns:g} ns later; "
        f"the {direction.upper()} transfer {t.span() * 1e6:.3f} µs; completion "
        f"{profile.completion_latency_us:g} µs, the next command "
        f"{profile.resubmit_latency_us:g} µs after the one it follows is done; a device never "
        f"the bottleneck",
        "a command in steady state, µs from its being ready: " + ", ".join(
            f"{name} {value:.2f}" for name, value in us.items()),
        f"stepped schedule: {stepped / 1e6:.3f} MB/s",
        f"bound on {what} whatever the pipes' phases: data pipe "
        f"{bound.terms['data'] * 1e6:.2f}, status pipe {bound.terms['status'] * 1e6:.2f}, "
        f"driver {bound.terms['driver'] * 1e6:.2f} µs -> {throughput / 1e6:.3f} MB/s "
        f"(set by the {bound.binding} {'pipe' if bound.binding != 'driver' else 'turnaround'})",
        f"with busprobe's UAS engine (a whole packet filled before the data stream's ERDY, a "
        f"write's last packet checked before its SENSE): bound {mine / 1e6:.3f} MB/s = "
        f"{mine / throughput * 100:.2f} % of it, stepped {mine_stepped / 1e6:.3f} MB/s",
    ]
    parts: dict[str, object] = {
        "protocol": "uas", "length": length, "in_flight": q, "host_profile": profile.name,
        "transfer_seconds": t.span(), "device_ceiling": None,
        "latency_bound": link.latency_bound, "stages": us, "stepped": stepped,
        "bound_terms": bound.terms, "busprobe_device": mine,
        "busprobe_stepped": mine_stepped}
    if transfers is None:
        parts["period"] = bound.seconds
    else:
        steady = length / uas_bound(link, profile, length, queue_depth=q).seconds
        parts.update(transfers=transfers, steady=steady, run_seconds=bound.seconds)
    return Ceiling(throughput, "\n".join(lines), parts, direction,
                   f"usb3-ss link UAS host profile {profile.name}")
