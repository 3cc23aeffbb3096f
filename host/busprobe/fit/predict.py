"""The model's figures for a measured point: what the fit compares each measurement with.

A sweep's repeat is a finite run: ``transfers`` transfers, the first ``queue_depth`` submitted at
once, timed by the host from the first submission to the last completion. The model's steady
state leaves out what such a run adds (the first transfer pays no resubmit, the last completion
is waited for, the run starts somewhere inside a microframe), which is worth several per cent at
the short runs a simulated sweep makes. So a point is predicted by stepping the model's own
schedule rules over the same run (:func:`busprobe.model.usb2_schedule.run_transfers`), which
also says how much of the run lies outside the device's data span (the *tail*: start-up plus the
last completion), the figure that separates completion latency from resubmit latency.

Where in its microframe a repeat starts is not recorded (the device counts microframes, not the
host's submission time). On a real host it varies from repeat to repeat, by amounts no one
controls, so the model predicts a *range*: the lowest and highest figure over
:data:`START_PHASES` starts spread evenly over a microframe, and a measurement anywhere inside
it agrees with the model (:mod:`.objective`). Only what no start phase can explain then counts
against a set of parameters: a per-packet slope, a plateau, a tail. (A host whose repeats all
start at one phase, as the simulated EHCI controller's do after its microframe-aligned
completions, is inside the range too; fitting that phase as well was tried and bought nothing the
range does not give.) A result that does not record its transfers per repeat is compared with the
steady state.

The range also spans the line time the model leaves out. The model counts a transaction as the
specification budgets it (unstuffed bits, the shortest turnaround); a line takes a few cycles more
(bit stuffing of the data, the device's response). The simulated busprobe device takes 4 to 7
more per 512-byte transaction: thirteen of them still fit a microframe OUT up to a gap of 26 line
cycles where the budget leaves room for 30, IN up to 34 where it leaves 41. Every point is
predicted with the profile's gap and with :data:`LINE_EXCESS_CYCLES` more, so the fitted gap is
the host's own idle time, the one a simulator replaying the profile adds to its own line time,
and a point that sits on a packing threshold (one more packet in a microframe or not, for a cycle
or two) is not taken as evidence for either side of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..model.usb2_hosts import HostProfile
from ..model.usb2_schedule import run_transfers, steady_period
from ..protocol import usb2_wire as wire
from ..protocol.usb2 import CLOCK_HZ
from .observations import Observation

__all__ = ["Prediction", "predict", "START_PHASES", "LINE_EXCESS_CYCLES"]

#: Starts the range of a repeat whose phase varies is taken over, evenly spread over a
#: microframe: every real start is within an eighth of a microframe (16 µs) of one of them.
START_PHASES = 4
#: Most line cycles a transaction takes beyond the specification's budget (see module): the
#: simulated device's 4..7, rounded up to a byte of ULPI clock per packet stage.
LINE_EXCESS_CYCLES = 8


@dataclass(frozen=True)
class Prediction:
    """What the model says a point measures.

    Attributes
    ----------
    throughput : tuple of float
        Host-timed bytes per second, lowest and highest over the starts and line times.
    tail : tuple of float or None
        Seconds of the run outside the device's data span, lowest and highest; ``None`` in the
        steady state.
    """

    throughput: tuple[float, float]
    tail: tuple[float, float] | None


def predict(profile: HostProfile, point: Observation, max_packet_size: int) -> Prediction:
    """The model's figures for ``point``'s run, over :data:`START_PHASES` starts and up to
    :data:`LINE_EXCESS_CYCLES` of line time per transaction beyond the budget (see module)."""
    packets = max(1, math.ceil(point.length / max_packet_size))
    slower = replace(profile, inter_transaction_gap_ns=profile.inter_transaction_gap_ns
                     + LINE_EXCESS_CYCLES * 1e9 / CLOCK_HZ)
    if point.transfers is None:
        periods = [steady_period(line, point.direction, packets=packets,
                                 queue_depth=point.queue_depth, max_packet_size=max_packet_size)
                   for line in (profile, slower)]
        return Prediction((point.length / max(periods), point.length / min(periods)), None)
    durations, tails = [], []
    for line in (profile, slower):
        for phase in range(START_PHASES):
            start = phase * wire.UFRAME_CYCLES // START_PHASES
            run = run_transfers(line, point.direction, packets=packets,
                                queue_depth=point.queue_depth, count=point.transfers,
                                start=start, max_packet_size=max_packet_size)
            durations.append(run.completions[-1] - start)
            tails.append((run.completions[-1] - start - (run.ends[-1] - run.first_start))
                         / CLOCK_HZ)
    moved = point.transfers * point.length * CLOCK_HZ
    return Prediction((moved / max(durations), moved / min(durations)), (min(tails), max(tails)))

