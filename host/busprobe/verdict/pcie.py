"""The PCIe verdict: what the DMA engine's counters, and the device's own run, say about a
``pcie`` plateau.

The engine counts the cycles the link held its TLPs off (credit/backpressure stalls) and the
read completions' latency and requests in flight (:func:`~.telemetry.summarise_pcie`). Stalls
or a latency bound below the link name the path upstream; a link that was ready while the
engine still did not move data names the device (a bug). Where the SoC's firmware ran the same
points itself (no host software per transfer), that run weighs in: at the link model while the
host's run is not, the host's software path is the limit (``driver-limited``).
"""

from __future__ import annotations

from ..protocol.names import Direction
from .evidence import LINK_LIMITED, Finding, GroupEvidence, cap, mb
from .plateau import Plateau
from .telemetry import PcieSummary, summarise_pcie

__all__ = ["pcie_rules"]

#: Share of the transfer window the link may stall the device before it counts as backpressure.
_STALL_FRACTION = 0.05


def pcie_rules(e: GroupEvidence) -> Finding:
    """The ``pcie`` row's verdict rule (:attr:`busprobe.buses.Bus.verdict`)."""
    summary = summarise_pcie(e.telemetries, e.direction)
    verdict, why = _pcie_verdict(e, summary)
    if e.run is not None:
        verdict, why = _device_run_verdict(verdict, why, e, e.run)
    return Finding(verdict, why, summary.__dict__ if summary else None)


def _pcie_verdict(e: GroupEvidence, s: PcieSummary | None) -> tuple[str, str]:
    efficiency, plateau, link, direction = e.efficiency, e.plateau, e.link, e.direction
    head = e.head
    if efficiency >= LINK_LIMITED:
        return "link-limited", f"{cap(head)}."
    if s and s.stall_fraction is not None and s.stall_fraction >= _STALL_FRACTION:
        what = "writes" if direction == Direction.WRITE else "completions"
        return "upstream-limited", (
            f"The link held off the device's {what} for "
            f"{s.stall_fraction * 100:.0f} % of cycles (credit/backpressure stalls); {head}.")
    if direction == Direction.READ and s and s.latency_mean_ns and s.outstanding_max:
        request = e.bus.mrrs or 512
        bound = s.outstanding_max * request / (s.latency_mean_ns * 1e-9)
        if bound < link.throughput * LINK_LIMITED:
            return "upstream-limited", (
                f"Read completions took {s.latency_mean_ns:.0f} ns on average "
                f"(min {s.latency_min_ns or 0:.0f}, max {s.latency_max_ns or 0:.0f}) with at most "
                f"{s.outstanding_max} requests of {request} B in flight, which allows "
                f"{mb(bound)}; {head}.")
    if s and s.stall_fraction is not None:
        return "device-limited", (
            f"DEVICE-LIMITED — must never happen: the link was ready "
            f"({s.stall_fraction * 100:.1f} % stall cycles) yet the device moved only "
            f"{mb(plateau.value)}; {head}. The DMA engine does not keep the link busy.")
    return "upstream-limited", (f"No device telemetry: the host or root complex is slower than "
                                f"the link; {head}.")


def _device_run_verdict(verdict: str, why: str, e: GroupEvidence,
                        run: Plateau) -> tuple[str, str]:
    """The host-run verdict weighed with the device-run: the device's own run at the link model
    while the host's is lower clears the chipset and names the host's software."""
    efficiency, link = e.efficiency, e.link
    run_efficiency = run.value / link.throughput
    ran = (f"run by the device itself (its firmware queues every descriptor, no host software "
           f"per transfer) the plateau is {mb(run.value)} ({run_efficiency * 100:.1f} % of the "
           f"link model)")
    if efficiency >= LINK_LIMITED:
        return verdict, f"{why} {cap(ran)}."
    if run_efficiency >= LINK_LIMITED:
        return "driver-limited", (
            f"Host-run plateau {mb(efficiency * link.throughput)} is "
            f"{efficiency * 100:.1f} % of the link model {mb(link.throughput)}, but {ran}: the "
            "link and the chipset keep up, the host's software path does not (the tool's "
            "driver or the OS: interrupts, completion handling, resubmission).")
    if verdict == "device-limited":
        return verdict, f"{why} {cap(ran)}."
    return "upstream-limited", (
        f"{why} {cap(ran)} too: both are below the link model, so the chipset or the path "
        "upstream of the link is the limit, not the host's software.")
