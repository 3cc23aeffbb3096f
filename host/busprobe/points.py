"""A sweep's points: what to measure (:class:`PointSpec`) and what was measured
(:class:`PointResult`, written as the result document's ``points``, docs/DESIGN.md §2.4).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .stats import median_or_none, summarise
from .tool_ceiling import ToolFigure
from .transport import DeviceRunResult

__all__ = ["PointSpec", "PointResult", "TOOL_MARGIN"]

#: A point counts as tool-limited within its repeats' spread of the tool's ceiling, and never
#: closer than this (a deterministic run's spread of 0 would ask for equality).
TOOL_MARGIN = 0.01


@dataclass(frozen=True)
class PointSpec:
    """One point of a sweep: what to measure, before it is measured."""

    direction: str
    length: int
    queue_depth: int
    settings: tuple[tuple[str, int], ...] = ()  # bus settings in force, e.g. (("mps", 256),)

    @property
    def setting(self) -> dict[str, int]:
        return dict(self.settings)



@dataclass
class PointResult:
    """One measured point (see ``results.py`` for its JSON form).

    Throughputs are bytes per second; ``samples`` are host-timed (first submission to last
    completion), ``device_samples`` timed by the device's own counters (``None`` without them).
    """

    spec: PointSpec
    transfers: int  # per repeat
    bytes_per_repeat: int
    sized_by: str  # what set the transfer count (Sweep.transfers_for)
    samples: list[float]
    device_samples: list[float | None]
    seconds: list[float]
    mismatched_words: int
    lost_bytes: int
    device_byte_mismatch: int
    device_errors: int
    first_error_offset: int | None
    short_transfers: int
    telemetry: list[dict[str, Any]]
    ceiling: float | None = None
    ceiling_formula: str | None = None
    #: The most the device's own window can read in these runs (None: no such model).
    device_ceiling: float | None = None
    link: float | None = None
    #: What the host path sustains at this point with no device in it (busprobe.tool_ceiling).
    tool: ToolFigure | None = None
    #: Why each failed repeat failed (:class:`~busprobe.transport.RepeatFailed`); each one
    #: counts all its bytes as lost, and ``samples`` hold the other repeats only.
    failed_repeats: list[str] = field(default_factory=list)
    #: The same point run by the device itself (its firmware, no host software per transfer),
    #: where the transport offers it (:meth:`~busprobe.transport.Transport.device_run`).
    device_runs: list[DeviceRunResult] = field(default_factory=list)

    def _tool_json(self, median: float, spread: float | None) -> dict[str, Any]:
        """The tool's ceiling for this point, and whether the point is within the repeats'
        spread of it (:data:`TOOL_MARGIN` at least): then the tool, not the bus, set it."""
        if self.tool is None:
            return {"tool_ceiling": None}
        margin = max(spread or 0.0, TOOL_MARGIN)
        return {"tool_ceiling": self.tool.bytes_per_s,
                "tool_completions_per_s": self.tool.completions_per_s,
                "tool_path": self.tool.path,
                "tool_limited": median >= self.tool.bytes_per_s * (1 - margin)}

    @property
    def errors(self) -> int:
        return (self.mismatched_words + self.lost_bytes + self.device_byte_mismatch
                + self.device_errors + sum(run.errors for run in self.device_runs))

    def to_json(self) -> dict[str, Any]:
        host = summarise(self.samples)
        device = [s for s in self.device_samples if s is not None]
        device_median = median_or_none(self.device_samples)
        setting = self.spec.setting
        return {
            "direction": self.spec.direction,
            "length": self.spec.length,
            "queue_depth": self.spec.queue_depth,
            # A repeat of fewer transfers than the queue depth never fills the queue.
            "queue_depth_in_force": min(self.spec.queue_depth, self.transfers),
            "mps": setting.get("mps"),
            "mrrs": setting.get("mrrs"),
            "throughput": host.median,
            "throughput_mean": host.mean,
            "throughput_min": host.minimum,
            "throughput_max": host.maximum,
            "spread": host.spread,
            "repeats": host.count,
            "samples": list(self.samples),
            "device_throughput": median_or_none(self.device_samples),
            "device_throughput_min": min(device) if device else None,
            "device_throughput_max": max(device) if device else None,
            "device_samples": list(self.device_samples),
            "seconds": list(self.seconds),
            "transfers": self.transfers,
            "bytes": self.bytes_per_repeat,
            "sized_by": self.sized_by,
            "errors": self.errors,
            "error_detail": {"mismatched_words": self.mismatched_words,
                             "lost_bytes": self.lost_bytes,
                             "device_byte_mismatch": self.device_byte_mismatch,
                             "device_errors": self.device_errors,
                             "first_error_offset": self.first_error_offset,
                             "failed_repeats": list(self.failed_repeats)},
            "short_transfers": self.short_transfers,
            "ceiling": self.ceiling,
            "ceiling_formula": self.ceiling_formula,
            "efficiency": host.median / self.ceiling if self.ceiling else None,
            "device_ceiling": self.device_ceiling,
            "device_efficiency": device_median / self.device_ceiling
            if self.device_ceiling and device_median is not None else None,
            # The figure that answers to physics: device-timed (whole bus intervals) where the
            # device times, over what the link allows; the host's window is reported beside it.
            "link_ceiling": self.link,
            "link_efficiency": (median_or_none(self.device_samples) or host.median) / self.link
            if self.link else None,
            **self._tool_json(host.median, host.spread),
            "telemetry": self.telemetry[-1] if self.telemetry else {},
            "telemetry_repeats": self.telemetry,
            **self._device_run_json(),
        }

    def _device_run_json(self) -> dict[str, Any]:
        """``device_run_throughput`` (median, device-timed) and ``device_run`` (the runs), or
        nothing when the device ran none."""
        if not self.device_runs:
            return {}
        runs = self.device_runs
        return {"device_run_throughput": median_or_none([r.throughput for r in runs]),
                "device_run": {"samples": [r.throughput for r in runs],
                               "bytes": [r.bytes for r in runs],
                               "seconds": [r.seconds for r in runs],
                               "total_seconds": [r.total_seconds for r in runs],
                               "errors": sum(r.errors for r in runs)}}
