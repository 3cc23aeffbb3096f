"""The verdict: what limits a measured plateau, in one or two sentences with the numbers.

For every direction (and PCIe MPS/MRRS setting) of a result, :func:`assess` finds the plateau of
the deepest queue depth's curve, compares it with the *link* model (what the bus allows, whatever
the host) and names the limit:

``link-limited``
    The plateau is at least :data:`LINK_LIMITED` (95 %) of the link model.
``host-limited``
    USB: the device was ready (no NAKs) but the host scheduled fewer packets per microframe than
    the bus allows, or left microframes empty between transfers (device telemetry).
``driver-limited``
    PCIe with the SoC's firmware: run by the device itself (no host software per transfer) the
    same points reach the link model, run by the host they do not: the host's software path
    (the tool's driver, the OS's interrupt and completion handling) is the limit.
``upstream-limited``
    PCIe: the link or root complex held the device's TLPs off (stall cycles), or read
    completions took so long that the requests in flight bound the throughput; where the
    device ran the points itself too, its figure is below the link model as well.
``device-limited``
    The device NAKed / was not ready, or the link was ready and the device still did not send.
    The device is built never to be the bottleneck, so this names a bug, loudly.
``tool-limited``
    A plateau point is within its repeats' spread of what busprobe's own host path sustains on
    this machine (``tool_ceiling``, :mod:`busprobe.tool_ceiling`): the figure says how fast
    the tool is, and nothing about the bus; what the bus verdict would be follows.

Each bus row (:mod:`busprobe.buses`) names its rule (:attr:`~busprobe.buses.Bus.verdict`):
USB 2.0's reads NAKs and packets per microframe (:mod:`.usb2`), SuperSpeed's the NumP window,
NRDYs and bus intervals with data (:mod:`.usb3`), PCIe's stalls, read latency and the device's
own run (:mod:`.pcie`); a bus without device counters gets :func:`generic_rules`. This module
finds the plateau, the link model and the notes every bus shares, and never branches on the bus:
where a row asks for it (:attr:`~busprobe.buses.Bus.profile_beside_link`, USB) the host
profile's own ceiling is reported beside the link model, so an EHCI run at 100 % of its profile
still reads as host-limited at 77 % of the link.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import buses
from ..lengths import format_size
from ..model import Ceiling, ceiling_for, link_ceiling
from ..model.bus import bus_from_json
from ..protocol.names import Direction, Framing
from ..transport import BusDescription
from ..units import Units
from .evidence import (
    LINK_LIMITED,
    VERDICTS,
    Finding,
    GroupEvidence,
    PointRecord,
    VerdictRule,
    cap,
    mb,
    units_in_force,
)
from .plateau import DEFAULT_TOLERANCE, Plateau, detect_plateau

__all__ = ["assess", "generic_rules", "Assessment", "LINK_LIMITED", "VERDICTS"]

#: A group of points: direction, MPS and (reads only) MRRS.
GroupKey = tuple[str, int | None, int | None]


def _group_key(point: PointRecord) -> GroupKey:
    mrrs = point.mrrs if point.direction == Direction.READ else None
    return point.direction, point.mps, mrrs


def _curve(points: Sequence[PointRecord],
           queue_depth: int) -> list[tuple[int, float, float | None]]:
    """``(length, throughput, spread of its repeats)`` of the points at ``queue_depth``."""
    return [(p.length, p.throughput, p.spread) for p in points
            if p.queue_depth == queue_depth and p.throughput]


def assess(result: Mapping[str, Any], *, tolerance: float = DEFAULT_TOLERANCE,
           units: Units = Units.MB) -> list[dict]:
    """One verdict per direction (and MPS/MRRS) of ``result`` (``ceilings``, docs/DESIGN.md §2.4).

    Each entry is an :class:`Assessment` as JSON. Figures in the explanation are in ``units``;
    the numeric fields are always bytes/s.
    """
    token = units_in_force.set(units)
    try:
        return [entry.to_json() for entry in _assess(result, tolerance)]
    finally:
        units_in_force.reset(token)


def _assess(result: Mapping[str, Any], tolerance: float) -> list[Assessment]:
    bus = bus_from_json(result.get("bus") or {})
    groups: dict[GroupKey, list[PointRecord]] = {}
    for raw in result.get("points") or []:
        point = PointRecord.from_json(raw)
        groups.setdefault(_group_key(point), []).append(point)
    entries = []
    for (direction, mps, mrrs), points in groups.items():
        entry = _assess_group(bus, direction, mps, mrrs, points, tolerance)
        if entry is not None:
            entries.append(entry)
    return entries


@dataclass
class Assessment:
    """The verdict on one direction (and PCIe setting) of a result: a ``ceilings`` entry.

    Attributes
    ----------
    direction : str
        The direction assessed.
    mps, mrrs : int or None
        Its PCIe settings (None elsewhere; ``mrrs`` for reads only).
    link : Ceiling
        The link model: ``model``, ``model_name`` and ``model_formula`` in the JSON.
    plateau : Plateau
        The deepest queue's plateau: ``plateau``, ``plateau_spread``, ``plateau_lengths``,
        ``plateau_reached``, ``plateau_start`` (None when not reached), ``plateau_band``,
        ``plateau_why`` (None when reached).
    queue_depth : int
        The deepest queue depth, whose curve is assessed.
    profile : Ceiling or None
        The host profile's ceiling, where the bus row reports it (``profile``,
        ``profile_ceiling``, ``profile_efficiency``; left out of the JSON without one).
    device : Plateau or None
        Plateau of the device-timed figures (``device_plateau``, ``device_efficiency`` and,
        with a profile, ``device_profile_efficiency``).
    run : Plateau or None
        Plateau of the device's own run (``device_run_plateau``, ``device_run_efficiency``).
    qd_effect : dict or None
        What the deepest queue gained over the shallowest.
    finding : Finding
        The verdict (``verdict``), its sentence(s) (``explanation``, with :attr:`notes`) and
        the evidence read (``evidence``).
    notes : list of str
        Further sentences the explanation carries.
    """

    direction: str
    mps: int | None
    mrrs: int | None
    link: Ceiling
    plateau: Plateau
    queue_depth: int
    profile: Ceiling | None
    device: Plateau | None
    run: Plateau | None
    qd_effect: dict[str, Any] | None
    finding: Finding
    notes: list[str]

    @property
    def efficiency(self) -> float:
        return self.plateau.value / self.link.throughput

    def to_json(self) -> dict[str, Any]:
        """The entry as the result document holds it (its keys in this order)."""
        plateau, link = self.plateau, self.link
        out: dict[str, Any] = {
            "direction": self.direction, "mps": self.mps, "mrrs": self.mrrs,
            "model": link.throughput, "model_name": link.model, "model_formula": link.formula,
            "plateau": plateau.value, "plateau_spread": plateau.spread,
            "plateau_lengths": list(plateau.lengths), "plateau_reached": plateau.reached,
            "plateau_start": plateau.start if plateau.reached else None,
            "plateau_band": plateau.band, "plateau_why": plateau.why or None,
            "queue_depth": self.queue_depth, "efficiency": self.efficiency,
            "units": "bytes/s",
        }
        if self.profile is not None:
            out.update(profile=self.profile.parts["host_profile"],
                       profile_ceiling=self.profile.throughput,
                       profile_efficiency=plateau.value / self.profile.throughput)
        device, run = self.device, self.run
        out["device_plateau"] = device.value if device else None
        out["device_efficiency"] = device.value / link.throughput if device else None
        out["device_run_plateau"] = run.value if run else None
        out["device_run_efficiency"] = run.value / link.throughput if run else None
        if device and self.profile is not None:
            out["device_profile_efficiency"] = device.value / self.profile.throughput
        out["qd_effect"] = self.qd_effect
        out["evidence"] = self.finding.evidence
        out["verdict"] = self.finding.verdict
        out["explanation"] = " ".join([self.finding.why, *self.notes])
        return out


def _rules(bus: BusDescription) -> tuple[VerdictRule, bool]:
    """The verdict rule of ``bus``'s row and whether the row reports its host profile."""
    row = buses.by_kind(bus.kind)
    return buses.load(row.verdict), row.profile_beside_link


def _assess_group(bus: BusDescription, direction: str, mps: int | None, mrrs: int | None,
                  points: Sequence[PointRecord], tolerance: float) -> Assessment | None:
    clean = [p for p in points if not p.errors]
    dropped = len(points) - len(clean)
    depths = sorted({p.queue_depth for p in clean if p.queue_depth is not None})
    if not depths:
        return None
    deep, shallow = depths[-1], depths[0]
    plateau = detect_plateau(_curve(clean, deep), tolerance=tolerance)
    if plateau is None:
        return None
    if mps is not None:
        bus = replace(bus, mps=mps)
    if mrrs is not None:
        bus = replace(bus, mrrs=mrrs)
    link = link_ceiling(bus, direction)
    rule, with_profile = _rules(bus)
    profile = ceiling_for(bus, direction) if with_profile else None
    # The device's own timing (first to last data on the bus) leaves out the host's start-up and
    # completion time of each measurement: it is the figure the bus model predicts.
    device = detect_plateau([(p.length, p.device_throughput) for p in clean
                             if p.queue_depth == deep and p.device_throughput],
                            tolerance=tolerance)
    # The same points run by the device itself (no host software in the loop), where it can.
    run = detect_plateau(sorted({(p.length, p.device_run_throughput)
                                 for p in clean if p.device_run_throughput}),
                         tolerance=tolerance)
    telemetries = [p.telemetry for p in clean
                   if p.queue_depth == deep and p.length in plateau.lengths]
    efficiency = plateau.value / link.throughput
    finding = rule(GroupEvidence(bus, direction, plateau, link, efficiency, profile, run,
                                 telemetries, deep))
    # (the longest point's run: a BOT note compares the plateau with the ceiling of that run)
    longest = max(plateau.lengths)
    run_of = next((p.transfers for p in clean
                   if p.queue_depth == deep and p.length == longest), None)
    notes = _notes(bus, direction, plateau, link, profile, device, dropped, run_of)
    tool = [p for p in clean if p.queue_depth == deep and p.tool_limited
            and p.length in plateau.lengths]
    if tool:
        notes.insert(0, f"Otherwise {finding.verdict}: {finding.why}")
        finding = replace(finding, verdict="tool-limited", why=_tool_sentence(tool[0]))
    return Assessment(direction, mps, mrrs, link, plateau, deep, profile, device, run,
                      _qd_effect(clean, shallow, deep, plateau, tolerance), finding, notes)


def _notes(bus: BusDescription, direction: str, plateau: Plateau, link: Ceiling,
           profile: Ceiling | None, device: Plateau | None, dropped: int,
           transfers: int | None = None) -> list[str]:
    """What the explanation adds after the rule's sentence(s), on every bus."""
    efficiency = plateau.value / link.throughput
    notes = [note for note in (_unreached_note(plateau),) if note]
    # Said when the clocks disagree, and always when the host's window reads above the link:
    # a figure above the physics must come with the instrument's own reading beside it.
    if device and (abs(device.value / plateau.value - 1) > 0.02 or efficiency > 1):
        reference = profile if profile is not None and profile.parts["host_profile"] != "ideal" \
            else link
        notes.append(f"Timed by the device the plateau is {mb(device.value)} "
                     f"({device.value / reference.throughput * 100:.1f} % of "
                     f"{'the host profile' if reference is profile else 'the link model'}); the "
                     "host's window (first submission to last completion) adds each "
                     "measurement's start-up and completion and leaves out the idle end of its "
                     "last bus interval.")
    if dropped:
        notes.append(f"{dropped} point(s) with data errors were left out.")
    if bus.protocol == Framing.BOT:
        notes.append(_bot_note(bus, direction, plateau, transfers))
    return notes


def generic_rules(e: GroupEvidence) -> Finding:
    """The rule of a bus without device counters (a kernel's block device): the link model
    alone."""
    if e.efficiency >= LINK_LIMITED:
        return Finding("link-limited", f"{cap(e.head)}.")
    return Finding("host-limited", f"No device telemetry to tell more; {e.head}.")


def _tool_sentence(point: PointRecord) -> str:
    return (f"TOOL-LIMITED: at {point.length} B and queue depth {point.queue_depth} "
            f"busprobe's own host path ({point.tool_path}) sustains "
            f"{float(point.tool_completions_per_s or 0) / 1e3:.0f} k completions/s = "
            f"{mb(point.tool_ceiling or 0.0)} on this machine with no device in it, within "
            f"the repeats' spread of the measured {mb(point.throughput or 0.0)}: the figure "
            "is the tool's, not the bus's.")


def _bot_note(bus: BusDescription, direction: str, plateau: Plateau,
              transfers: int | None = None) -> str:
    """What BOT framing allows at the plateau's longest length (``model/usb2_bot.py``), for a
    run of ``transfers`` commands where the point says how many it ran (a short run's first
    command pays no resubmit: the steady state alone read 101.1 % behind ``vl805`` at 256 KiB
    reads, 4 commands a repeat)."""
    longest = max(plateau.lengths)
    note = ("BOT framing: one command at a time, each paying the host's completion and resubmit "
            "latency for its CBW, data and CSW")
    # A disk the kernel's usb-storage drives is compared with one its uas driver drives.
    other = buses.by_kind(bus.kind).bot_counterpart
    try:
        framed = ceiling_for(bus, direction, length=longest, queue_depth=1,
                             transfers=transfers)
    except (ValueError, NotImplementedError, KeyError):
        return note + f"; busprobe compare with {other}."
    run = f" for a run of {transfers} commands" if transfers else ""
    return (f"{note}: at {longest} B the BOT model allows {mb(framed.throughput)}{run} "
            f"(the plateau is {plateau.value / framed.throughput * 100:.1f} % of it); busprobe "
            f"compare with {other}.")


def _qd_effect(points: Sequence[PointRecord], shallow: int, deep: int, plateau: Plateau,
               tolerance: float) -> dict[str, Any] | None:
    if shallow == deep:
        return None
    low = detect_plateau(_curve(points, shallow), tolerance=tolerance)
    if low is None:
        return None
    # Compare at the same length as well: where the deep queue's plateau starts (the QD 1
    # plateau may sit further out), or, with no plateau, at the deep curve's shortest length.
    at = plateau.start if plateau.reached else min(
        p.length for p in points if p.queue_depth == deep)
    at_start = [(p.length, p.throughput) for p in points
                if p.queue_depth == shallow and p.length == at]
    return {"queue_depths": [shallow, deep], "plateau_low": low.value,
            "plateau_high": plateau.value, "gain": plateau.value / low.value - 1,
            "at_length": at,
            "low_at_length": float(at_start[0][1] or 0.0) if at_start else None}


def _unreached_note(plateau: Plateau) -> str:
    """What a curve without a plateau means for its figure (empty when it has one)."""
    band = f"{plateau.band * 100:.1f} %"
    longest = format_size(plateau.start)
    if plateau.reached:
        return ""
    if plateau.why == "one length":
        return (f"Plateau not reached: one length was swept, and a plateau needs two that agree "
                f"within {band}; the figure is {longest}'s.")
    if plateau.why == "falling":
        return (f"Plateau not reached: the figure falls at the longest length by more than "
                f"{band} (the larger of the repeats' spread and 1 %); the figure is "
                f"{longest}'s.")
    return (f"Plateau not reached: the curve was still rising at the longest length (the two "
            f"longest differ by more than {band}, the larger of the repeats' spread and 1 %): "
            f"sweep longer transfers (the figure, {longest}'s, is a lower bound).")
