"""``busprobe fit`` of a SuperSpeed sweep: a USB 3.0 host profile (``model/hosts/usb3/*.toml``).

The burst windows are read off the device's telemetry, exactly where the sweep shows them:
``in_nump_max`` is the largest NumP the host granted (the IN window, when a transfer wanted more
packets than that), ``out_burst_max`` the longest run of OUT DPs sent back to back (the OUT
window, when it is shorter than its round trip and than a transfer). The latencies — the host's
turnaround, its re-token delay, completion and resubmit latency — are fitted by the run model
(:mod:`busprobe.model.usb3_run`, through :func:`~busprobe.model.usb3.usb3_ceiling` with a
candidate profile) against every point's host-timed throughput and tail (:mod:`.bounded`).
Credit return does not shape a run unless the device runs out of header credits: it is left
open, with ``header_credit_stalls`` as the evidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from ..buses import USB3_SS
from ..model.bus import bus_from_json
from ..model.usb3 import DP_PAYLOAD, usb3_run_figures
from ..model.usb3_hosts import MAX_BURST_PACKETS, Usb3HostProfile, load_usb3_profile
from ..protocol import usb3
from .bounded import BoundedFit, Param, Point, fit_bounded
from .sweep_points import SweepPoints, read_points

__all__ = ["Usb3Fit", "fit_usb3", "PARAMS", "Setting"]

PARAMS = (
    Param("turnaround_ns", "ns", 0.0, 20000.0, 50.0, 500.0),
    Param("retoken_delay_us", "µs", 0.0, 500.0, 0.5, 5.0),
    Param("completion_latency_us", "µs", 0.0, 1000.0, 0.5, 5.0),
    Param("resubmit_latency_us", "µs", 0.0, 1000.0, 0.5, 5.0),
)
SPANS = {"in": ("in_first_cycle", "in_last_cycle"), "out": ("out_first_cycle", "out_last_cycle")}


@dataclass(frozen=True)
class Setting:
    """One fitted profile value: ``value``, whether the sweep pins it, and in words how sure
    (or why not, and what would)."""

    key: str
    value: float | int
    determined: bool
    text: str


@dataclass(frozen=True)
class Usb3Fit:
    """A fitted SuperSpeed profile: every schema key's :class:`Setting`, the least squares, the
    data, and the replay selector."""

    data: SweepPoints
    settings: dict[str, Setting]
    fit: BoundedFit

    def profile(self, name: str) -> Usb3HostProfile:
        values = {key: setting.value for key, setting in self.settings.items()}
        return Usb3HostProfile(name=name, sources={}, **values)  # type: ignore[arg-type]


def fit_usb3(path: str | Path) -> Usb3Fit:
    """Fit the SuperSpeed result at ``path`` (one-line :class:`ValueError` if it cannot be)."""
    data = read_points(path, USB3_SS.kind, usb3.CLOCK_HZ, SPANS)
    bus = bus_from_json(data.bus)
    mps = bus.max_packet_size or DP_PAYLOAD
    settings = {"max_burst_in": _burst_in(data, mps), "max_burst_out": _burst_out(data, mps)}
    base = replace(load_usb3_profile("ideal"), max_burst_in=int(settings["max_burst_in"].value),
                   max_burst_out=int(settings["max_burst_out"].value))

    def predict(values: dict[str, float], point: Point) -> tuple[float, float | None]:
        return usb3_run_figures(bus, point.direction, replace(base, **values),
                                length=point.length, queue_depth=point.queue_depth,
                                transfers=point.transfers)

    starts = [{"turnaround_ns": t, "retoken_delay_us": r, "completion_latency_us": c,
               "resubmit_latency_us": s} for t, r, c, s in
              ((0.0, 0.0, 0.0, 0.0), (2000.0, 20.0, 20.0, 30.0), (500.0, 5.0, 100.0, 100.0))]
    found = fit_bounded(data.points, PARAMS, predict, starts=starts)
    for param in PARAMS:
        settings[param.key] = _continuous(found, param, data)
    stalls = sum(data.telemetry("header_credit_stalls"))
    settings["credit_return_ns"] = Setting(
        "credit_return_ns", 0.0, False,
        f"not determined: the device {'never' if not stalls else f'for {stalls} cycles'} "
        "waited for a header credit, and the run model has no credit term; a long burst of "
        "short OUT transfers at the device's full window would show a slow return")
    order = ("max_burst_in", "max_burst_out", "turnaround_ns", "retoken_delay_us",
             "credit_return_ns", "completion_latency_us", "resubmit_latency_us")
    return Usb3Fit(data, {key: settings[key] for key in order}, found)


def _packets(data: SweepPoints, direction: str, mps: int) -> int:
    return max((math.ceil(p.length / mps) for p in data.points if p.direction == direction),
               default=0)


def _burst_in(data: SweepPoints, mps: int) -> Setting:
    granted = max(data.telemetry("in_nump_max", "in"), default=0)
    wanted = _packets(data, "in", mps)
    if not wanted or not granted:
        return Setting("max_burst_in", MAX_BURST_PACKETS, False,
                       "not determined: no IN point with telemetry (sweep --direction in)")
    if granted < wanted:
        return Setting("max_burst_in", granted, True,
                       f"exactly: the host granted at most NumP {granted} (telemetry "
                       f"in_nump_max) to transfers of up to {wanted} packets")
    return Setting("max_burst_in", granted, False,
                   f"not determined: the host granted every packet the longest IN transfer "
                   f"wanted ({granted}); an IN transfer of more than {granted} packets (e.g. "
                   f"--lengths {2 * MAX_BURST_PACKETS * mps // 1024}K) would show the window")


def _burst_out(data: SweepPoints, mps: int) -> Setting:
    longest = max(data.telemetry("out_burst_max", "out"), default=0)
    wanted = _packets(data, "out", mps)
    if not wanted or not longest:
        return Setting("max_burst_out", MAX_BURST_PACKETS, False,
                       "not determined: no OUT point with telemetry (sweep --direction out)")
    if longest < min(wanted, 31):
        return Setting("max_burst_out", longest, True,
                       f"exactly: the host sent at most {longest} OUT DP(s) back to back "
                       f"(telemetry out_burst_max) in transfers of up to {wanted} packets")
    return Setting("max_burst_out", min(longest, MAX_BURST_PACKETS), False,
                   "not determined: OUT DPs ran back to back through whole transfers (the "
                   "window covers its round trip); a host turnaround long enough to open gaps "
                   "is what shows it")


def _continuous(found: BoundedFit, param: Param, data: SweepPoints) -> Setting:
    interval = found.intervals[param.key]
    digits = 0 if param.unit == "ns" else 2
    text = (f"fits {interval.low:.{digits}f}..{interval.high:.{digits}f} {param.unit} "
            f"(± {interval.half_width:.{digits}f} about its middle; least squares "
            f"{interval.best:.{digits}f})")
    value = round(interval.middle if interval.closed else interval.best, digits or 1)
    if found.determined(param):
        return Setting(param.key, value, True, text)
    upper = "" if interval.closed else " and more (the misfit never rose)"
    return Setting(param.key, value, False,
                   f"not determined: the sweep allows {interval.low:.{digits}f}.."
                   f"{interval.high:.{digits}f} {param.unit}{upper}; {_hint(param.key)}; {text}")


def _hint(key: str) -> str:
    return {
        "turnaround_ns": "a direction whose burst window is shorter than its round trip shows "
                         "it (a sweep with ?burst=1, or of a host that does not burst OUT)",
        "retoken_delay_us": "a ladder of short transfers at queue depth 2 or more shows it "
                            "(e.g. --lengths 4K..64K --queue-depth 2)",
        "completion_latency_us": "the device's first/last cycle counters show it (points with "
                                 "telemetry at queue depth 1)",
        "resubmit_latency_us": "a queue depth 1 ladder of short transfers shows it, once the "
                               "completion latency is known (e.g. --lengths 1K..64K "
                               "--queue-depth 1)",
    }[key]
