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

For USB the host profile's own ceiling is reported beside the link model, so an EHCI run at
100 % of its profile still reads as host-limited at 77 % of the link. SuperSpeed's evidence
(the NumP window, NRDYs, bus intervals with data) is read by :mod:`.usb3`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from ..buses import PCIE, USB2_HS, USB3_SS
from ..lengths import format_size
from ..model import Ceiling, ceiling_for, link_ceiling
from ..model.bus import bus_from_json
from ..protocol.names import Direction, Framing
from ..transport import BusDescription
from ..units import Units
from .plateau import DEFAULT_TOLERANCE, Plateau, detect_plateau
from .telemetry import PcieSummary, Usb2Summary, summarise_pcie, summarise_usb2
from .usb3 import summarise_usb3, usb3_verdict

__all__ = ["assess", "LINK_LIMITED", "VERDICTS"]

#: Plateau / link model at or above which a run is link-limited.
LINK_LIMITED = 0.95
VERDICTS = ("link-limited", "host-limited", "driver-limited", "upstream-limited",
            "device-limited", "tool-limited")
#: NAKs per token above which the device, not the host, is the reason (a few NAKs at the start
#: of a point, before the source primes, are not).
_NAK_FRACTION = 0.01
#: Share of the transfer window the link may stall the device before it counts as backpressure.
_STALL_FRACTION = 0.05
#: Share of busy microframes that must carry data before gaps count as the host's.
_DATA_UFRAMES = 0.9


_units: ContextVar[Units] = ContextVar("busprobe_verdict_units", default=Units.MB)


def _mb(value: float) -> str:
    """A throughput in the units :func:`assess` was asked for (MB/s unless told)."""
    return _units.get().format(value)


def _group_key(point: Mapping[str, Any]) -> tuple[str, int | None, int | None]:
    direction = str(point["direction"])
    mrrs = point.get("mrrs") if direction == Direction.READ else None
    return direction, point.get("mps"), mrrs


def _curve(points: Sequence[Mapping[str, Any]],
           queue_depth: int) -> list[tuple[int, float, float | None]]:
    """``(length, throughput, spread of its repeats)`` of the points at ``queue_depth``."""
    return [(int(p["length"]), float(p["throughput"]), p.get("spread")) for p in points
            if p.get("queue_depth") == queue_depth and p.get("throughput")]


def assess(result: Mapping[str, Any], *, tolerance: float = DEFAULT_TOLERANCE,
           units: Units = Units.MB) -> list[dict]:
    """One verdict per direction (and MPS/MRRS) of ``result`` (``ceilings``, docs/DESIGN.md §3).

    Each entry: ``direction``, ``mps``, ``mrrs``, ``model`` (link model, bytes/s),
    ``model_name``, ``model_formula``, ``plateau``, ``plateau_spread``, ``plateau_lengths``,
    ``plateau_reached``, ``efficiency`` (plateau / model), ``verdict``, ``explanation``,
    ``qd_effect`` and ``evidence`` (the telemetry summary used); USB 2.0 adds
    ``profile``, ``profile_ceiling`` and ``profile_efficiency``. ``device_plateau`` and
    ``device_efficiency`` come from the device-timed throughput when recorded (it leaves out the
    host's per-measurement start-up and completion time). Figures in the explanation are
    in ``units``; the numeric fields are always bytes/s.
    """
    token = _units.set(units)
    try:
        return _assess(result, tolerance)
    finally:
        _units.reset(token)


def _assess(result: Mapping[str, Any], tolerance: float) -> list[dict]:
    bus = bus_from_json(result.get("bus") or {})
    groups: dict[tuple[str, int | None, int | None], list[Mapping[str, Any]]] = {}
    for point in result.get("points") or []:
        groups.setdefault(_group_key(point), []).append(point)
    entries = []
    for (direction, mps, mrrs), points in groups.items():
        entry = _assess_group(bus, direction, mps, mrrs, points, tolerance)
        if entry is not None:
            entries.append(entry)
    return entries


def _assess_group(bus: BusDescription, direction: str, mps: int | None, mrrs: int | None,
                  points: Sequence[Mapping[str, Any]], tolerance: float) -> dict | None:
    clean = [p for p in points if not p.get("errors")]
    dropped = len(points) - len(clean)
    depths = sorted({int(p["queue_depth"]) for p in clean})
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
    efficiency = plateau.value / link.throughput
    entry: dict[str, Any] = {
        "direction": direction, "mps": mps, "mrrs": mrrs,
        "model": link.throughput, "model_name": link.model, "model_formula": link.formula,
        "plateau": plateau.value, "plateau_spread": plateau.spread,
        "plateau_lengths": list(plateau.lengths), "plateau_reached": plateau.reached,
        "plateau_start": plateau.start if plateau.reached else None,
        "plateau_band": plateau.band, "plateau_why": plateau.why or None,
        "queue_depth": deep, "efficiency": efficiency, "units": "bytes/s",
    }
    profile: Ceiling | None = None
    if bus.kind in (USB2_HS.kind, USB3_SS.kind):
        profile = ceiling_for(bus, direction)
        entry.update(profile=profile.parts["host_profile"], profile_ceiling=profile.throughput,
                     profile_efficiency=plateau.value / profile.throughput)
    # The device's own timing (first to last data on the bus) leaves out the host's start-up and
    # completion time of each measurement: it is the figure the bus model predicts.
    device = detect_plateau([(int(p["length"]), float(p["device_throughput"])) for p in clean
                             if p.get("queue_depth") == deep and p.get("device_throughput")],
                            tolerance=tolerance)
    entry["device_plateau"] = device.value if device else None
    entry["device_efficiency"] = device.value / link.throughput if device else None
    # The same points run by the device itself (no host software in the loop), where it can.
    run = detect_plateau(sorted({(int(p["length"]), float(p["device_run_throughput"]))
                                 for p in clean if p.get("device_run_throughput")}),
                         tolerance=tolerance)
    entry["device_run_plateau"] = run.value if run else None
    entry["device_run_efficiency"] = run.value / link.throughput if run else None
    if device and profile is not None:
        entry["device_profile_efficiency"] = device.value / profile.throughput
    entry["qd_effect"] = _qd_effect(clean, shallow, deep, plateau, tolerance)
    telemetries = [p.get("telemetry") or {} for p in clean
                   if p.get("queue_depth") == deep and int(p["length"]) in plateau.lengths]
    if bus.kind == USB2_HS.kind:
        summary_u = summarise_usb2(telemetries, direction)
        verdict, why = _usb2_verdict(efficiency, plateau, link, profile, summary_u)
        entry["evidence"] = summary_u.__dict__ if summary_u else None
    elif bus.kind == USB3_SS.kind:
        summary_3 = summarise_usb3(telemetries, direction)
        verdict, why = usb3_verdict(efficiency, _header(plateau, link, efficiency), profile,
                                    summary_3, LINK_LIMITED, _mb)
        entry["evidence"] = summary_3.__dict__ if summary_3 else None
    elif bus.kind == PCIE.kind:
        summary_p = summarise_pcie(telemetries, direction)
        verdict, why = _pcie_verdict(efficiency, plateau, link, bus, direction, summary_p)
        if run is not None:
            verdict, why = _device_run_verdict(verdict, why, efficiency, run, link)
        entry["evidence"] = summary_p.__dict__ if summary_p else None
    else:
        verdict, why = _generic_verdict(efficiency, plateau, link)
        entry["evidence"] = None
    notes = [note for note in (_unreached_note(plateau),) if note]
    # Said when the clocks disagree, and always when the host's window reads above the link:
    # a figure above the physics must come with the instrument's own reading beside it.
    if device and (abs(device.value / plateau.value - 1) > 0.02 or efficiency > 1):
        reference = profile if profile is not None and profile.parts["host_profile"] != "ideal" \
            else link
        notes.append(f"Timed by the device the plateau is {_mb(device.value)} "
                     f"({device.value / reference.throughput * 100:.1f} % of "
                     f"{'the host profile' if reference is profile else 'the link model'}); the "
                     "host's window (first submission to last completion) adds each "
                     "measurement's start-up and completion and leaves out the idle end of its "
                     "last bus interval.")
    if dropped:
        notes.append(f"{dropped} point(s) with data errors were left out.")
    if bus.protocol == Framing.BOT:
        notes.append(_bot_note(bus, direction, plateau))
    tool = [p for p in clean if p.get("queue_depth") == deep and p.get("tool_limited")
            and int(p["length"]) in plateau.lengths]
    if tool:
        notes.insert(0, f"Otherwise {verdict}: {why}")
        verdict, why = "tool-limited", _tool_sentence(tool[0])
    entry["verdict"] = verdict
    entry["explanation"] = " ".join([why, *notes])
    return entry


def _tool_sentence(point: Mapping[str, Any]) -> str:
    return (f"TOOL-LIMITED: at {point['length']} B and queue depth {point['queue_depth']} "
            f"busprobe's own host path ({point.get('tool_path')}) sustains "
            f"{float(point.get('tool_completions_per_s') or 0) / 1e3:.0f} k completions/s = "
            f"{_mb(float(point['tool_ceiling']))} on this machine with no device in it, within "
            f"the repeats' spread of the measured {_mb(float(point['throughput']))}: the figure "
            "is the tool's, not the bus's.")


def _bot_note(bus: BusDescription, direction: str, plateau: Plateau) -> str:
    """What BOT framing allows at the plateau's longest length (``model/usb2_bot.py``)."""
    longest = max(plateau.lengths)
    note = ("BOT framing: one command at a time, each paying the host's completion and resubmit "
            "latency for its CBW, data and CSW")
    # A disk the kernel's usb-storage drives is compared with one its uas driver drives.
    other = "a UAS run shows how far BOT is behind" if bus.kind == "usb-storage" else \
        "a streamed run shows the overhead per length"
    try:
        framed = ceiling_for(bus, direction, length=longest, queue_depth=1)
    except (ValueError, NotImplementedError, KeyError):
        return note + f"; busprobe compare with {other}."
    return (f"{note}: at {longest} B the BOT model allows {_mb(framed.throughput)} "
            f"(the plateau is {plateau.value / framed.throughput * 100:.1f} % of it); busprobe "
            f"compare with {other}.")


def _qd_effect(points: Sequence[Mapping[str, Any]], shallow: int, deep: int, plateau: Plateau,
               tolerance: float) -> dict[str, Any] | None:
    if shallow == deep:
        return None
    low = detect_plateau(_curve(points, shallow), tolerance=tolerance)
    if low is None:
        return None
    # Compare at the same length as well: where the deep queue's plateau starts (the QD 1
    # plateau may sit further out), or, with no plateau, at the deep curve's shortest length.
    at = plateau.start if plateau.reached else min(
        int(p["length"]) for p in points if p.get("queue_depth") == deep)
    at_start = [(p["length"], p["throughput"]) for p in points
                if p.get("queue_depth") == shallow and p["length"] == at]
    return {"queue_depths": [shallow, deep], "plateau_low": low.value,
            "plateau_high": plateau.value, "gain": plateau.value / low.value - 1,
            "at_length": at,
            "low_at_length": float(at_start[0][1]) if at_start else None}


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


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


def _header(plateau: Plateau, link: Ceiling, efficiency: float) -> str:
    what = (f"plateau {_mb(plateau.value)} (from {format_size(plateau.start)})"
            if plateau.reached else
            f"{format_size(plateau.start)}'s {_mb(plateau.value)} (no plateau reached)")
    return f"{what} is {efficiency * 100:.1f} % of the link model {_mb(link.throughput)}"


def _usb2_verdict(efficiency: float, plateau: Plateau, link: Ceiling, profile: Ceiling | None,
                  s: Usb2Summary | None) -> tuple[str, str]:
    bus_ppu = link.parts["packets_per_uframe"]  # 6.5 for loopback: OUT and IN share them
    head = _header(plateau, link, efficiency)
    prof = ""
    if profile is not None and profile.parts["host_profile"] != "ideal":
        prof = (f" (host profile {profile.parts['host_profile']}: "
                f"{profile.parts['packets_per_uframe']} packets/µframe = "
                f"{_mb(profile.throughput)}, reached {plateau.value / profile.throughput * 100:.0f}"
                " %)")
    nak_fraction = s.naks / s.tokens if s and s.tokens else 0.0
    if s and nak_fraction > _NAK_FRACTION and efficiency < LINK_LIMITED:
        return "device-limited", (
            f"DEVICE-LIMITED — must never happen: the device NAKed {s.naks} of {s.tokens} tokens "
            f"({nak_fraction * 100:.1f} %); {head}. The gateware's buffer or source is too slow.")
    if efficiency >= LINK_LIMITED:
        warn = f" WARNING: the device NAKed {s.naks} tokens." if s and s.naks else ""
        return "link-limited", f"{_cap(head)}.{warn}"
    if s and s.tokens_max_uframe is not None and s.tokens_max_uframe < bus_ppu:
        return "host-limited", (
            f"The host scheduled at most {s.tokens_max_uframe} packets per "
            f"microframe where the bus allows {bus_ppu}, and the device NAKed "
            f"{'nothing' if not s.naks else f'only {s.naks} tokens'}; {head}{prof}.")
    if s and s.data_uframe_fraction is not None and s.data_uframe_fraction < _DATA_UFRAMES:
        return "host-limited", (
            f"The host left gaps between transfers — only "
            f"{s.data_uframe_fraction * 100:.0f} % of microframes carried data although the "
            f"device was ready; {head}{prof}.")
    if s:
        ppu = s.packets_per_data_uframe
        return "host-limited", (
            f"The device was ready (no NAKs) but the host moved "
            f"{ppu:.1f} packets per data microframe of the {bus_ppu} the bus allows; {head}{prof}."
            if ppu else f"The device was ready (no NAKs); {head}{prof}.")
    return "host-limited", (f"No device telemetry to confirm the device was ready; {head}"
                            f"{prof}.")


def _pcie_verdict(efficiency: float, plateau: Plateau, link: Ceiling, bus: BusDescription,
                  direction: str, s: PcieSummary | None) -> tuple[str, str]:
    head = _header(plateau, link, efficiency)
    if efficiency >= LINK_LIMITED:
        return "link-limited", f"{_cap(head)}."
    if s and s.stall_fraction is not None and s.stall_fraction >= _STALL_FRACTION:
        what = "writes" if direction == Direction.WRITE else "completions"
        return "upstream-limited", (
            f"The link held off the device's {what} for "
            f"{s.stall_fraction * 100:.0f} % of cycles (credit/backpressure stalls); {head}.")
    if direction == Direction.READ and s and s.latency_mean_ns and s.outstanding_max:
        request = bus.mrrs or 512
        bound = s.outstanding_max * request / (s.latency_mean_ns * 1e-9)
        if bound < link.throughput * LINK_LIMITED:
            return "upstream-limited", (
                f"Read completions took {s.latency_mean_ns:.0f} ns on average "
                f"(min {s.latency_min_ns or 0:.0f}, max {s.latency_max_ns or 0:.0f}) with at most "
                f"{s.outstanding_max} requests of {request} B in flight, which allows "
                f"{_mb(bound)}; {head}.")
    if s and s.stall_fraction is not None:
        return "device-limited", (
            f"DEVICE-LIMITED — must never happen: the link was ready "
            f"({s.stall_fraction * 100:.1f} % stall cycles) yet the device moved only "
            f"{_mb(plateau.value)}; {head}. The DMA engine does not keep the link busy.")
    return "upstream-limited", (f"No device telemetry: the host or root complex is slower than "
                                f"the link; {head}.")


def _device_run_verdict(verdict: str, why: str, efficiency: float, run: Plateau,
                        link: Ceiling) -> tuple[str, str]:
    """The host-run verdict weighed with the device-run: the device's own run at the link model
    while the host's is lower clears the chipset and names the host's software."""
    run_efficiency = run.value / link.throughput
    ran = (f"run by the device itself (its firmware queues every descriptor, no host software "
           f"per transfer) the plateau is {_mb(run.value)} ({run_efficiency * 100:.1f} % of the "
           f"link model)")
    if efficiency >= LINK_LIMITED:
        return verdict, f"{why} {_cap(ran)}."
    if run_efficiency >= LINK_LIMITED:
        return "driver-limited", (
            f"Host-run plateau {_mb(efficiency * link.throughput)} is "
            f"{efficiency * 100:.1f} % of the link model {_mb(link.throughput)}, but {ran}: the "
            "link and the chipset keep up, the host's software path does not (the tool's "
            "driver or the OS: interrupts, completion handling, resubmission).")
    if verdict == "device-limited":
        return verdict, f"{why} {_cap(ran)}."
    return "upstream-limited", (
        f"{why} {_cap(ran)} too: both are below the link model, so the chipset or the path "
        "upstream of the link is the limit, not the host's software.")


def _generic_verdict(efficiency: float, plateau: Plateau, link: Ceiling) -> tuple[str, str]:
    head = _header(plateau, link, efficiency)
    if efficiency >= LINK_LIMITED:
        return "link-limited", f"{_cap(head)}."
    return "host-limited", f"No device telemetry to tell more; {head}."
