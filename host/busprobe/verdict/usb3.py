"""The SuperSpeed verdict: what the device's counters say about a ``usb3-ss`` plateau.

A SuperSpeed host paces a bulk endpoint by the NumP window of its ACK TPs (IN) and by how many
data packets it sends before waiting for the device's ACK (OUT). The device records the largest
window it was granted (``in_nump_max``) and the longest OUT burst it received
(``out_burst_max``), the smallest OUT window it advertised (``out_nump_min``), whether it was
ever not ready (NRDY, or NumP 0 with every OUT buffer full) and how many bus intervals carried
data (:data:`busprobe.protocol.usb3.TELEMETRY`). An IN window below the device's
``bMaxBurst + 1``, or OUT packets sent fewer at a time than the room the device always
advertised, names the host; the model (:func:`busprobe.model.usb3.usb3_ceiling`) says what
that window's round trip allows. The device counts an OUT burst by gaps under 256 ns, so a host
with a short turnaround shows one long burst even when it waits for every ACK: OUT evidence is
the advertised room, not ``out_burst_max``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..model import Ceiling, ceiling_for
from ..protocol import usb3 as usb3_protocol
from ..protocol.names import Direction, Framing
from .evidence import LINK_LIMITED, Finding, GroupEvidence, mb

__all__ = ["Usb3Summary", "summarise_usb3", "usb3_verdict", "usb3_rules"]

_NAMES = {name for name, _ in usb3_protocol.TELEMETRY}
#: Share of bus intervals, from the first to the last with data, that must carry data before
#: gaps between transfers count as the host's.
_DATA_INTERVALS = 0.9


@dataclass(frozen=True)
class Usb3Summary:
    """SuperSpeed counters of one direction over the plateau points.

    Attributes
    ----------
    window_max : int or None
        Largest NumP window granted (IN) or longest OUT burst received, max over points.
    room_min : int or None
        OUT: the smallest NumP the device advertised (its free buffers), min over points; None
        for IN or when it advertised none.
    packets, not_ready : int
        Data packets acknowledged; times the device said it was not ready (NRDY TPs, and for
        OUT ACK TPs advertising NumP 0), summed over points.
    data_intervals, busy_intervals : int
        Bus intervals that carried data, and those from the first to the last with data
        (the device's whole-interval window plus its two partial ends), summed over points.
    """

    window_max: int | None
    room_min: int | None
    packets: int
    not_ready: int
    data_intervals: int
    busy_intervals: int

    @property
    def data_interval_fraction(self) -> float | None:
        if not self.busy_intervals or not self.data_intervals:
            return None
        return min(1.0, self.data_intervals / self.busy_intervals)


def summarise_usb3(telemetries: Iterable[Mapping[str, Any]], direction: str
                   ) -> Usb3Summary | None:
    """Sum the ``direction`` counters of the points that have SuperSpeed telemetry."""
    points = [t for t in telemetries if t and _NAMES <= set(t)]
    if not points or direction not in (Direction.IN, Direction.OUT):
        return None
    window = "in_nump_max" if direction == Direction.IN else "out_burst_max"
    busy = sum((int(t[f"{direction}_window_end_interval"])
                - int(t[f"{direction}_window_start_interval"])) & 0xFFFF_FFFF for t in points)
    room = min(int(t["out_nump_min"]) for t in points) if direction == Direction.OUT else None
    # The window leaves out the first and the last interval with data: add them back.
    return Usb3Summary(
        window_max=max(int(t[window]) for t in points),
        room_min=None if room == 0xFFFF_FFFF else room,
        packets=sum(int(t[f"{direction}_packets"]) for t in points),
        not_ready=sum(int(t[f"{direction}_nrdys"]) + (int(t["out_nump_zero"])
                                                      if direction == Direction.OUT else 0)
                      for t in points),
        data_intervals=sum(int(t["data_intervals"]) for t in points),
        busy_intervals=busy + 2 * len(points))


def usb3_rules(e: GroupEvidence) -> Finding:
    """The ``usb3-ss`` row's verdict rule (:attr:`busprobe.buses.Bus.verdict`)."""
    summary = summarise_usb3(e.telemetries, e.direction)
    evidence = summary.__dict__ if summary else None
    if e.bus.protocol == Framing.UAS:
        engine = _uas_engine(e)
        if engine is not None:
            return Finding("device-limited", engine, evidence)
    packets = math.ceil(max(e.plateau.lengths) / usb3_protocol.MAX_PACKET_SIZE)
    verdict, why = usb3_verdict(e.efficiency, e.head, e.profile, summary, LINK_LIMITED, mb,
                                packets=packets)
    return Finding(verdict, why, evidence)


#: busprobe's UAS engine names itself when it keeps a run this far under an ideal device's
#: ceiling and the run reaches the engine's own bound this closely.
_ENGINE_SHORT, _ENGINE_REACHED = 0.95, 0.97


def _uas_engine(e: GroupEvidence) -> str | None:
    """The sentence naming busprobe's UAS engine as the limit, where it is: the UAS model at
    the plateau's longest length and queue depth allows an ideal device well above what the
    engine's own bound allows, and the plateau reaches the latter (``model/usb3_uas.py``'s
    ``BUSPROBE_DEVICE``; behind a host quick enough, short commands one at a time)."""
    longest, depth = max(e.plateau.lengths), e.queue_depth or 1
    try:
        model = ceiling_for(e.bus, e.direction, length=longest, queue_depth=depth)
    except (ValueError, KeyError):
        return None
    ideal, engine = model.throughput, float(model.parts["busprobe_device"])
    if engine >= _ENGINE_SHORT * ideal or e.plateau.value < _ENGINE_REACHED * engine:
        return None
    reads = " and, on reads, fills each stream's first data packet before it goes" \
        if e.direction == Direction.IN else ""
    return (f"DEVICE-LIMITED: at {longest} B and queue depth {depth} busprobe's UAS engine "
            f"allows {mb(engine)}, {engine / ideal * 100:.1f} % of what a device never the "
            f"bottleneck would get behind host profile {model.parts['host_profile']} "
            f"({mb(ideal)}, set by the {model.parts['binding']}); the plateau "
            f"{mb(e.plateau.value)} is {e.plateau.value / engine * 100:.1f} % of the engine's "
            f"figure. The engine decodes each COMMAND IU{reads}, and with commands this short "
            f"and this few in flight no host latency hides it.")


def _packets(n: int) -> str:
    return f"{n} packet{'s' if n != 1 else ''}"


def _offer(window: int) -> str:
    """What the host could have granted: the device's burst, or a shorter transfer whole."""
    if window == usb3_protocol.MAX_BURST_PACKETS:
        return f"the device offers {window}"
    return (f"a transfer of {_packets(window)} could take them at once (the device offers "
            f"{usb3_protocol.MAX_BURST_PACKETS})")


def usb3_verdict(efficiency: float, head: str, profile: Ceiling | None, s: Usb3Summary | None,
                 link_limited: float, mb: Callable[[float], str], *,
                 packets: int | None = None) -> tuple[str, str]:
    """``(verdict, explanation)`` for a SuperSpeed plateau.

    ``head`` is the sentence comparing the plateau with the link model, ``profile`` the
    ceiling behind the run's host profile and burst cap, ``link_limited`` the threshold of
    :data:`busprobe.verdict.assess.LINK_LIMITED`, ``mb`` the throughput formatter,
    ``packets`` the data packets of the plateau's longest transfer (a host grants no window
    wider than a transfer: one of 1 KiB is one packet whatever the host).
    """
    offered = min(usb3_protocol.MAX_BURST_PACKETS, packets or usb3_protocol.MAX_BURST_PACKETS)
    prof, window = "", None
    # A loopback's ceiling (model/usb3_loopback.py) combines both directions' and names no one
    # host window: nothing of it to quote.
    if profile is not None and "max_burst" in profile.parts:
        parts = profile.parts
        window = int(parts["max_burst"])
        bound = "latency bound" if parts.get("latency_bound") else "link bound"
        prof = (f" (host profile {parts['host_profile']}: window of {_packets(window)}, "
                f"turnaround {parts['turnaround_ns']:g} ns, round trip "
                f"{parts['round_trip_s'] * 1e6:.2f} µs -> {bound} {mb(profile.throughput)})")
    if s and s.not_ready and efficiency < link_limited:
        return "device-limited", (
            f"DEVICE-LIMITED — must never happen: the device was not ready {s.not_ready} times "
            f"(NRDY / NumP 0) over {s.packets} packets; {head}. The gateware's buffer or "
            f"source is too slow.")
    if efficiency >= link_limited:
        warn = f" WARNING: the device was not ready {s.not_ready} times." \
            if s and s.not_ready else ""
        return "link-limited", f"{head[:1].upper()}{head[1:]}.{warn}"
    if s and s.room_min is None and s.window_max is not None and s.window_max < offered:
        return "host-limited", (
            f"The host granted at most {_packets(s.window_max)} per ACK TP (NumP window) where "
            f"{_offer(offered)}, and the device was always ready (0 NRDY): each "
            f"window waits for the host's ACK TP round trip; {head}{prof}.")
    if s and s.room_min and window is not None and window < s.room_min:
        return "host-limited", (
            f"The device always advertised room for at least {_packets(s.room_min)} (NumP "
            f"never 0, 0 NRDY), and the host sent {_packets(window)} before waiting for the "
            f"device's ACK TP: each window waits for its round trip; {head}{prof}.")
    fraction = s.data_interval_fraction if s else None
    if fraction is not None and fraction < _DATA_INTERVALS:
        return "host-limited", (
            f"The host left gaps between transfers — only {fraction * 100:.0f} % of bus "
            f"intervals carried data although the device was always ready; {head}{prof}.")
    if s:
        return "host-limited", (f"The device was always ready (0 NRDY) and granted the full "
                                f"window of {_packets(offered)}; {head}{prof}.")
    return "host-limited", f"No device telemetry to confirm the device was ready; {head}{prof}."
