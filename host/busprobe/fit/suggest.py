"""Which extra points would pin a parameter down that a sweep left loose.

Two sets of parameters the sweep cannot tell apart (the ends of a parameter's interval, each
with the others re-fitted, :mod:`.uncertainty`) are run through the model at points the sweep
did not measure: a ladder of short lengths (1 to 16 packets, where the microframe phase of a
transfer shows most), powers of two beyond, and queue depths 1, 2, 4 and 8. A point whose
predicted ranges for the two sets do not overlap by more than the sweep's noise would tell them
apart; the ones that separate them most are suggested, sized as the sweep sized its points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

from ..model.usb2_schedule import steady_period
from ..sweep import Sweep
from ..transport import Transport
from .objective import Objective
from .observations import Observation
from .parameters import Candidate
from .predict import predict

__all__ = ["Suggestion", "suggest", "CANDIDATE_DEPTHS", "SHORT_PACKETS", "SUGGESTIONS"]

#: Queue depths tried.
CANDIDATE_DEPTHS = (1, 2, 4, 8)
#: Transfers of 1..16 packets are tried one by one ...
SHORT_PACKETS = 16
#: ... then powers of two up to this many packets (1 MiB of 512-byte packets).
LONG_PACKETS = 2048
#: At most this many points are suggested per parameter.
SUGGESTIONS = 3
#: A point separates two parameter sets when their predicted ranges are this many times the
#: sweep's throughput noise apart.
SEPARATION_IN_NOISE = 2.0


@dataclass(frozen=True)
class Suggestion:
    """A point the sweep did not measure that would tell two parameter sets apart.

    Attributes
    ----------
    direction : str
        ``in`` or ``out``.
    length : int
        Transfer length, bytes.
    queue_depth : int
        Transfers outstanding.
    separation : float
        How far apart the two sets' predictions are, relative (at least twice the noise).
    """

    direction: str
    length: int
    queue_depth: int
    separation: float


def suggest(objective: Objective, first: Candidate, second: Candidate,
            directions: tuple[str, ...]) -> list[Suggestion]:
    """Points that would separate ``first`` from ``second`` (see module), best first."""
    data = objective.data
    mps = data.max_packet_size
    measured = {(p.direction, p.length, p.queue_depth) for p in data.points}
    packets = list(range(1, SHORT_PACKETS + 1))
    while packets[-1] < LONG_PACKETS:
        packets.append(packets[-1] * 2)
    found = []
    for direction in directions:
        for count in packets:
            for depth in CANDIDATE_DEPTHS:
                if (direction, count * mps, depth) in measured:
                    continue
                point = _sized(data.plan, first, direction, count * mps, depth, mps)
                a = predict(first.profile(), point, mps).throughput
                b = predict(second.profile(), point, mps).throughput
                apart = max(b[0] - a[1], a[0] - b[1], 0.0) / ((a[0] + b[1]) / 2)
                if apart >= SEPARATION_IN_NOISE * objective.throughput_noise:
                    found.append(Suggestion(direction, count * mps, depth, apart))
    found.sort(key=lambda s: (-s.separation, s.length, s.queue_depth))
    return found[:SUGGESTIONS]


def _sized(plan: dict, candidate: Candidate, direction: str, length: int, depth: int,
           mps: int) -> Observation:
    """The point as the sweep would have run it: its transfers per repeat by the sweep's own
    sizing rule and the limits the result's plan records (the transport's defaults where it
    records none), at the rate the model expects."""
    limits = {}
    for key in ("min_transfers", "min_bytes", "max_transfers", "min_bus_seconds",
                "max_bus_seconds"):
        value = plan.get(key)
        usable = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
        limits[key] = value if usable else getattr(Transport, key)
    packets = math.ceil(length / mps)
    rate = length / steady_period(candidate.profile(), direction, packets=packets,
                                  queue_depth=depth, max_packet_size=mps)
    # Sweep.transfers_for reads only its transport's limits: the plan's stand in for them.
    sizing = SimpleNamespace(transport=SimpleNamespace(**limits))
    transfers, _ = Sweep.transfers_for(sizing, length, depth, rate)  # type: ignore[arg-type]
    return Observation(direction, length, min(depth, transfers), transfers, rate, 0.0)
