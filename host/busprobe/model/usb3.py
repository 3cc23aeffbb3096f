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
"""

from __future__ import annotations

import math

from ..transport import BusDescription
from .ceiling_type import Ceiling

__all__ = ["usb3_ceiling", "SS_RATE", "DP_PAYLOAD", "DP_OVERHEAD"]

SS_RATE = 5e9 * 8 / 10 / 8  # bytes/s
DP_PAYLOAD = 1024
DPH_BYTES = 4 + 12 + 2 + 2
DPP_OVERHEAD = 4 + 4 + 4
LINK_COMMANDS_PER_TP = 8 + 8
DP_OVERHEAD = DPH_BYTES + DPP_OVERHEAD + LINK_COMMANDS_PER_TP  # 48
SKP_FRACTION = 2 / (354 + 2)
ITP_PERIOD_S = 125e-6


def usb3_ceiling(bus: BusDescription, direction: str, *, length: int | None = None,
                 queue_depth: int | None = None) -> Ceiling:
    """Ceiling of bulk ``direction`` on a SuperSpeed link (see module).

    ``bus.extra`` may give ``max_burst`` (1..16, default 16) and ``burst_gap_ns`` (default 0).
    """
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
    per_dp = mps + DP_OVERHEAD
    itp = (DPH_BYTES if direction == "out" else LINK_COMMANDS_PER_TP) / (SS_RATE * ITP_PERIOD_S)
    rate = SS_RATE * (1 - SKP_FRACTION) * (1 - itp)
    burst_time = burst * per_dp / rate + gap_ns * 1e-9
    throughput = burst * mps / burst_time
    lines = [
        f"lane = 5 Gb/s × 8/10 = {SS_RATE / 1e6:.0f} MB/s; SKP {SKP_FRACTION * 100:.2f} %,"
        f" ITP {itp * 100:.3f} % -> {rate / 1e6:.1f} MB/s",
        f"DP = {mps} + DPH {DPH_BYTES} + DPP framing/CRC {DPP_OVERHEAD} + LGOOD/LCRD"
        f" {LINK_COMMANDS_PER_TP} = {per_dp} B",
        f"burst {burst} DPs + gap {gap_ns:g} ns -> {burst} × {mps} B / {burst_time * 1e6:.3f} µs"
        f" = {throughput / 1e6:.1f} MB/s",
    ]
    parts: dict[str, object] = {"lane_rate": SS_RATE, "skp_fraction": SKP_FRACTION,
                                "itp_fraction": itp, "dp_wire_bytes": per_dp, "max_burst": burst,
                                "burst_gap_ns": gap_ns, "plateau": throughput}
    if length is not None:
        packets = math.ceil(length / mps)
        bursts = math.ceil(packets / burst)
        total = (length + packets * DP_OVERHEAD) / rate + bursts * gap_ns * 1e-9
        throughput = length / total
        lines.append(f"transfer {length} B = {packets} DPs in {bursts} bursts -> "
                     f"{throughput / 1e6:.1f} MB/s")
        parts.update(length=length, packets=packets, bursts=bursts)
    if queue_depth is not None:
        parts["queue_depth"] = queue_depth
    return Ceiling(throughput, "\n".join(lines), parts, direction, "usb3-ss link")
