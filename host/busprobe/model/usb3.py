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

``loopback`` (OUT returned on IN, both lanes at once) is :mod:`.usb3_loopback`.

The device's answer is busprobe's own gateware, measured at its PIPE ports
(:data:`DEVICE_RESPONSE_CYCLES`). A round trip leaves the lane idle, and SKP and ITP go there,
so its bytes count at the raw 500 MB/s.

With a length, each transfer after the first also waits the profile's ``retoken_delay_us``.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..transport import BusDescription
from .ceiling_type import Ceiling
from .usb3_hosts import Usb3HostProfile, load_usb3_profile
from .usb3_loopback import loopback_ceiling

__all__ = ["usb3_ceiling", "usb3_link_only", "SS_RATE", "DP_PAYLOAD", "DP_OVERHEAD",
           "TP_BYTES", "DEVICE_RESPONSE_CYCLES", "round_trip_s"]

SS_RATE = 5e9 * 8 / 10 / 8  # bytes/s
DP_PAYLOAD = 1024
DPH_BYTES = 4 + 12 + 2 + 2
DPP_OVERHEAD = 4 + 4 + 4
LINK_COMMANDS_PER_TP = 8 + 8
DP_OVERHEAD = DPH_BYTES + DPP_OVERHEAD + LINK_COMMANDS_PER_TP  # 48
SKP_FRACTION = 2 / (354 + 2)
ITP_PERIOD_S = 125e-6
#: An ACK TP on the lane: HPSTART, header, CRC-16, link control word (a header packet).
TP_BYTES = DPH_BYTES
#: 125 MHz cycles from the host's last symbol to the first symbol of the busprobe device's
#: answer, at its PIPE ports: IN, from the ACK TP to the DP (16 idle cycles in LUNA's receive,
#: link and protocol pipelines and busprobe's IN endpoint, and 4 cycles of its LGOOD + LCRD for
#: the ACK TP); OUT, from the DP's last symbol to its ACK TP (12 cycles: the CRC-32 check and
#: the pipelines; the DP header's LGOOD + LCRD went out during the payload). Measured in
#: simulation by the cocotb test ``burst_window_of_one_packet_runs_at_the_round_trip_bound``
#: (``sim/usb3/tests/usb3_cocotb.py``), which fails if the gateware drifts from these.
DEVICE_RESPONSE_CYCLES = {"in": 20, "out": 12}
PIPE_CLOCK_HZ = 125e6


def usb3_link_only(bus: BusDescription) -> BusDescription:
    """``bus`` behind the ideal host with the full window: what the link itself allows."""
    extra = {k: v for k, v in bus.extra.items() if k not in ("max_burst", "burst_gap_ns")}
    return replace(bus, host_profile="ideal", extra=extra)


def _profile(bus: BusDescription) -> Usb3HostProfile | None:
    return load_usb3_profile(bus.host_profile) if bus.host_profile else None


def usb3_ceiling(bus: BusDescription, direction: str, *, length: int | None = None,
                 queue_depth: int | None = None) -> Ceiling:
    """Ceiling of bulk ``direction`` on a SuperSpeed link (see module).

    ``bus.extra`` may give ``max_burst`` (1..16, default 16) and ``burst_gap_ns`` (default 0);
    ``bus.host_profile`` names the host-controller profile whose window and turnaround apply.
    """
    if bus.speed not in ("super", "ss", "gen1"):
        raise ValueError(f"USB3 model covers SuperSpeed Gen 1 (5 Gb/s), not {bus.speed!r}")
    mps = bus.max_packet_size or DP_PAYLOAD
    if direction == "loopback":
        each = {way: usb3_ceiling(bus, way, length=length, queue_depth=queue_depth)
                for way in ("in", "out")}
        return loopback_ceiling(each["in"], each["out"], lane_rate=SS_RATE,
                                skp_fraction=SKP_FRACTION, itp_period_s=ITP_PERIOD_S,
                                max_packet_size=mps)
    try:
        burst = int(bus.extra.get("max_burst", 16))
        gap_ns = float(bus.extra.get("burst_gap_ns", 0.0))
    except (TypeError, ValueError):
        raise ValueError("USB3 model: max_burst and burst_gap_ns must be numbers") from None
    if not 1 <= burst <= 16:
        raise ValueError(f"USB3 max burst must be 1..16 packets, not {burst}")
    profile = _profile(bus)
    turnaround_ns = retoken_us = 0.0
    if profile is not None:
        burst = min(burst, profile.max_burst_in if direction == "in" else profile.max_burst_out)
        turnaround_ns, retoken_us = profile.turnaround_ns, profile.retoken_delay_us
    per_dp = mps + DP_OVERHEAD
    itp = (DPH_BYTES if direction == "out" else LINK_COMMANDS_PER_TP) / (SS_RATE * ITP_PERIOD_S)
    rate = SS_RATE * (1 - SKP_FRACTION) * (1 - itp)
    round_trip = round_trip_s(direction, mps, turnaround_ns)
    device_ns = DEVICE_RESPONSE_CYCLES[direction] / PIPE_CLOCK_HZ * 1e9
    window_time = max(burst * per_dp / rate, round_trip)
    latency_bound = window_time > burst * per_dp / rate
    burst_time = window_time + gap_ns * 1e-9
    throughput = burst * mps / burst_time
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
        packets = max(1, math.ceil(length / mps))
        bursts = math.ceil(packets / burst)
        total = length / throughput + retoken_us * 1e-6
        throughput = length / total
        lines.append(f"transfer {length} B = {packets} DPs in {bursts} bursts + re-token "
                     f"{retoken_us:g} µs -> {throughput / 1e6:.1f} MB/s")
        parts.update(length=length, packets=packets, bursts=bursts)
    if queue_depth is not None:
        parts["queue_depth"] = queue_depth
    return Ceiling(throughput, "\n".join(lines), parts, direction, "usb3-ss link")


def round_trip_s(direction: str, payload: int = DP_PAYLOAD, turnaround_ns: float = 0.0) -> float:
    """Seconds from a DP's first symbol to the first symbol of the DP its ACK TP lets go.

    The host answers after ``turnaround_ns``; on OUT its LGOOD + LCRD for the ACK TP come first
    unless the turnaround hides them. The device answers after :data:`DEVICE_RESPONSE_CYCLES`.
    """
    if direction not in DEVICE_RESPONSE_CYCLES:
        raise ValueError(f"USB3 bulk direction is in or out, not {direction!r}")
    wire = (payload + DPH_BYTES + DPP_OVERHEAD + TP_BYTES) / SS_RATE
    host = turnaround_ns * 1e-9
    if direction == "out":
        host = max(host, LINK_COMMANDS_PER_TP / SS_RATE)
    return wire + host + DEVICE_RESPONSE_CYCLES[direction] / PIPE_CLOCK_HZ
