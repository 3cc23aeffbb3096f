"""The most one measured SuperSpeed run can read: a point's ceiling, as the sweep measured it.

As for USB 2.0 (:mod:`.usb2_run`), a sweep's repeat is a finite run of ``transfers`` transfers,
``queue_depth`` submitted at once, timed by the host from the first submission to the last
completion, and by the device over whole bus intervals (ITP to ITP). The run is stepped a
transfer at a time by the rules the simulated xHCI follows (``sim/usb3/controller.py``): it moves
one transfer at a time; a transfer's data starts when it is ready and the controller is free,
and, after the run's first, ``retoken_delay_us`` after the endpoint's previous transfer ended;
it *completes* ``completion_latency_us`` after its end (IN: its last DP; OUT: the ACK TP for
it); a transfer submitted in answer is ready ``resubmit_latency_us`` after that. So the host's
clock holds the last completion's latency and every re-token delay but the first, and no
resubmit after the last completion; the steady state holds one of each per transfer.

A transfer's own time, from its start to its end (:func:`transfer_seconds`)::

    IN:  ACK TP (20 B) + the device's answer (DEVICE_RESPONSE_CYCLES) + data
    OUT: data + the device's answer + its ACK TP
    data = max(Σ (payload + 48 B) / lane after SKP and ITP - one DP's link commands, one SKP
               word and one ITP (the edges of a short span need not hold them),
               (groups - 1) × round trip + the last group's DPs at the raw lane rate)

where a group is the host profile's burst window (``max_burst_in`` / ``max_burst_out``, capped
by the selector's ``burst=``) and the round-trip term applies when the window is shorter than
its round trip (:func:`.usb3.round_trip_s`). A short last DP counts its own bytes. The device's
answers are the measured ones of busprobe's gateware; every other term is a lower bound of what
the simulated link takes, so no run reads above this.

The device's window has an unknown phase against the run (the first ITP comes when the host
next has the lane), so its ceiling is the most it reads over :data:`ITP_PHASES` phases, with
the run's data spread evenly over each transfer's span and one burst of packets added for the
packets its edges may count whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..protocol.usb3 import BUS_INTERVALS_PER_SECOND

__all__ = ["Usb3Link", "transfer_seconds", "run_times", "device_window_rate", "ITP_PHASES",
           "ALLOWANCE_BYTES"]

#: Phases of the ITP grid against the run the device window is evaluated at.
ITP_PHASES = 32
#: Lane bytes a span may lack against the averages: one DP's LGOOD + LCRD (16), a SKP word (4),
#: an ITP (20).
ALLOWANCE_BYTES = 16 + 4 + 20
BUS_INTERVAL_S = 125e-6


@dataclass(frozen=True)
class Usb3Link:
    """What :func:`transfer_seconds` needs of a SuperSpeed link and its host.

    Attributes
    ----------
    direction : str
        ``in`` or ``out``.
    max_packet_size : int
    rate : float
        Lane bytes per second after SKP and ITP (:func:`.usb3.usb3_ceiling`'s ``rate``).
    raw : float
        Lane bytes per second (500 MB/s).
    window : int
        Packets the host lets be unacknowledged (its burst).
    round_trip : float
        Seconds from a DP's first symbol to the first of the DP its ACK lets go.
    latency_bound : bool
        The window is shorter than its round trip.
    burst_gap : float
        Seconds of idle after each burst (``burst_gap_ns``).
    lead, tail : float
        Seconds before the first DP (IN: the ACK TP and the device's answer) and after the
        last (OUT: the device's answer and its ACK TP).
    """

    direction: str
    max_packet_size: int
    rate: float
    raw: float
    window: int
    round_trip: float
    latency_bound: bool
    burst_gap: float
    lead: float
    tail: float


def transfer_seconds(link: Usb3Link, length: int, dp_overhead: int, dp_wire_overhead: int
                     ) -> float:
    """Seconds from a transfer's start to its end (see module). ``dp_overhead`` is a DP's
    lane bytes beyond its payload with its link commands (48), ``dp_wire_overhead`` without
    them (32)."""
    mps = link.max_packet_size
    packets = max(1, math.ceil(length / mps))
    last = length - (packets - 1) * mps
    lane = length + packets * dp_overhead - ALLOWANCE_BYTES
    data = max(lane / link.rate, 0.0)
    groups = math.ceil(packets / link.window)
    if link.latency_bound and groups > 1:
        in_last = packets - (groups - 1) * link.window
        last_group = (in_last - 1) * (mps + dp_wire_overhead) + last + dp_wire_overhead
        data = max(data, (groups - 1) * (link.round_trip + link.burst_gap)
                   + last_group / link.raw)
    elif groups > 1:
        data += (groups - 1) * link.burst_gap
    return link.lead + data + link.tail


def run_times(seconds: float, *, transfers: int, queue_depth: int, completion: float,
              resubmit: float, retoken: float) -> tuple[list[tuple[float, float]], float]:
    """Step ``transfers`` transfers of ``seconds`` each (see module): each one's
    ``(start, end)`` on the bus and the host clock's end (the last completion); time 0 is the
    first submission."""
    ready = [0.0] * min(queue_depth, transfers)
    spans: list[tuple[float, float]] = []
    done = free = 0.0
    for index in range(transfers):
        start = max(ready[index], free)
        if spans:
            start = max(start, spans[-1][1] + retoken)
        end = start + seconds
        spans.append((start, end))
        free = end
        done = end + completion
        if len(ready) < transfers:
            ready.append(done + resubmit)
    return spans, done


def device_window_rate(spans: list[tuple[float, float]], length: int, slack: int, *,
                       lead: float = 0.0, tail: float = 0.0) -> float | None:
    """The most the device's whole-interval window reads over :data:`ITP_PHASES` phases, the
    data of each span spread evenly over it less its ``lead`` and ``tail`` (the handshakes
    before and after the data, when none move) and ``slack`` bytes added to the window; None
    when the data touches fewer than three intervals."""
    best: float | None = None
    spans = [(start + lead, max(end - tail, start + lead)) for start, end in spans]
    for phase in range(ITP_PHASES):
        offset = phase * BUS_INTERVAL_S / ITP_PHASES
        moved: dict[int, float] = {}
        for start, end in spans:
            first = math.floor((start + offset) / BUS_INTERVAL_S)
            last = math.floor((end + offset) / BUS_INTERVAL_S)
            width = max(end - start, 1e-15)
            for interval in range(first, last + 1):
                low = max(start, interval * BUS_INTERVAL_S - offset)
                high = min(end, (interval + 1) * BUS_INTERVAL_S - offset)
                if high > low:
                    moved[interval] = moved.get(interval, 0.0) + length * (high - low) / width
        data = sorted(moved)
        if len(data) < 3:
            continue
        inside = sum(moved[i] for i in data[1:-1]) + slack
        rate = inside / ((data[-2] - data[0]) / BUS_INTERVALS_PER_SECOND)
        best = rate if best is None else max(best, rate)
    return best
