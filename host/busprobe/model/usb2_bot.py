"""USB 2.0 bulk throughput under USB mass storage Bulk-Only Transport, per host profile.

BOT moves each command as three bulk transfers, one after the other (``protocol/bot.py``): a
31-byte CBW on OUT, the data, a 13-byte CSW on IN. The driver submits each stage only when the
one before has completed, so every command pays the host profile's turnaround three times::

    t_stage    = resubmit + t_bus(stage) + completion      (rounded up to whole µframes when
                                                             the profile completes on µframes)
    t_command  = t_stage(CBW, 1 packet) + t_stage(data) + t_stage(CSW, 1 packet)
    throughput = length / t_command

against one turnaround per transfer for streamed transfers at queue depth 1 (``usb2.py``). The
per-command time is stepped by the schedule rules the simulated host controller follows
(:func:`.usb2_schedule.run_transfers`, one stage after another, each starting ``resubmit`` after
the last one's completion) rather than summed, because where in a microframe each stage starts
decides how many microframe boundaries it waits for.

Limit: the stepping counts each stage's packets per microframe afresh; the simulated controller
counts a CBW and OUT data that share a microframe together against the profile's per-microframe
limit. With every shipped profile the completion and resubmit latency between two stages keep
them in different microframes or far below the limit.
"""

from __future__ import annotations

import math

from ..protocol import usb2_wire as wire
from ..protocol.bot import CBW_SIZE, CSW_SIZE
from ..protocol.usb2 import CLOCK_HZ
from .usb2_hosts import HostProfile
from .usb2_schedule import run_transfers

__all__ = ["bot_command", "bot_run", "bot_lines", "WARM_UP", "WINDOW"]

#: Commands stepped before the window starts (the start-up phase washes out) and in it.
WARM_UP, WINDOW = 3, 8


def _stages(direction: str, length: int, mps: int) -> list[tuple[str, str, int]]:
    """``(name, direction, packets)`` of one command's stages."""
    return [("CBW", "out", math.ceil(CBW_SIZE / mps)),
            ("data", direction, max(1, math.ceil(length / mps))),
            ("CSW", "in", math.ceil(CSW_SIZE / mps))]


def _wrapper_stage(profile: HostProfile, direction: str, payload: int, ready: int,
                   max_packet_size: int) -> int:
    """Completion cycle of a one-packet stage (CBW, CSW) ready at ``ready``.

    The schedule reserves a full packet's budget before it starts a transaction (as it does for
    the data), but a CBW or CSW holds the line only for its own few bytes: the stepping of
    :func:`run_transfers` ends every transaction at its budget, which would add some 8 µs per
    wrapper.
    """
    uframe = wire.UFRAME_CYCLES
    after_sof = wire.bits_to_cycles(wire.sof_bits()) + \
        wire.bits_to_cycles(wire.IPD_HOST_BACK_TO_BACK_BITS)
    budget = wire.bits_to_cycles(wire.transaction_bits(direction, max_packet_size).total)
    line = wire.bits_to_cycles(wire.transaction_bits(direction, payload).total)
    uframe_start = ready // uframe * uframe
    start = max(ready, uframe_start + after_sof)
    if start + budget > uframe_start + uframe:  # does not fit: the next microframe
        start = uframe_start + uframe + after_sof
    done = start + line + round(profile.completion_latency_us * 1e-6 * CLOCK_HZ)
    if profile.completion_on_uframe:
        done = -(-done // uframe) * uframe
    return done


def _command_stages(profile: HostProfile, direction: str, length: int, ready: int,
                    max_packet_size: int) -> list[tuple[str, int, int]]:
    """``(stage, ready, completion)`` of one command whose CBW is ready at cycle ``ready``."""
    resubmit = round(profile.resubmit_latency_us * 1e-6 * CLOCK_HZ)
    stages = []
    for name, stage_direction, packets in _stages(direction, length, max_packet_size):
        if name == "data":
            last = length - (packets - 1) * max_packet_size
            done = run_transfers(profile, stage_direction, packets=packets, queue_depth=1,
                                 count=1, start=ready, max_packet_size=max_packet_size,
                                 last_payload=last).completions[0]
        else:
            size = CBW_SIZE if name == "CBW" else CSW_SIZE
            done = _wrapper_stage(profile, stage_direction, size, ready, max_packet_size)
        stages.append((name, ready, done))
        ready = done + resubmit
    return stages


def bot_command(profile: HostProfile, direction: str, length: int, *,
                max_packet_size: int = 512) -> dict[str, float]:
    """Seconds per BOT command of ``length`` data bytes in steady state, and per stage.

    Keys: ``command`` (the period), ``CBW``, ``data``, ``CSW`` (each stage from being submitted
    to its completion, averaged over the window) and ``resubmit`` (three per command).
    """
    if length < 1:
        raise ValueError(f"transfer length must be positive, not {length}")
    resubmit = round(profile.resubmit_latency_us * 1e-6 * CLOCK_HZ)
    spent = dict.fromkeys((name for name, _, _ in _stages(direction, length, max_packet_size)),
                          0)
    ends = []
    ready = 0
    for command in range(WARM_UP + WINDOW + 1):
        for name, submitted, done in _command_stages(profile, direction, length, ready,
                                                     max_packet_size):
            if command > WARM_UP:
                spent[name] += done - submitted
            ready = done + resubmit
        ends.append(ready)
    period = (ends[-1] - ends[WARM_UP]) / WINDOW
    out = {name: cycles / WINDOW / CLOCK_HZ for name, cycles in spent.items()}
    out.update(command=period / CLOCK_HZ, resubmit=resubmit / CLOCK_HZ)
    return out


def bot_run(profile: HostProfile, direction: str, length: int, *, commands: int, start: int = 0,
            max_packet_size: int = 512) -> int:
    """Line cycles from the first CBW's submission at cycle ``start`` to the last CSW's
    completion, ``commands`` commands one after the other: what a BOT repeat's host clock
    reads (the first CBW waits for no resubmit, nothing follows the last CSW)."""
    resubmit = round(profile.resubmit_latency_us * 1e-6 * CLOCK_HZ)
    ready = done = start
    for _ in range(commands):
        done = _command_stages(profile, direction, length, ready, max_packet_size)[-1][2]
        ready = done + resubmit
    return done - start


def bot_lines(profile: HostProfile, direction: str, length: int,
              times: dict[str, float]) -> list[str]:
    """The derivation of :func:`bot_command`'s figure, numbers put in."""
    us = {key: value * 1e6 for key, value in times.items()}
    rounding = ", completions on µframe boundaries" if profile.completion_on_uframe else ""
    return [
        f"BOT: each command = CBW ({CBW_SIZE} B OUT) -> data ({length} B {direction.upper()})"
        f" -> CSW ({CSW_SIZE} B IN), one transfer at a time",
        f"each stage: resubmit {profile.resubmit_latency_us:g} µs + its bus time + completion"
        f" {profile.completion_latency_us:g} µs{rounding}",
        f"stepped: CBW {us['CBW']:.2f} + data {us['data']:.2f} + CSW {us['CSW']:.2f}"
        f" + 3 × resubmit {us['resubmit']:.2f} = {us['command']:.2f} µs per command",
        f"BOT: {length} B / {us['command']:.2f} µs = {length / times['command'] / 1e6:.3f} MB/s",
    ]
