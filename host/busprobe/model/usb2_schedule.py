"""Per-transfer time of short USB 2.0 bulk transfers, by stepping a host profile's schedule rules.

A closed form cannot see *where* in a microframe a transfer starts, and for transfers of a few
packets that decides whether they fit in one microframe or spill into the next. This module
applies the scheduling rules the simulated controller follows (``sim/usb2/controller.py``) to
transaction *budgets* (:func:`~busprobe.protocol.usb2_wire.transaction_bits`, unstuffed, as the
schedule reserves them), on a timeline of 60 MHz line cycles:

* each microframe starts with an SOF and the host's back-to-back delay;
* a transaction starts only if its budget ends within the microframe, and at most
  ``max_per_uframe`` transactions go to the endpoint per microframe; after each, the profile's
  ``inter_transaction_gap_ns`` of idle bus;
* a transfer completes ``completion_latency_us`` after its last transaction, rounded up to a
  microframe boundary when ``completion_on_uframe``; its replacement is schedulable
  ``resubmit_latency_us`` later; ``queue_depth`` transfers are queued at the start.

:func:`steady_period` runs transfers until the start-up has passed and returns the mean time per
transfer over a long window. It is only used for transfers short enough that the microframe phase
matters (the caller falls back to the closed form beyond :data:`MAX_STEPPED_PACKETS`).
:func:`run_transfers` is the stepping itself, for a finite run from a given start: what one
repeat of a sweep point takes and when its data moved (``busprobe fit`` predicts measured points
with it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..protocol import usb2_wire as wire
from ..protocol.usb2 import CLOCK_HZ
from .usb2_hosts import HostProfile

__all__ = ["steady_period", "average_period", "run_transfers", "TransferRun",
           "MAX_STEPPED_PACKETS"]

#: Transfers longer than this (128 KiB of 512-byte packets) use the closed form: the phase of
#: their first and last microframe is then worth less than 1 % of their time.
MAX_STEPPED_PACKETS = 256


def _cycles(seconds: float) -> int:
    return round(seconds * CLOCK_HZ)


@dataclass(frozen=True)
class TransferRun:
    """When a run of transfers moved its data and completed, in line cycles.

    Attributes
    ----------
    first_start : int
        Start of the first transaction (its token).
    ends : list of int
        Per transfer, the end of its last transaction (the handshake).
    completions : list of int
        Per transfer, when the application sees it complete.
    """

    first_start: int
    ends: list[int]
    completions: list[int]


def average_period(profile: HostProfile, packets: int, per_uframe: float,
                   queue_depth: int) -> tuple[float, float, float]:
    """``(t_bus, t_cycle, period)`` in seconds of transfers of ``packets`` packets moved at
    ``per_uframe`` packets per microframe, ``queue_depth`` in flight (the closed form of
    ``model/usb2.py``): the transfer's bus time, its turnaround alone (resubmit + bus +
    completion, in whole microframes when completions land on boundaries), and the time per
    transfer once the queue hides what it can of the turnaround."""
    t_bus = packets / per_uframe * wire.UFRAME_S
    t_cycle = (profile.resubmit_latency_us + profile.completion_latency_us) * 1e-6 + t_bus
    if profile.completion_on_uframe:
        # A small epsilon keeps an exact boundary from rounding up a whole microframe.
        t_cycle = math.ceil(t_cycle / wire.UFRAME_S - 1e-9) * wire.UFRAME_S
    return t_bus, t_cycle, max(t_bus, t_cycle / queue_depth)


def steady_period(profile: HostProfile, direction: str, *, packets: int, queue_depth: int,
                  max_packet_size: int = 512) -> float:
    """Seconds per transfer of ``packets`` packets at ``queue_depth``, in steady state."""
    if packets < 1 or queue_depth < 1:
        raise ValueError("packets and queue depth must be at least 1")
    limit = profile.max_per_uframe(direction)
    completion = _cycles(profile.completion_latency_us * 1e-6)
    resubmit = _cycles(profile.resubmit_latency_us * 1e-6)
    uframe = wire.UFRAME_CYCLES

    # A queue deeper than the transfers the bus can move during one completion round trip never
    # runs dry: more depth changes nothing, so it is capped (a --queue-depth of a million would
    # otherwise step millions of transfers).
    round_trip = completion + resubmit + 2 * uframe
    queue_depth = min(queue_depth, -(-limit * (round_trip // uframe + 2) // packets) + 1)
    # Enough transfers for the start-up to wash out, then a window of at least 64 microframes
    # of traffic (and 4 queue depths) to average over: the pattern of which transfers share a
    # completion boundary repeats, and a short window could catch a lucky part of it.
    window = max(4 * queue_depth, -(-64 * limit // packets))
    finished = run_transfers(profile, direction, packets=packets, queue_depth=queue_depth,
                             count=2 * window + queue_depth,
                             max_packet_size=max_packet_size).completions
    span = finished[-1] - finished[-1 - window]
    return span / window / CLOCK_HZ


def run_transfers(profile: HostProfile, direction: str, *, packets: int, queue_depth: int,
                  count: int, start: int = 0, max_packet_size: int = 512,
                  last_payload: int | None = None,
                  uframe_bytes: dict[int, int] | None = None) -> TransferRun:
    """``count`` transfers stepped by the module's rules: when each one's data ended and when it
    completed.

    The first ``queue_depth`` transfers are submitted at cycle ``start`` (microframes start every
    :data:`~busprobe.protocol.usb2_wire.UFRAME_CYCLES` from cycle 0, each with its SOF, so
    ``start`` sets the phase a finite run begins at, as a sweep's repeat does); each completion
    submits the next. ``completions[-1] - start`` is what the simulated controller reports as
    the run's duration.

    ``last_payload`` is the size of each transfer's last packet (default: a full one). The
    schedule reserves a full packet's budget before it starts any transaction, but a short packet
    holds the line only for its own bytes, so the next transaction (and the transfer's end)
    comes sooner. With ``uframe_bytes`` the payload bytes each microframe carried are added to
    it, by microframe number (cycle // UFRAME_CYCLES): what the device's whole-microframe window
    counts (:func:`busprobe.model.usb2_run.device_window`).
    """
    if packets < 1 or queue_depth < 1 or count < 1:
        raise ValueError("packets, queue depth and count must be at least 1")
    uframe = wire.UFRAME_CYCLES
    after_sof = wire.bits_to_cycles(wire.sof_bits()) + \
        wire.bits_to_cycles(wire.IPD_HOST_BACK_TO_BACK_BITS)
    # A transaction: its line time (token to handshake end, as the schedule reserves it), then
    # the inter-packet delay before the host's next token and the profile's gap.
    reserve = wire.bits_to_cycles(wire.transaction_bits(direction, max_packet_size).total)
    ipd = wire.bits_to_cycles(wire.IPD_MIN_BITS)
    last = max_packet_size if last_payload is None else last_payload
    if not 0 <= last <= max_packet_size:
        raise ValueError(f"last packet of {last} bytes does not fit {max_packet_size}")
    short = wire.bits_to_cycles(wire.transaction_bits(direction, last).total)
    gap = wire.bits_to_cycles(round(profile.inter_transaction_gap_ns * wire.BIT_RATE / 1e9))
    limit = profile.max_per_uframe(direction)
    completion = _cycles(profile.completion_latency_us * 1e-6)
    resubmit = _cycles(profile.resubmit_latency_us * 1e-6)

    ready = [start] * min(queue_depth, count)
    ends: list[int] = []
    finished: list[int] = []
    first_start: int | None = None
    slot = reserve + ipd + gap  # one transaction and the idle after it
    on_uframe = profile.completion_on_uframe
    # No transaction starts before the SOF that opens the microframe and the host's gap after it.
    uframe_start, in_uframe = start // uframe * uframe, 0
    free_at = max(start, uframe_start + after_sof)
    # Plain comparisons instead of min/max: a fit runs this loop millions of times.
    for index in range(count):
        if ready[index] > free_at:
            free_at = ready[index]
        left = packets
        while left:
            if free_at >= uframe_start + uframe:  # the SOFs of the microframes passed
                uframe_start = free_at - free_at % uframe
                in_uframe = 0
                if free_at < uframe_start + after_sof:
                    free_at = uframe_start + after_sof
            # As many of the transfer's packets as this microframe still takes, back to back
            # (one step per microframe, not per packet): each must end within the microframe.
            fit = (uframe_start + uframe - reserve - free_at) // slot + 1
            if fit > limit - in_uframe:
                fit = limit - in_uframe
            if fit > left:
                fit = left
            if fit <= 0:
                free_at = uframe_start + uframe  # wait for the next microframe
                continue
            if first_start is None:
                first_start = free_at
            left -= fit
            end = free_at + (fit - 1) * slot + (short if left == 0 else reserve)
            in_uframe += fit
            free_at = end + ipd + gap
            if uframe_bytes is not None:
                moved = fit * max_packet_size - (max_packet_size - last if left == 0 else 0)
                key = uframe_start // uframe
                uframe_bytes[key] = uframe_bytes.get(key, 0) + moved
        done = end + completion
        if on_uframe:
            done = -(-done // uframe) * uframe
        ends.append(end)
        finished.append(done)
        if len(ready) < count:
            ready.append(done + resubmit)
    return TransferRun(start if first_start is None else first_start, ends, finished)
