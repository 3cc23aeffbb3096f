"""Per-transfer time of short USB 2.0 bulk transfers, by stepping a host profile's schedule rules.

A closed form cannot see *where* in a microframe a transfer starts, and for transfers of a few
packets that decides whether they fit in one microframe or spill into the next. This module
applies the scheduling rules the simulated controller follows (``sim/usb2/controller.py``) to
transaction *budgets* (:func:`.usb2_wire.transaction_bits`, unstuffed, as the schedule reserves
them), on a timeline of 60 MHz line cycles:

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
"""

from __future__ import annotations

from ..protocol.usb2 import CLOCK_HZ
from . import usb2_wire as wire
from .usb2_hosts import HostProfile

__all__ = ["steady_period", "MAX_STEPPED_PACKETS"]

#: Transfers longer than this (128 KiB of 512-byte packets) use the closed form: the phase of
#: their first and last microframe is then worth less than 1 % of their time.
MAX_STEPPED_PACKETS = 256


def _cycles(seconds: float) -> int:
    return round(seconds * CLOCK_HZ)


def steady_period(profile: HostProfile, direction: str, *, packets: int, queue_depth: int,
                  max_packet_size: int = 512) -> float:
    """Seconds per transfer of ``packets`` packets at ``queue_depth``, in steady state."""
    if packets < 1 or queue_depth < 1:
        raise ValueError("packets and queue depth must be at least 1")
    uframe = wire.UFRAME_CYCLES
    after_sof = wire.bits_to_cycles(wire.sof_bits()) + \
        wire.bits_to_cycles(wire.IPD_HOST_BACK_TO_BACK_BITS)
    budget = wire.bits_to_cycles(wire.transaction_bits(direction, max_packet_size).total) + \
        wire.bits_to_cycles(wire.IPD_MIN_BITS)
    gap = wire.bits_to_cycles(round(profile.inter_transaction_gap_ns * wire.BIT_RATE / 1e9))
    limit = profile.max_per_uframe(direction)
    completion = _cycles(profile.completion_latency_us * 1e-6)
    resubmit = _cycles(profile.resubmit_latency_us * 1e-6)

    # A queue deeper than the transfers the bus can move during one completion round trip never
    # runs dry: more depth changes nothing, so it is capped (a --queue-depth of a million would
    # otherwise step millions of transfers).
    round_trip = completion + resubmit + 2 * uframe
    queue_depth = min(queue_depth, -(-limit * (round_trip // uframe + 2) // packets) + 1)
    # Enough transfers for the start-up to wash out, then a window of at least 64 microframes
    # of traffic (and 4 queue depths) to average over: the pattern of which transfers share a
    # completion boundary repeats, and a short window could catch a lucky part of it.
    window = max(4 * queue_depth, -(-64 * limit // packets))
    total = 2 * window + queue_depth
    ready = [after_sof] * min(queue_depth, total)
    finished: list[int] = []
    free_at, uframe_start, in_uframe = after_sof, 0, 0
    for index in range(total):
        free_at = max(free_at, ready[index])
        for _ in range(packets):
            while True:
                while free_at >= uframe_start + uframe:  # SOFs of the microframes passed
                    uframe_start += uframe
                    in_uframe = 0
                    free_at = max(free_at, uframe_start + after_sof)
                if in_uframe < limit and free_at + budget <= uframe_start + uframe:
                    break
                free_at = uframe_start + uframe  # wait for the next microframe
            end = free_at + budget
            in_uframe += 1
            free_at = end + gap
        done = end + completion
        if profile.completion_on_uframe:
            done = -(-done // uframe) * uframe
        finished.append(done)
        if len(ready) < total:
            ready.append(done + resubmit)
    span = finished[-1] - finished[-1 - window]
    return span / window / CLOCK_HZ
