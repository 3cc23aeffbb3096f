"""``run_transfers``: the schedule rules stepped for a finite run from any start.

The model steps a microframe at a time; the reference here steps a packet at a time, the rules as
``sim/usb2/controller.py`` and ``model/usb2_schedule.py`` state them. They must agree to the line
cycle for every profile, start phase, length and queue depth.
"""

import random
from dataclasses import replace

import pytest
from busprobe.model.usb2_hosts import builtin_profiles, load_profile
from busprobe.model.usb2_schedule import run_transfers, steady_period
from busprobe.protocol import usb2_wire as wire
from busprobe.protocol.usb2 import CLOCK_HZ


def reference_run(profile, direction, packets, queue_depth, count, start, last=512):
    """(first_start, ends, completions, bytes per microframe), one packet per step."""
    uframe = wire.UFRAME_CYCLES
    after_sof = wire.bits_to_cycles(wire.sof_bits()) + \
        wire.bits_to_cycles(wire.IPD_HOST_BACK_TO_BACK_BITS)
    reserve = wire.bits_to_cycles(wire.transaction_bits(direction, 512).total)
    short = wire.bits_to_cycles(wire.transaction_bits(direction, last).total)
    ipd = wire.bits_to_cycles(wire.IPD_MIN_BITS)
    gap = wire.bits_to_cycles(round(profile.inter_transaction_gap_ns * wire.BIT_RATE / 1e9))
    limit = profile.max_per_uframe(direction)
    completion = round(profile.completion_latency_us * 1e-6 * CLOCK_HZ)
    resubmit = round(profile.resubmit_latency_us * 1e-6 * CLOCK_HZ)
    ready = [start] * min(queue_depth, count)
    uframe_start = start // uframe * uframe
    free_at, in_uframe = max(start, uframe_start + after_sof), 0
    first, ends, done_at, moved = None, [], [], {}
    for index in range(count):
        free_at = max(free_at, ready[index])
        for packet in range(packets):
            while True:
                while free_at >= uframe_start + uframe:
                    uframe_start += uframe
                    in_uframe = 0
                    free_at = max(free_at, uframe_start + after_sof)
                # The schedule reserves a full packet; a short last one holds the line less.
                if in_uframe < limit and free_at + reserve <= uframe_start + uframe:
                    break
                free_at = uframe_start + uframe
            first = free_at if first is None else first
            final = packet == packets - 1
            end = free_at + (short if final else reserve)
            in_uframe += 1
            free_at = end + ipd + gap
            key = uframe_start // uframe
            moved[key] = moved.get(key, 0) + (last if final else 512)
        done = end + completion
        if profile.completion_on_uframe:
            done = -(-done // uframe) * uframe
        ends.append(end)
        done_at.append(done)
        if len(ready) < count:
            ready.append(done + resubmit)
    return first, ends, done_at, moved


@pytest.mark.parametrize("name", builtin_profiles())
def test_stepping_by_microframe_equals_stepping_by_packet(name):
    rng = random.Random(name)
    base = load_profile(name)
    for _ in range(60):
        profile = replace(base, inter_transaction_gap_ns=rng.choice([0.0, 200.0, 1234.5]),
                          completion_latency_us=rng.uniform(0, 300),
                          resubmit_latency_us=rng.uniform(0, 300),
                          completion_on_uframe=rng.random() < 0.5)
        direction = rng.choice(["in", "out"])
        packets, depth, count = rng.randint(1, 40), rng.randint(1, 6), rng.randint(1, 30)
        start = rng.randrange(3 * wire.UFRAME_CYCLES)
        last = rng.choice([512, 1, 0, 13, 511])
        moved: dict[int, int] = {}
        run = run_transfers(profile, direction, packets=packets, queue_depth=depth, count=count,
                            start=start, last_payload=last, uframe_bytes=moved)
        first, ends, completions, reference = reference_run(profile, direction, packets, depth,
                                                            count, start, last)
        assert (run.first_start, run.ends, run.completions, moved) == \
            (first, ends, completions, reference), \
            (profile, direction, packets, depth, count, start, last)


def test_steady_period_is_the_long_run_of_the_same_stepping():
    profile = load_profile("ehci")
    period = steady_period(profile, "in", packets=8, queue_depth=1)
    run = run_transfers(profile, "in", packets=8, queue_depth=1, count=400)
    # 200 transfers well past the start: the same time per transfer to the line cycle.
    assert (run.completions[-1] - run.completions[-201]) / 200 / CLOCK_HZ == \
        pytest.approx(period, abs=1 / CLOCK_HZ)


def test_a_run_reports_its_first_token_and_waits_for_the_next_microframe_when_late():
    profile = load_profile("ideal")
    early = run_transfers(profile, "in", packets=13, queue_depth=1, count=1, start=100)
    assert early.first_start == 100
    # No 512-byte transaction fits in the last 200 cycles: the first starts after the next SOF.
    late = run_transfers(profile, "in", packets=13, queue_depth=1, count=1,
                         start=wire.UFRAME_CYCLES - 200)
    assert wire.UFRAME_CYCLES < late.first_start < wire.UFRAME_CYCLES + 100
    assert late.completions == late.ends  # ideal: completion latency 0
