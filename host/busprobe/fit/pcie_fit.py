"""``busprobe fit`` of a PCIe sweep: a root-complex profile (:mod:`busprobe.model.pcie_hosts`).

What a PCIe sweep can show of the root, and how:

* the read completion boundary, from the device's telemetry: completions per read request
  (``rd_completions / rd_requests``) above what MPS makes means the root splits at every RCB,
  and how many it makes says which;
* the completion latency, where it holds reads down: the device keeps
  :data:`~busprobe.protocol.pcie.READ_TAGS` requests of MRRS in flight, so a latency longer than
  their time on the lane binds reads at ``tags × MRRS / (latency + lane time)`` (the model's
  latency bound); shorter, it does not shape a figure, and the fit says up to what it fits;
* an upstream cap, where it holds the plateau below the link with the link backpressuring the
  device (``tx_stall_cycles``): the plateau itself;
* posted-write credits do not shape a run in the model: left open.

The latencies and the cap are fitted by :mod:`.bounded` against the points whose figure the
model describes: transfers of :data:`MIN_LENGTH` or more at queue depth 2 or more (the PCIe model
has no per-transfer host term, so short or lone transfers read far below it, bounded, not
predicted).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..buses import PCIE
from ..model.bus import bus_from_json
from ..model.pcie import pcie_ceiling
from ..model.pcie_hosts import PcieRootProfile
from ..protocol import pcie as proto
from ..protocol.names import Direction
from .bounded import BoundedFit, Param, Point, fit_bounded
from .sweep_points import SweepPoints, read_points
from .usb3_fit import Setting

__all__ = ["PcieFit", "fit_pcie", "MIN_LENGTH"]

MIN_LENGTH = 16 << 10
SPANS = {"write": ("wr_first_cycle", "wr_last_cycle"), "read": ("rd_first_cycle", "rd_last_cycle")}
LATENCY = Param("completion_latency_ns", "ns", 0.0, 200_000.0, 50.0, 2000.0)


@dataclass(frozen=True)
class PcieFit:
    """A fitted root profile: each schema key's :class:`~.usb3_fit.Setting`, the fit, the data."""

    data: SweepPoints
    settings: dict[str, Setting]
    fit: BoundedFit | None

    def profile(self, name: str) -> PcieRootProfile:
        values = {key: setting.value for key, setting in self.settings.items()}
        return PcieRootProfile(name=name, sources={}, **values)  # type: ignore[arg-type]

    def replay_selector(self, name: str = "fitted") -> str:
        options = {"gen": str(self.data.bus.get("speed") or "gen2").removeprefix("gen"),
                   **self.profile(name).selector_options()}
        return "sim:pcie?" + "&".join(f"{k}={_plain(v)}" for k, v in options.items())


def _plain(value: object) -> str:
    """A selector option value: plain digits (``3.78e+08`` would not survive a query string,
    whose ``+`` reads as a space)."""
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


def fit_pcie(path: str | Path) -> PcieFit:
    """Fit the PCIe result at ``path`` (one-line :class:`ValueError` if it cannot be)."""
    data = read_points(path, PCIE.kind, proto.CLOCK_HZ, SPANS)
    bus = bus_from_json(data.bus)
    extra = {**bus.extra, "outstanding_reads": proto.READ_TAGS}
    modelled = [p for p in data.points if p.length >= MIN_LENGTH and p.queue_depth >= 2]
    settings: dict[str, Setting] = {"read_completion_boundary": _rcb(data, bus.mps or 128)}
    link = {p.label: _model(bus, extra, p, 0.0) for p in modelled}
    capped = [p for p in modelled if p.throughput < 0.95 * link[p.label]
              and sum(_telemetry(data, p, "tx_stall_cycles")) > 0]
    params = [LATENCY]
    if capped:
        top = max(p.throughput for p in capped)
        params.append(Param("upstream_cap", "bytes/s", 0.5 * top, 2.0 * top, 0.001 * top,
                            0.05 * top))

    def predict(values: dict[str, float], point: Point) -> tuple[float, float | None]:
        figure = _model(bus, extra, point, values["completion_latency_ns"])
        cap = values.get("upstream_cap")
        return (min(figure, cap) if cap else figure), None

    found = None
    if modelled:
        starts = [{"completion_latency_ns": latency, "upstream_cap": max(
            (p.throughput for p in capped), default=0.0)} for latency in (0.0, 5000.0, 50000.0)]
        starts = [{k: v for k, v in s.items() if any(p.key == k for p in params)}
                  for s in starts]
        found = fit_bounded(modelled, params, predict, starts=starts)
    settings["completion_latency_ns"] = _latency(found, data)
    settings["upstream_cap"] = _cap(found, capped, modelled)
    cap = found.best.get("upstream_cap") if found is not None else None
    reads = [p for p in modelled if p.direction == Direction.READ]
    if cap and reads and all(p.throughput >= 0.97 * cap for p in reads):
        # Reads at the cap: a latency short enough to stay above it shows nowhere.
        hidden = proto.READ_TAGS * (bus.mrrs or 512) / cap * 1e9
        setting = settings["completion_latency_ns"]
        settings["completion_latency_ns"] = Setting(
            setting.key, 0.0, False,
            f"not determined: every read sat at the upstream cap, which hides any latency up to "
            f"about {hidden:.0f} ns ({proto.READ_TAGS} requests of MRRS in flight at the cap's "
            f"rate); reads of a root without the cap, or longer latency, would show it "
            f"(written: 0; the least squares alone said {setting.value:g} ns)")
    settings["posted_write_credits"] = Setting(
        "posted_write_credits", 0, False,
        "not determined: the model has no posted-credit term and a write held back by "
        "credits looks like one held back by a cap; a root's advertised credits (its "
        "configuration, lspci -vv) say it")
    order = ("completion_latency_ns", "read_completion_boundary", "upstream_cap",
             "posted_write_credits")
    return PcieFit(data, {key: settings[key] for key in order}, found)


def _model(bus: object, extra: dict, point: Point, latency_ns: float) -> float:
    described = replace(bus, mps=point.mps or bus.mps, mrrs=point.mrrs or bus.mrrs,  # type: ignore
                        extra={**extra, "read_latency_ns": latency_ns})
    return pcie_ceiling(described, point.direction, length=point.length,
                        queue_depth=point.queue_depth).throughput


def _telemetry(data: SweepPoints, point: Point, key: str) -> list[int]:
    values = []
    for raw in data.raw:
        if (raw["direction"], raw["length"], raw.get("mps"), raw.get("mrrs")) == (
                point.direction, point.length, point.mps, point.mrrs):
            values += [int((c or {}).get(key) or 0) for c in raw.get("telemetry_repeats") or []]
    return values


def _rcb(data: SweepPoints, mps: int) -> Setting:
    ratios = []
    for raw in data.raw:
        if raw["direction"] != Direction.READ:
            continue
        for counters in raw.get("telemetry_repeats") or []:
            requests, completions = counters.get("rd_requests"), counters.get("rd_completions")
            request = min(raw["length"], raw.get("mrrs") or 512)
            if requests:
                ratios.append((completions / requests, request, raw.get("mps") or mps))
    if not ratios:
        return Setting("read_completion_boundary", 64, False,
                       "not determined: no read point (sweep --direction read)")
    split = [(c, request) for c, request, size in ratios if c > -(-request // size) + 1e-9]
    if not split:
        return Setting("read_completion_boundary", 64, False,
                       "not determined: the root returned completions as large as MPS allows "
                       f"({min(c for c, _, _ in ratios):.2f}..{max(c for c, _, _ in ratios):.2f}"
                       " per request), so its RCB never showed; 64 or 128 fit")
    boundary = 64 if max(c for c, _ in split) > max(r for _, r in split) / 128 else 128
    return Setting("read_completion_boundary", boundary, True,
                   f"exactly: {max(c for c, _ in split):.2f} completions per request of "
                   f"{max(r for _, r in split)} B (telemetry rd_completions / rd_requests)")


def _latency(found: BoundedFit | None, data: SweepPoints) -> Setting:
    means = []
    for raw in data.raw:
        for counters in raw.get("telemetry_repeats") or []:
            count = counters.get("rd_latency_count")
            if count:
                means.append(counters["rd_latency_sum"] / count * 1e9 / proto.CLOCK_HZ)
    evidence = (f"; the device timed reads at {min(means):.0f}..{max(means):.0f} ns on average "
                "from request to first completion, wire and root together" if means else "")
    if found is None:
        return Setting("completion_latency_ns", 0.0, False,
                       f"not determined: no read of {MIN_LENGTH} B or more at queue depth 2 or "
                       f"more{evidence}")
    interval = found.intervals[LATENCY.key]
    text = (f"fits {interval.low:.0f}..{interval.high:.0f} ns (± {interval.half_width:.0f} "
            f"about its middle; least squares {interval.best:.0f}){evidence}")
    if found.determined(LATENCY):
        return Setting(LATENCY.key, round(interval.middle, 1), True, text)
    return Setting(LATENCY.key, round(interval.low, 1), False,
                   f"not determined: reads were never held by latency, so anything up to "
                   f"{interval.high:.0f} ns fits (written: the least); a latency shows where "
                   f"{proto.READ_TAGS} requests in flight stop covering it, e.g. a root slower "
                   f"than their time on the lane; {text}")


def _cap(found: BoundedFit | None, capped: list[Point], modelled: list[Point]) -> Setting:
    if found is None or not capped:
        top = max((p.throughput for p in modelled), default=0.0)
        return Setting("upstream_cap", 0.0, False,
                       f"not determined: no point was held below the link with the device "
                       f"backpressured, so any cap above {top / 1e6:.1f} MB/s fits (written: "
                       "none)")
    interval = found.intervals["upstream_cap"]
    text = (f"fits {interval.low / 1e6:.2f}..{interval.high / 1e6:.2f} MB/s (± "
            f"{interval.half_width / 1e6:.2f} about its middle) from {len(capped)} point(s) "
            "below the link with the link backpressuring the device")
    return Setting("upstream_cap", round(interval.middle, 0), found.intervals[
        "upstream_cap"].closed, text)
