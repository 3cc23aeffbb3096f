"""The parameters a fit estimates: a host profile as the search sees it.

The search moves along the completion latency, the turnaround (completion + resubmit) and the
gap, not along the two latencies: the device telemetry's tail pins the completion latency and
the queue-depth-1 points pin the turnaround, so along these axes each sharp direction of the
misfit is one coordinate. Along the two latencies it would be a long diagonal valley
(``completion + resubmit = constant``) that steps along either one alone cannot follow.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..model.usb2_hosts import SCHEMA, HostProfile
from ..protocol.names import Direction

__all__ = ["Candidate", "CONTINUOUS", "MAX_PER_UFRAME", "NS_PER_CYCLE", "US_PER_CYCLE"]

#: Most bulk packets a microframe holds, from the profile schema (USB 2.0 §5.8.4).
MAX_PER_UFRAME = int(SCHEMA["max_bulk_in_per_uframe"][2])
#: The model and the simulated controller count time in 60 MHz ULPI cycles: nothing finer than
#: one can be told apart (docs/DESIGN.md §6.1).
US_PER_CYCLE = 1 / 60
NS_PER_CYCLE = 1000 / 60
#: The search's coordinates (:attr:`Candidate.continuous`), in order.
CONTINUOUS = ("completion_us", "turnaround_us", "gap_ns")


@dataclass(frozen=True)
class Candidate:
    """One set of profile parameters.

    Attributes
    ----------
    per_uframe : tuple of (int, int)
        Bulk packets per microframe, IN then OUT.
    completion_on_uframe : bool
        Completions land on microframe boundaries.
    completion_us, resubmit_us : float
        Completion and resubmit latency.
    gap_ns : float
        Inter-transaction gap.
    """

    per_uframe: tuple[int, int]
    completion_on_uframe: bool
    completion_us: float
    resubmit_us: float
    gap_ns: float

    @property
    def turnaround_us(self) -> float:
        return self.completion_us + self.resubmit_us

    @property
    def continuous(self) -> tuple[float, float, float]:
        """The search's coordinates: completion, turnaround, gap."""
        return (self.completion_us, self.turnaround_us, self.gap_ns)

    def with_continuous(self, values: tuple[float, ...]) -> Candidate:
        """These parameters at search coordinates ``values`` (a turnaround shorter than the
        completion leaves no resubmit latency, not a negative one)."""
        completion, turnaround, gap = values
        return replace(self, completion_us=completion,
                       resubmit_us=max(0.0, turnaround - completion), gap_ns=gap)

    def with_per_uframe(self, direction: str, packets: int) -> Candidate:
        inward, outward = self.per_uframe
        pair = (packets, outward) if direction == Direction.IN else (inward, packets)
        return replace(self, per_uframe=pair)

    def key(self) -> tuple:
        """Identity up to the model's resolution (one line cycle), for caching evaluations."""
        return (self.per_uframe, self.completion_on_uframe,
                round(self.completion_us / US_PER_CYCLE), round(self.resubmit_us / US_PER_CYCLE),
                round(self.gap_ns / NS_PER_CYCLE * 8))

    def profile(self, name: str = "fitted", sources: dict[str, str] | None = None) -> HostProfile:
        """The :class:`HostProfile` these parameters describe."""
        return HostProfile(
            name=name, max_bulk_in_per_uframe=self.per_uframe[0],
            max_bulk_out_per_uframe=self.per_uframe[1],
            inter_transaction_gap_ns=self.gap_ns, completion_latency_us=self.completion_us,
            resubmit_latency_us=self.resubmit_us,
            completion_on_uframe=self.completion_on_uframe, sources=dict(sources or {}))
