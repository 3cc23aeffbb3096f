"""The most one measured USB 2.0 run can read: a point's ceiling, as the sweep measured it.

A sweep's repeat is a finite run (:mod:`.usb2_schedule`): ``transfers`` transfers, the first
``queue_depth`` submitted at once, the rest each in answer to a completion. Two clocks time it:

* the host, from the first submission to the last completion. The first transfers wait for no
  resubmit and nothing follows the last completion, so a run of ``N`` transfers at queue depth 1
  holds ``N`` bus times and completions but ``N - 1`` resubmits: the steady state's
  ``length / period`` is below what such a run reads, by one resubmit in ``N`` periods (the
  demo's xHCI ladder read 100.1-100.6 % of it);
* the device, over whole microframes from the end of the first one with data to the end of the
  second-to-last (``protocol.usb2``): it leaves out the run's first and last microframe and the
  idle before and after them, so a run whose transfers leave gaps (queue depth 1) reads above
  the steady state too, and a run at the plateau reads it exactly.

So each is bounded by stepping the same run through the schedule rules the simulated controller
follows (:func:`~.usb2_schedule.run_transfers`, with each transfer's short last packet holding
the line for its own bytes) and timing it as that clock does. Where in its microframe a run
starts is not known (the host does not see microframes), so the run is stepped from
:func:`start_phases` spread over a microframe and the most either clock can read is kept.

For the host clock that is a bound, not a sample: a run that starts later never ends earlier
(every rule of the schedule is monotone in time), so a run starting anywhere within ``step``
cycles after a stepped phase lasts at least the stepped run's time less ``step``. The ceiling
takes that ``step`` off the shortest stepped run; phases are spread finer until it is worth
less than :data:`PHASE_SLACK` of the run. The model's line time is the specification's budget
(unstuffed bits, the shortest turnaround), which a real line only exceeds, so the bound holds for
any line as well. The device's window has no such order (one packet more or less in its first
microframe moves it either way), so its ceiling is the most any stepped phase reads, at the
budget's line time and at :data:`LINE_EXCESS_CYCLES` more per transaction.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..protocol import usb2_wire as wire
from ..protocol.names import USB_DIRECTIONS, Direction
from ..protocol.usb2 import CLOCK_HZ, UFRAMES_PER_SECOND
from .ceiling_type import Ceiling
from .usb2_bot import bot_run
from .usb2_hosts import HostProfile
from .usb2_loopback import loopback_run
from .usb2_schedule import run_transfers
from .usb2_uas import uas_run

__all__ = ["RunCeiling", "run_ceiling", "phase_search", "device_window", "window_rate",
           "start_phases", "with_line_excess", "finite_run", "loopback_run_ceiling",
           "bot_run_ceiling", "uas_run_ceiling", "PHASE_SLACK", "LINE_EXCESS_CYCLES"]

#: The host-clock bound gives away at most this fraction of the run to the unknown start phase.
PHASE_SLACK = 1e-4
#: Line cycles a transaction may take beyond the budget on a real (or the simulated) line: the
#: simulated busprobe device takes 4 to 7 (bit stuffing, its response time); ``busprobe fit``
#: allows the same (``fit/predict.py``).
LINE_EXCESS_CYCLES = 8
#: Phases stepped at the least, and at the most before the refinement.
MIN_PHASES, MAX_PHASES = 4, 64


@dataclass(frozen=True)
class RunCeiling:
    """What a finite run can read, by clock.

    Attributes
    ----------
    throughput : float
        Host-timed bound, bytes per second.
    seconds : float
        The shortest the run can last on the host's clock (what ``throughput`` divides).
    device : float or None
        The most the device's whole-microframe window can read, bytes per second; None when
        the run's data spans fewer than three microframes at every phase (no window).
    phases : int
        Start phases stepped.
    step : int
        Line cycles between stepped phases (what the bound gives away).
    """

    throughput: float
    seconds: float
    device: float | None
    phases: int
    step: int


def device_window(uframe_bytes: dict[int, int]) -> tuple[int, int] | None:
    """``(bytes, microframes)`` the device's window counts, from the payload bytes of each
    microframe with data: from the end of the first to the end of the second-to-last one."""
    data = sorted(key for key, moved in uframe_bytes.items() if moved)
    if len(data) < 3:
        return None
    inside = sum(uframe_bytes[key] for key in data[1:-1])
    return inside, data[-2] - data[0]


def start_phases(count: int) -> list[int]:
    """``count`` start cycles spread evenly over one microframe."""
    return [index * wire.UFRAME_CYCLES // count for index in range(count)]


def phase_search(step: Callable[[int], tuple[int, float | None]],
                 moved: int, *, fraction: float = PHASE_SLACK) -> RunCeiling:
    """The bound over every start phase of a run that moves ``moved`` bytes, where
    ``step(start)`` gives the host-timed cycles of the run started at cycle ``start`` (monotone:
    a later start never ends earlier) and what the device's window reads then (see module)."""
    probe, _ = step(0)
    count = min(MAX_PHASES, max(MIN_PHASES, math.ceil(
        wire.UFRAME_CYCLES / (fraction * max(probe, 1)))))
    phases = start_phases(count)
    spacing = -(-wire.UFRAME_CYCLES // count)  # the widest gap between two phases
    results = {start: step(start) for start in phases}
    shortest = min(duration for duration, _ in results.values())
    slack = spacing
    if spacing > fraction * shortest:
        # Step between the phases that could still hide a shorter run, finely enough.
        fine = max(1, math.floor(fraction * shortest))
        for start in phases:
            if results[start][0] - spacing < shortest:
                for offset in range(fine, spacing, fine):
                    results[start + offset] = step(start + offset)
        shortest = min(duration for duration, _ in results.values())
        slack = fine
    devices = [device for _, device in results.values() if device is not None]
    seconds = max(shortest - slack, 1) / CLOCK_HZ
    return RunCeiling(moved / seconds, seconds, max(devices) if devices else None,
                      len(results), slack)


def window_rate(frames: dict[int, int]) -> float | None:
    """What the device's window reads from ``frames`` (bytes per microframe), or None."""
    window = device_window(frames)
    # Divided as the host divides the device's counts (protocol.telemetry), to the last bit.
    return None if window is None else window[0] / (window[1] / UFRAMES_PER_SECOND)


def with_line_excess(profile: HostProfile) -> HostProfile:
    """``profile`` on a line :data:`LINE_EXCESS_CYCLES` slower per transaction."""
    return replace(profile, inter_transaction_gap_ns=profile.inter_transaction_gap_ns
                   + LINE_EXCESS_CYCLES * 1e9 / CLOCK_HZ)


def run_ceiling(profile: HostProfile, direction: str, *, length: int, queue_depth: int,
                transfers: int, max_packet_size: int = 512) -> RunCeiling:
    """The most a run of ``transfers`` transfers of ``length`` bytes at ``queue_depth`` reads
    on the host's and on the device's clock (see module)."""
    if length < 1 or queue_depth < 1 or transfers < 1:
        raise ValueError("length, queue depth and transfers must be at least 1")
    packets = max(1, math.ceil(length / max_packet_size))
    last = length - (packets - 1) * max_packet_size

    def step(line: HostProfile, start: int) -> tuple[int, float | None]:
        frames: dict[int, int] = {}
        run = run_transfers(line, direction, packets=packets, queue_depth=queue_depth,
                            count=transfers, start=start, max_packet_size=max_packet_size,
                            last_payload=last, uframe_bytes=frames)
        return run.completions[-1] - start, window_rate(frames)

    bound = phase_search(lambda start: step(profile, start), transfers * length)
    slower = with_line_excess(profile)
    devices = [device for start in start_phases(MAX_PHASES)
               if (device := step(slower, start)[1]) is not None]
    if bound.device is not None:
        devices.append(bound.device)
    return replace(bound, device=max(devices) if devices else None)


def loopback_run_ceiling(profile: HostProfile, *, length: int, queue_depth: int,
                         transfers: int, max_packet_size: int = 512) -> RunCeiling:
    """:func:`run_ceiling` of a loopback run (bytes returned; the device's figure is its slower
    direction's window, as the driver takes it)."""
    def step(start: int) -> tuple[int, float | None]:
        frames: dict[str, dict[int, int]] = {}
        cycles = loopback_run(profile, length=length, queue_depth=queue_depth, count=transfers,
                              start=start, max_packet_size=max_packet_size, frames=frames)
        rates = [window_rate(frames.get(direction, {})) for direction in USB_DIRECTIONS]
        return cycles, None if None in rates else min(r for r in rates if r is not None)

    return phase_search(step, transfers * length)


def bot_run_ceiling(profile: HostProfile, direction: str, *, length: int, transfers: int,
                    max_packet_size: int = 512) -> RunCeiling:
    """:func:`run_ceiling` of ``transfers`` BOT commands (host clock only: the driver does not
    time BOT by the device's window)."""
    return phase_search(lambda start: (bot_run(profile, direction, length, commands=transfers,
                                               start=start, max_packet_size=max_packet_size),
                                       None), transfers * length)


#: The UAS run's phase slack: each of its steps costs some 500 transactions per command, so
#: the bound gives away up to 0.1 % of the run instead of 0.01 %.
UAS_PHASE_SLACK = 1e-3


def uas_run_ceiling(profile: HostProfile, direction: str, *, length: int, queue_depth: int,
                    transfers: int, max_packet_size: int = 512) -> RunCeiling:
    """:func:`run_ceiling` of ``transfers`` UAS commands of ``length`` bytes, ``queue_depth``
    outstanding (:func:`.usb2_uas.uas_run`; host clock only)."""
    def step(start: int) -> tuple[int, float | None]:
        times = uas_run(profile, direction, [length] * transfers, queue_depth=queue_depth,
                        start=start, max_packet_size=max_packet_size)
        return times.end - start, None

    return phase_search(step, transfers * length, fraction=UAS_PHASE_SLACK)


def finite_run(ceiling: Ceiling, profile: HostProfile, direction: str, length: int,
               queue_depth: int, transfers: int, max_packet_size: int, *,
               bot: bool = False) -> Ceiling:
    """``ceiling`` (the steady state) turned into the ceiling of one measured run: its
    throughput the host-clock bound, ``parts["device_ceiling"]`` the device's (see module)."""
    if bot:
        run = bot_run_ceiling(profile, direction, length=length, transfers=transfers,
                              max_packet_size=max_packet_size)
        what = f"{transfers} BOT commands, one at a time"
    elif direction == Direction.LOOPBACK:
        run = loopback_run_ceiling(profile, length=length, queue_depth=queue_depth,
                                   transfers=transfers, max_packet_size=max_packet_size)
        what = f"{transfers} OUT and {transfers} IN transfers, {queue_depth} of each queued"
    else:
        run = run_ceiling(profile, direction, length=length, queue_depth=queue_depth,
                          transfers=transfers, max_packet_size=max_packet_size)
        what = f"{transfers} transfers, {min(queue_depth, transfers)} queued at the start"
    lines = [ceiling.formula,
             f"measured run: {what}, host clock from the first submission to the last "
             f"completion (no resubmit before the first, none after the last)",
             f"stepped from {run.phases} start phases: at least {run.seconds * 1e6:.2f} µs "
             f"(less {run.step} line cycles for starts between them) -> "
             f"{transfers} × {length} B / {run.seconds * 1e6:.2f} µs = "
             f"{run.throughput / 1e6:.3f} MB/s"]
    if run.device is not None:
        lines.append(f"device window (whole µframes, end of the first with data to end of the "
                     f"second-to-last): at most {run.device / 1e6:.3f} MB/s")
    parts = dict(ceiling.parts, transfers=transfers, steady=ceiling.throughput,
                 run_seconds=run.seconds, device_ceiling=run.device, start_phases=run.phases)
    return replace(ceiling, throughput=run.throughput, formula="\n".join(lines), parts=parts)
