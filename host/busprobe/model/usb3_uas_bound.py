"""The UAS-with-streams ceiling's bound (:func:`uas_bound`): the least time a run of commands
can take whatever the phases of its pipes against each other, from the stepped schedules of
:mod:`.usb3_uas` (its first commands, one command alone) and the terms no schedule escapes
(each pipe's transfers and handshakes in a row, the driver's turnaround, every command's
packets on its data's lane)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..protocol import uas
from ..protocol.names import Direction
from .usb3 import DP_OVERHEAD, DPH_BYTES, DPP_OVERHEAD, LINK_COMMANDS_PER_TP, TP_BYTES
from .usb3_hosts import Usb3HostProfile
from .usb3_run import ALLOWANCE_BYTES, Usb3Link
from .usb3_uas import ANSWER_IN, ANSWER_OUT, TP, dp_seconds, uas_run, uas_timing
from .usb3_uas_device import CYCLE, IDEAL_DEVICE, UasDevice

__all__ = ["UasBound", "uas_bound", "lane_bytes"]


def lane_bytes(direction: str, length: int, mps: int, device: UasDevice = IDEAL_DEVICE, *,
               pipe_primes: bool = False) -> int:
    """Lane bytes one command puts on the lane its data go on (IN: upstream; OUT: downstream):
    the data packets, each with the link commands that answer its ACK TP (``DP_OVERHEAD``),
    and every other packet of the command there, with the LGOOD + LCRD for each packet the
    other side sends. IN: the SENSE IU; the device's ACK of the COMMAND IU and the NRDY and
    ERDY of both its streams; the link commands for the COMMAND IU, both streams' primes and
    Start Stream ACK TPs and the host's ACK of the SENSE IU. OUT: the data pipe's prime (its
    first data packet), the COMMAND IU, the status pipe's prime, Start Stream and ACK of the
    SENSE IU; the link commands for the device's NRDY and ERDY of both streams, its ACK of the
    COMMAND IU and the SENSE IU. On OUT a ``device`` behind which the host idles after each of
    its TPs adds those cycles (:attr:`~.usb3_uas_device.UasDevice.host_tp_gap`: the simulated
    xHCI appends them to the TP). The device's own lane has no idle cycles between its
    packets (busprobe's engine sends a waiting packet straight after the last, or its link
    commands there: ``gateware/usb3/chained_packets.py``). With ``pipe_primes`` no command has
    primes of its own (nor the NRDYs answering them)."""
    packets = max(1, math.ceil(length / mps))
    data = 4 * math.ceil(length / 4) + packets * DP_OVERHEAD
    wire, lc = DPH_BYTES + DPP_OVERHEAD, LINK_COMMANDS_PER_TP
    primes = 0 if pipe_primes else 2  # the data and the status pipe's own, per command
    if direction == Direction.IN:
        return data + wire + uas.SENSE_HEADER_SIZE + (3 + primes) * TP_BYTES + (4 + primes) * lc
    # OUT: the data pipe's prime is its first data packet, the status pipe's a TP.
    first = 4 * math.ceil(min(length, mps) / 4) + wire if primes else 0
    return (data + wire + first + uas.COMMAND_SIZE
            + (2 + primes // 2) * (TP_BYTES + 4 * device.host_tp_gap) + (4 + primes) * lc)


def _gaps(gaps: int, retoken: float, primes: float, handshake: float) -> float:
    """The least total of ``gaps`` gaps between a pipe's streams, each at least its re-token
    delay plus the primes sent in it and at least ``handshake``, with ``primes`` seconds of
    primes spread over them as suits the schedule best (filling the handshake's slack
    first)."""
    slack = max(handshake - retoken, 0.0)
    return gaps * max(retoken, handshake) + max(primes - gaps * slack, 0.0)


@dataclass(frozen=True)
class UasBound:
    """The least time a run (or, in steady state, a command) can take, and what sets it:
    ``data`` (the data pipe's transfers, re-token delays and primes in a row), ``status`` (the
    status pipe's likewise), ``driver`` (each command's own chain and the driver's
    turnaround, ``queue_depth`` of them in flight) or ``lane`` (every command's packets on the
    lane its data go on, :func:`lane_bytes`)."""

    seconds: float
    terms: dict[str, float]

    @property
    def binding(self) -> str:
        return max(self.terms, key=self.terms.__getitem__)


def uas_bound(link: Usb3Link, profile: Usb3HostProfile, length: int, *, queue_depth: int,
              commands: int | None = None, device: UasDevice = IDEAL_DEVICE,
              pipe_primes: bool = False) -> UasBound:
    """A lower bound of a run of ``commands`` commands (``None``: of one command's period in
    steady state) that holds whatever the phases of the pipes against each other.

    The stepped schedule (:func:`uas_run`) puts each prime where a command's submission falls
    against a pipe's turns, so a slower device may shift the phases to a better schedule
    (behind ``small-burst``, whose completions come in bursts, the simulated disk read 2.3 %
    above the ideal device's stepped schedule at 1 KiB × QD 8 OUT). So the ceiling is this: the
    first ``queue_depth`` commands stepped (submitted together, nothing to phase); then each
    pipe moves every transfer after its re-token delay and primes every later one (the data
    pipe's prime is a whole data packet on OUT), no two of its streams closer than the
    handshake between them (a read's: the host's ACK of the last packet, the device's ERDY,
    the host's answer; behind small-burst the bound without it read 26 % above the simulated
    4 KiB × QD 8 reads; a ``device`` that learns of that ACK late adds
    :attr:`~.usb3_uas_device.UasDevice.next_in`); each command's successor follows it by
    the driver's turnaround and the least a command takes (stepped alone: its transfers reach
    the host's rings together, so its streams are primed no sooner than its IU goes); and the
    lane its data go on carries every command's packets, and then, a run's clock stopping at
    its last completion, the host's completion latency. With ``pipe_primes`` (the host primes
    each pipe once, with the Prime Stream ID) no later transfer is primed."""
    t = uas_timing(link, profile, length)
    q = min(queue_depth, commands or queue_depth)
    span = t.span()
    # A later transfer's prime on the data and the status pipe (none behind a primed pipe).
    prime = TP if t.direction == Direction.IN else dp_seconds(min(length, t.mps))
    status_prime = TP
    if pipe_primes:
        prime = status_prime = 0.0
    # (a pipe primed once stays primed: a bound takes it as primed before the run)
    stepped = {"device": device, "pipe_primes": pipe_primes, "primed": pipe_primes}
    sense = TP + ANSWER_IN + dp_seconds(uas.SENSE_HEADER_SIZE)
    if q == 1:  # each behind the one before it (its SENSE IU's ACK on the host's lane)
        two = uas_run(link, profile, length, commands=2, queue_depth=1, **stepped).done
        cycle = two[1] - two[0]
    else:  # (its streams primed from its submission: none is on a ring before that)
        cycle = t.resubmit + uas_run(link, profile, length, commands=1, queue_depth=1,
                                     **stepped).done[0]
    # Between two streams of a pipe: its re-token delay and the primes sent in that gap, and at
    # least the handshake (the host's ACK of the stream's last packet, the next ERDY, the
    # host's answer: 2 turnarounds and 2 TPs; on OUT the device ACKs the last packet, so the
    # ERDY and the host's answer: behind small-burst 1,240 cycles from stream to stream of
    # 4 KiB writes primed before, where the bound without it took 1,085).
    # Every command's packets on its data's lane, at the lane's rate less SKP and ITP.
    lane = lane_bytes(t.direction, length, t.mps, device,
                      pipe_primes=pipe_primes) / t.link.rate
    handshake = 2 * (t.answer + TP)
    # (and on IN the device's own part: its ERDY once it learns the stream ended, its first
    # packet after the host's Start Stream)
    if t.direction == Direction.IN:
        data_shake = handshake + (device.next_in + device.answer_in) * CYCLE
    else:
        data_shake = t.answer + TP + device.last_ack(pipe_primes) * CYCLE
    if commands is None:
        terms = {"data": span + max(t.retoken + prime, data_shake),
                 "status": sense + max(t.retoken + TP, handshake), "driver": cycle / q,
                 "lane": lane}
        return UasBound(max(terms.values()), terms)
    start = uas_run(link, profile, length, commands=q, queue_depth=q, **stepped)
    n = commands
    # The run ends ``completion`` after its last command's last packet on the lane; only the
    # host's ACK of it and the link commands of the last few packets may follow that packet
    # there. On IN the lane carries nothing before the host's first prime has come and been
    # answered. (The host's idle cycle after its TP is on its own lane: OUT's.)
    host_gap = 4 * device.host_tp_gap if t.direction == Direction.OUT else 0
    trailing = TP_BYTES + host_gap + 4 * LINK_COMMANDS_PER_TP
    head = TP + ANSWER_OUT if t.direction == Direction.IN else 0.0
    terms = {"data": 0.0, "status": 0.0, "driver": 0.0,
             "lane": head + n * lane - (ALLOWANCE_BYTES + trailing) / t.link.rate
             + t.completion}
    for k, stage in enumerate(start.stages):  # ready at 0: their times are absolute
        later = n - k
        primes = n - q if k == 0 else 0
        terms["data"] = max(terms["data"], stage["data stream"] + later * span + t.completion
                            + _gaps(later - 1, t.retoken, primes * prime, data_shake))
        terms["status"] = max(terms["status"], stage["SENSE end"] - sense + later * sense
                              + t.completion + _gaps(later - 1, t.retoken,
                                                     primes * status_prime, handshake))
    last = (n - 1) % q
    terms["driver"] = start.done[last] + (n - 1) // q * cycle
    return UasBound(max(terms.values()), terms)
