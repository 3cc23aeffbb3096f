"""The parameters a fit estimates: a host profile written as the search sees it.

The search moves along the total turnaround and the share of it spent before the completion, not
along the two latencies themselves: at queue depth 1 a transfer pays their sum, so the misfit is
a long valley along ``completion + resubmit = constant`` that a search along either latency alone
cannot follow.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..model.usb2_hosts import SCHEMA, HostProfile

__all__ = ["Candidate", "CONTINUOUS", "MAX_PER_UFRAME", "NS_PER_CYCLE", "US_PER_CYCLE"]

#: Most bulk packets a microframe holds, from the profile schema (USB 2.0 §5.8.4).
MAX_PER_UFRAME = int(SCHEMA["max_bulk_in_per_uframe"][2])
#: The model and the simulated controller count time in 60 MHz ULPI cycles: nothing finer than
#: one can be told apart (docs/DESIGN.md §4.1).
US_PER_CYCLE = 1 / 60
NS_PER_CYCLE = 1000 / 60
#: The continuous coordinates of :class:`Candidate`, in the search's order.
CONTINUOUS = ("turnaround_us", "completion_share", "gap_ns")


@dataclass(frozen=True)
class Candidate:
    """One set of profile parameters.

    Attributes
    ----------
    per_uframe : tuple of (int, int)
        Bulk packets per microframe, IN then OUT.
    completion_on_uframe : bool
        Completions land on microframe boundaries.
    turnaround_us : float
        Completion plus resubmit latency.
    completion_share : float
        Fraction of the turnaround that is completion latency (0..1).
    gap_ns : float
        Inter-transaction gap.
    """

    per_uframe: tuple[int, int]
    completion_on_uframe: bool
    turnaround_us: float
    completion_share: float
    gap_ns: float

    @property
    def completion_us(self) -> float:
        return self.turnaround_us * self.completion_share

    @property
    def resubmit_us(self) -> float:
        return self.turnaround_us - self.completion_us

    @property
    def continuous(self) -> tuple[float, float, float]:
        return (self.turnaround_us, self.completion_share, self.gap_ns)

    def with_continuous(self, values: tuple[float, ...]) -> Candidate:
        turnaround, share, gap = values
        return replace(self, turnaround_us=turnaround, completion_share=share, gap_ns=gap)

    def with_per_uframe(self, direction: str, packets: int) -> Candidate:
        inward, outward = self.per_uframe
        pair = (packets, outward) if direction == "in" else (inward, packets)
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
