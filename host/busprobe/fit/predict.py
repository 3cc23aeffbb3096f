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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..model import usb2_wire as wire
from ..model.usb2_hosts import HostProfile
from ..model.usb2_schedule import run_transfers, steady_period
from ..protocol.usb2 import CLOCK_HZ
from .observations import Observation

__all__ = ["Prediction", "predict", "START_PHASES"]

#: Starts the range of a repeat whose phase varies is taken over, evenly spread over a
#: microframe: every real start is within an eighth of a microframe (16 µs) of one of them.
START_PHASES = 6


@dataclass(frozen=True)
class Prediction:
    """What the model says a point measures.

    Attributes
    ----------
    throughput : tuple of float
        Host-timed bytes per second, lowest and highest over the starts.
    tail : tuple of float or None
        Seconds of the run outside the device's data span, lowest and highest; ``None`` in the
        steady state.
    """

    throughput: tuple[float, float]
    tail: tuple[float, float] | None


def predict(profile: HostProfile, point: Observation, max_packet_size: int) -> Prediction:
    """The model's figures for ``point``'s run, over :data:`START_PHASES` starts (see module)."""
    packets = max(1, math.ceil(point.length / max_packet_size))
    if point.transfers is None:
        period = steady_period(profile, point.direction, packets=packets,
                               queue_depth=point.queue_depth, max_packet_size=max_packet_size)
        return Prediction((point.length / period,) * 2, None)
    durations, tails = [], []
    for phase in range(START_PHASES):
        start = phase * wire.UFRAME_CYCLES // START_PHASES
        run = run_transfers(profile, point.direction, packets=packets,
                            queue_depth=point.queue_depth, count=point.transfers, start=start,
                            max_packet_size=max_packet_size)
        durations.append(run.completions[-1] - start)
        tails.append((run.completions[-1] - start - (run.ends[-1] - run.first_start)) / CLOCK_HZ)
    moved = point.transfers * point.length * CLOCK_HZ
    return Prediction((moved / max(durations), moved / min(durations)), (min(tails), max(tails)))

