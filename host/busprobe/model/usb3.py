"""USB 3.x SuperSpeed (Gen 1, 5 Gb/s) bulk ceiling.

Line coding 8b/10b: 5 Gb/s × 8/10 / 8 = 500 MB/s per direction (the link is dual simplex). What
one 1024-byte data packet (DP) occupies on the data-carrying lane (USB 3.2 §7.2.4, §8.2)::

    DPH  = HPSTART 4 + header 12 + CRC-16 2 + link control word 2      = 20 B
    DPP  = SDP 4 + payload + CRC-32 4 + END 4                            = payload + 12 B
    link commands for the ACK TP coming the other way: LGOOD_n 8 + LCRD_x 8 = 16 B
    per DP = 1024 + 48 = 1072 B

SKP ordered sets (2 symbols per 354, §6.4.3) take 0.56 %; the host's ITP every 125 µs costs 20 B
(OUT lane) or its 16 B of link commands (IN lane). A burst of ``max_burst`` DPs (bMaxBurst + 1,
at most 16) may be followed by ``burst_gap_ns`` of idle while the device waits for the ACK that
grants the next burst (0 when the host keeps NumP replenished)::

    ceiling = 500 MB/s × (1 - SKP) × (1 - ITP) × burst × 1024 /
              (burst × 1072 + burst_gap × 500 MB/s)

Behind a host-controller profile (``bus.host_profile``, :mod:`.usb3_hosts`) the window is the
profile's ``max_burst_in`` / ``max_burst_out`` (capped by ``bus.extra["max_burst"]``, the
selector's ``burst=``), and a window too small to cover the round trip is a latency bound: the
sender may have ``burst`` packets unacknowledged, and the packet after them waits until the
first one's ACK TP is back. The round trip is the DP (1056 B), the 20-byte ACK TP, the host's
answer and the device's:

    IN:  DP + host turnaround + ACK TP + device (its LGOOD + LCRD for the ACK TP, then the DP)
    OUT: DP + device (the ACK TP) + ACK TP + host (its LGOOD + LCRD, under its turnaround)

    round trip = (1056 + 20) B / 500 MB/s + host + device
    ceiling    = burst × 1024 / max(burst × 1072 B / lane, round trip)

``loopback`` (OUT returned on IN, both lanes at once) is :mod:`.usb3_loopback`; Bulk-Only
Transport (``Framing.BOT``: CBW, data, CSW, one transfer at a time) is
:mod:`.usb3_bot`, over the same per-transfer times; USB Attached SCSI with bulk streams
(``Framing.UAS``: the null disk's alternate 1) is :mod:`.usb3_uas`, which builds on this module,
so :mod:`.usb3_framings` chooses it, above both.

The device's answer is busprobe's own gateware, measured at its PIPE ports
(:data:`DEVICE_RESPONSE_CYCLES`). A round trip leaves the lane idle, and SKP and ITP go there,
so its bytes count at the raw 500 MB/s.

With a length, a transfer's time runs from its start to its end (:func:`.usb3_run.transfer_seconds`:
the IN token and the device's answer, or the device's ACK after OUT data), each transfer after
the first waits the profile's ``retoken_delay_us``, and ``q`` transfers in flight hide the
turnaround (completion + resubmit latency) once it is at most ``q`` transfer times::

    period = max(t_transfer + retoken, (t_transfer + completion + resubmit) / q)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..protocol.bot import CBW_SIZE, CSW_SIZE
from ..protocol.names import Direction, Framing
from ..protocol.usb3 import SKP_INTERVAL_SYMBOLS
from ..transport import BusDescription
from .ceiling_type import Ceiling
from .usb3_bot import bot_command_seconds, bot_run_seconds
from .usb3_hosts import Usb3HostProfile, load_usb3_profile
from .usb3_loopback import loopback_ceiling
from .usb3_run import Usb3Link, device_window_rate, run_times, transfer_seconds

__all__ = ["usb3_ceiling", "usb3_run_figures", "usb3_link_only", "usb3_link", "SS_RATE",
           "DP_PAYLOAD", "DP_OVERHEAD", "TP_BYTES", "DEVICE_RESPONSE_CYCLES", "round_trip_s"]

SS_RATE = 5e9 * 8 / 10 / 8  # bytes/s
DP_PAYLOAD = 1024
DPH_BYTES = 4 + 12 + 2 + 2
DPP_OVERHEAD = 4 + 4 + 4
LINK_COMMANDS_PER_TP = 8 + 8
DP_OVERHEAD = DPH_BYTES + DPP_OVERHEAD + LINK_COMMANDS_PER_TP  # 48
SKP_FRACTION = 2 / (SKP_INTERVAL_SYMBOLS + 2)
ITP_PERIOD_S = 125e-6
#: An ACK TP on the lane: HPSTART, header, CRC-16, link control word (a header packet).
TP_BYTES = DPH_BYTES
#: 125 MHz cycles from the host's last symbol to the first symbol of the busprobe device's
#: answer, at its PIPE ports: IN, from the ACK TP to the DP (15 idle cycles in LUNA's receive,
#: link and protocol pipelines and busprobe's IN endpoint, and 4 cycles of its LGOOD + LCRD for
#: the ACK TP; 16 until 2026-12-06, when the IN endpoint began staging its next packet, §3.6 of
#: docs/DESIGN.md); OUT, from the DP's last symbol to its ACK TP (12 cycles: the CRC-32 check and
#: the pipelines; the DP header's LGOOD + LCRD went out during the payload). Measured in
#: simulation by the cocotb test ``burst_window_of_one_packet_runs_at_the_round_trip_bound``
#: (``sim/usb3/tests/usb3_cocotb.py``), which fails if the gateware drifts from these.
DEVICE_RESPONSE_CYCLES = {"in": 19, "out": 12}
PIPE_CLOCK_HZ = 125e6


def usb3_link_only(bus: BusDescription) -> BusDescription:
    """``bus`` behind the ideal host with the full window: what the link itself allows."""
    extra = {k: v for k, v in bus.extra.items() if k not in ("max_burst", "burst_gap_ns")}
    return replace(bus, host_profile="ideal", extra=extra)


def _profile(bus: BusDescription) -> Usb3HostProfile | None:
    return load_usb3_profile(bus.host_profile) if bus.host_profile else None


def usb3_ceiling(bus: BusDescription, direction: str, *, length: int | None = None,
                 queue_depth: int | None = None, transfers: int | None = None,
                 profile: Usb3HostProfile | None = None) -> Ceiling:
    """Ceiling of bulk ``direction`` on a SuperSpeed link (see module).

    ``bus.extra`` may give ``max_burst`` (1..16, default 16) and ``burst_gap_ns`` (default 0);
    ``bus.host_profile`` names the host-controller profile whose window and turnaround apply.
    With ``transfers`` (and a length), the ceiling of one measured run (:mod:`.usb3_run`), the
    device window's in ``parts["device_ceiling"]``, and in ``parts["data_span"]`` the seconds
    from the run's first DP to its last (what the device's first/last cycle counters span).
    ``profile`` stands for ``bus.host_profile`` (``busprobe fit`` tries candidates).
    """
    if direction == Direction.LOOPBACK:
        each = {way: usb3_ceiling(bus, way, length=length, queue_depth=queue_depth,
                                  profile=profile)
                for way in (Direction.IN, Direction.OUT)}
        ceiling = loopback_ceiling(each["in"], each["out"], lane_rate=SS_RATE,
                                   skp_fraction=SKP_FRACTION, itp_period_s=ITP_PERIOD_S,
                                   max_packet_size=bus.max_packet_size or DP_PAYLOAD)
        # The verdict names the host behind every ceiling (verdict/assess.py).
        ceiling.parts["host_profile"] = each["in"].parts["host_profile"]
        return ceiling
    if bus.protocol == Framing.BOT and length is not None:
        return _bot_ceiling(bus, direction, length, transfers, profile)
    t = _terms(bus, direction, profile)
    mps, burst, gap_ns, rate, round_trip = t.mps, t.burst, t.gap_ns, t.rate, t.round_trip
    turnaround_ns, retoken_us = t.turnaround_ns, t.retoken_us
    completion_us, resubmit_us = t.completion_us, t.resubmit_us
    per_dp, itp, device_ns, burst_time = t.per_dp, t.itp, t.device_ns, t.burst_time
    latency_bound, throughput = t.latency_bound, t.plateau
    binding = "latency-bound: window < round trip" if latency_bound else "link-bound"
    lines = [
        f"lane = 5 Gb/s × 8/10 = {SS_RATE / 1e6:.0f} MB/s; SKP {SKP_FRACTION * 100:.2f} %,"
        f" ITP {itp * 100:.3f} % -> {rate / 1e6:.1f} MB/s",
        f"DP = {mps} + DPH {DPH_BYTES} + DPP framing/CRC {DPP_OVERHEAD} + LGOOD/LCRD"
        f" {LINK_COMMANDS_PER_TP} = {per_dp} B",
        f"host {bus.host_profile or 'not given'}: window {burst} DPs, turnaround "
        f"{turnaround_ns:g} ns; round trip (DP {mps + DPH_BYTES + DPP_OVERHEAD} + ACK TP "
        f"{TP_BYTES}) B at {SS_RATE / 1e6:.0f} MB/s + host + device {device_ns:g} ns = "
        f"{round_trip * 1e6:.3f} µs",
        f"burst {burst} DPs = max({burst} × {per_dp} B, round trip) + gap {gap_ns:g} ns -> "
        f"{burst} × {mps} B / {burst_time * 1e6:.3f} µs = {throughput / 1e6:.1f} MB/s "
        f"({binding})",
    ]
    parts: dict[str, object] = {"lane_rate": SS_RATE, "skp_fraction": SKP_FRACTION,
                                "itp_fraction": itp, "dp_wire_bytes": per_dp, "max_burst": burst,
                                "burst_gap_ns": gap_ns, "turnaround_ns": turnaround_ns,
                                "device_response_ns": device_ns, "round_trip_s": round_trip,
                                "latency_bound": latency_bound,
                                "host_profile": bus.host_profile or "ideal",
                                "plateau": throughput}
    if length is not None:
        seconds = transfer_seconds(t.link, length, DP_OVERHEAD, DPH_BYTES + DPP_OVERHEAD)
        packets = max(1, math.ceil(length / mps))
        retoken, completion = retoken_us * 1e-6, completion_us * 1e-6
        resubmit = resubmit_us * 1e-6
        q = queue_depth if queue_depth is not None else 1 << 30
        period = max(seconds + retoken, (seconds + completion + resubmit) / q)
        throughput = length / period
        lines.append(f"transfer {length} B = {packets} DPs: {seconds * 1e6:.3f} µs from its "
                     f"start to its end (IN: token and the device's answer first; OUT: the "
                     f"device's ACK after); + re-token {retoken_us:g} µs; turnaround completion "
                     f"{completion_us:g} + resubmit {resubmit_us:g} µs over QD "
                     f"{'∞' if queue_depth is None else queue_depth} -> "
                     f"{throughput / 1e6:.1f} MB/s")
        parts.update(length=length, packets=packets, bursts=math.ceil(packets / burst),
                     transfer_seconds=seconds, period=period)
        if transfers is not None:
            spans, done = run_times(seconds, transfers=transfers, queue_depth=q,
                                    completion=completion, resubmit=resubmit, retoken=retoken)
            steady, throughput = throughput, transfers * length / done
            # Each of its two edges may count whole the packets (a burst of them when the window
            # waits for round trips) that the even spread puts partly outside.
            slack = 2 * min(length, mps) * (burst if latency_bound else 1)
            device = device_window_rate(spans, length, slack, lead=t.link.lead,
                                        tail=t.link.tail)
            lines.append(f"measured run: {transfers} transfers, {min(q, transfers)} queued at "
                         f"the start, host clock from the first submission to the last "
                         f"completion: {done * 1e6:.2f} µs -> {throughput / 1e6:.1f} MB/s")
            if device is not None:
                lines.append(f"device window (whole bus intervals, any phase, + {slack} B at "
                             f"its edges): at most {device / 1e6:.1f} MB/s")
            parts.update(transfers=transfers, steady=steady, run_seconds=done,
                         device_ceiling=device, data_span=_data_span(t, spans))
    if queue_depth is not None:
        parts["queue_depth"] = queue_depth
    return Ceiling(throughput, "\n".join(lines), parts, direction, "usb3-ss link")


@dataclass(frozen=True)
class _Terms:
    """The per-bus terms of :func:`usb3_ceiling` (see module)."""

    mps: int
    burst: int
    gap_ns: float
    rate: float
    round_trip: float
    turnaround_ns: float
    retoken_us: float
    completion_us: float
    resubmit_us: float
    per_dp: int
    itp: float
    device_ns: float
    burst_time: float
    latency_bound: bool
    plateau: float
    link: Usb3Link


def _terms(bus: BusDescription, direction: str, profile: Usb3HostProfile | None) -> _Terms:
    if bus.speed not in ("super", "ss", "gen1"):
        raise ValueError(f"USB3 model covers SuperSpeed Gen 1 (5 Gb/s), not {bus.speed!r}")
    mps = bus.max_packet_size or DP_PAYLOAD
    try:
        burst = int(bus.extra.get("max_burst", 16))
        gap_ns = float(bus.extra.get("burst_gap_ns", 0.0))
    except (TypeError, ValueError):
        raise ValueError("USB3 model: max_burst and burst_gap_ns must be numbers") from None
    if not 1 <= burst <= 16:
        raise ValueError(f"USB3 max burst must be 1..16 packets, not {burst}")
    profile = profile or _profile(bus)
    turnaround_ns = retoken_us = completion_us = resubmit_us = 0.0
    if profile is not None:
        burst = min(burst, profile.max_burst_in if direction == Direction.IN
                    else profile.max_burst_out)
        turnaround_ns, retoken_us = profile.turnaround_ns, profile.retoken_delay_us
        completion_us, resubmit_us = profile.completion_latency_us, profile.resubmit_latency_us
    per_dp = mps + DP_OVERHEAD
    per_itp = DPH_BYTES if direction == Direction.OUT else LINK_COMMANDS_PER_TP
    itp = per_itp / (SS_RATE * ITP_PERIOD_S)
    rate = SS_RATE * (1 - SKP_FRACTION) * (1 - itp)
    round_trip = round_trip_s(direction, mps, turnaround_ns)
    device_ns = DEVICE_RESPONSE_CYCLES[direction] / PIPE_CLOCK_HZ * 1e9
    window_time = max(burst * per_dp / rate, round_trip)
    latency_bound = window_time > burst * per_dp / rate
    burst_time = window_time + gap_ns * 1e-9
    link = Usb3Link(direction, mps, rate, SS_RATE, burst, round_trip, latency_bound,
                    gap_ns * 1e-9, *_lead_tail(direction))
    return _Terms(mps, burst, gap_ns, rate, round_trip, turnaround_ns, retoken_us,
                  completion_us, resubmit_us, per_dp, itp, device_ns, burst_time, latency_bound,
                  burst * mps / burst_time, link)


def usb3_link(bus: BusDescription, direction: str,
              profile: Usb3HostProfile | None = None) -> Usb3Link:
    """What :func:`.usb3_run.transfer_seconds` needs of ``bus`` in ``direction`` behind
    ``profile`` (default ``bus.host_profile``)."""
    return _terms(bus, direction, profile).link


def _bot_ceiling(bus: BusDescription, direction: str, length: int, transfers: int | None,
                 profile: Usb3HostProfile | None) -> Ceiling:
    """The BOT ceiling of ``length``-byte commands (:mod:`.usb3_bot`), of a run of
    ``transfers`` commands when given (host clock only: the device's window times the CBWs,
    CSWs and gaps too)."""
    streamed = usb3_ceiling(replace(bus, protocol="stream"), direction, length=length,
                            queue_depth=1, profile=profile)
    terms = {way: _terms(bus, way, profile) for way in (Direction.IN, Direction.OUT)}

    def transfer(way: str, size: int) -> float:
        return transfer_seconds(terms[way].link, size, DP_OVERHEAD, DPH_BYTES + DPP_OVERHEAD)

    t = terms[direction]
    knobs = {"completion": t.completion_us * 1e-6, "resubmit": t.resubmit_us * 1e-6,
             "retoken": t.retoken_us * 1e-6}
    times = bot_command_seconds(transfer, direction, length, **knobs)
    us = {key: value * 1e6 for key, value in times.items()}
    throughput = length / times["command"]
    lines = [
        streamed.formula.splitlines()[0],
        f"BOT: each command = CBW ({CBW_SIZE} B OUT) -> data ({length} B {direction.upper()})"
        f" -> CSW ({CSW_SIZE} B IN), one transfer at a time, host {bus.host_profile or 'ideal'}",
        f"each stage: its transfer on the link + completion {t.completion_us:g} µs, the next "
        f"ready resubmit {t.resubmit_us:g} µs later (re-token {t.retoken_us:g} µs per endpoint)",
        f"CBW {us['CBW']:.3f} + data {us['data']:.3f} + CSW {us['CSW']:.3f} + 3 × resubmit "
        f"{us['resubmit']:.3f} = {us['command']:.3f} µs per command -> "
        f"{throughput / 1e6:.2f} MB/s",
    ]
    parts = dict(streamed.parts, protocol="bot", length=length, period=times["command"],
                 stage_seconds={k: v for k, v in times.items() if k != "command"})
    if transfers is not None:
        run = bot_run_seconds(transfer, direction, length, commands=transfers, **knobs)
        steady, throughput = throughput, transfers * length / run
        lines.append(f"measured run: {transfers} BOT commands, host clock from the first CBW's "
                     f"submission to the last CSW's completion: {run * 1e6:.2f} µs -> "
                     f"{throughput / 1e6:.2f} MB/s")
        parts.update(transfers=transfers, steady=steady, run_seconds=run, device_ceiling=None)
        parts.pop("data_span", None)
    return Ceiling(throughput, "\n".join(lines), parts, direction, "usb3-ss link BOT")


def _data_span(t: _Terms, spans: list[tuple[float, float]]) -> float:
    """Seconds from the run's first DP to the device's count of its last: the last DP's end,
    and on IN the host's ACK TP for it, which the device waits for."""
    lead, tail = t.link.lead, t.link.tail
    acked = t.turnaround_ns * 1e-9 + TP_BYTES / SS_RATE if t.link.direction == Direction.IN else 0.0
    return spans[-1][1] - tail + acked - spans[0][0] - lead


def usb3_run_figures(bus: BusDescription, direction: str, profile: Usb3HostProfile, *,
                     length: int, queue_depth: int, transfers: int) -> tuple[float, float]:
    """``(host-timed throughput, tail seconds)`` of one run, as :func:`usb3_ceiling` with
    ``transfers`` gives them, without its derivation and device window (``busprobe fit`` asks
    thousands of times)."""
    t = _terms(bus, direction, profile)
    seconds = transfer_seconds(t.link, length, DP_OVERHEAD, DPH_BYTES + DPP_OVERHEAD)
    spans, done = run_times(seconds, transfers=transfers, queue_depth=queue_depth,
                            completion=t.completion_us * 1e-6, resubmit=t.resubmit_us * 1e-6,
                            retoken=t.retoken_us * 1e-6)
    return transfers * length / done, done - _data_span(t, spans)


def _lead_tail(direction: str) -> tuple[float, float]:
    """Seconds before a transfer's first DP and after its last (see :mod:`.usb3_run`)."""
    tp = TP_BYTES / SS_RATE
    answer = DEVICE_RESPONSE_CYCLES[direction] / PIPE_CLOCK_HZ
    return (tp + answer, 0.0) if direction == Direction.IN else (0.0, answer + tp)


def round_trip_s(direction: str, payload: int = DP_PAYLOAD, turnaround_ns: float = 0.0) -> float:
    """Seconds from a DP's first symbol to the first symbol of the DP its ACK TP lets go.

    The host answers after ``turnaround_ns``; on OUT its LGOOD + LCRD for the ACK TP come first
    unless the turnaround hides them. The device answers after :data:`DEVICE_RESPONSE_CYCLES`.
    """
    if direction not in DEVICE_RESPONSE_CYCLES:
        raise ValueError(f"USB3 bulk direction is in or out, not '{direction}'")
    wire = (payload + DPH_BYTES + DPP_OVERHEAD + TP_BYTES) / SS_RATE
    # A lane of 4-symbol words places the answer to a cycle: the host's answer may start in the
    # cycle its turnaround ends after the word that ended the packet (the simulated xHCI does),
    # one cycle of idle fewer than the turnaround; a bound takes the shorter.
    host = max(turnaround_ns * 1e-9 - 1 / PIPE_CLOCK_HZ, 0.0)
    if direction == Direction.OUT:
        host = max(host, LINK_COMMANDS_PER_TP / SS_RATE)
    return wire + host + DEVICE_RESPONSE_CYCLES[direction] / PIPE_CLOCK_HZ
