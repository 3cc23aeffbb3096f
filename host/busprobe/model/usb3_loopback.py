"""USB 3.0 SuperSpeed loopback ceiling: OUT data returned on IN, both lanes busy at once.

SuperSpeed is dual simplex: the host -> device lane carries the OUT data and the device -> host
lane the IN data, at the same time. Unlike USB 2.0's half-duplex loopback (half the streamed
rate, :mod:`.usb2_loopback`), each direction keeps nearly the full rate; what it loses is the
other direction's handshakes on its lane. Per 1024-byte packet moved each way, each lane carries
(USB 3.2 §7.2.4, §8.2)::

    its own DP                 DPH 20 + 1024 + DPP framing/CRC 12         = 1056 B
    LGOOD + LCRD answering the other side's ACK TP for that DP               16 B
    the ACK TP for the DP coming the other way                               20 B
    LGOOD + LCRD answering that DP's header                                  16 B
                                                                 per pair = 1108 B

    ceiling = 500 MB/s × (1 - SKP) × (1 - ITP) × 1024 / 1108             (bytes returned/s)

With the ideal host that is about 459 MB/s each way (the streamed ceiling is 474.8): the figure
a loopback sweep is held to. A host profile's window or turnaround only matters when it makes
one direction latency-bound (:func:`~.usb3.usb3_ceiling` of that direction); the loopback then
runs at the slower of the two.
"""

from __future__ import annotations

from .ceiling_type import Ceiling

__all__ = ["loopback_ceiling", "PAIR_OVERHEAD"]

#: Bytes on each lane per packet moved each way, beyond the payload: its DP's header and
#: framing, the link commands for its ACK TP, the ACK TP for the other direction's DP and the
#: link commands for that DP's header.
PAIR_OVERHEAD = 20 + 12 + 16 + 20 + 16


def loopback_ceiling(in_ceiling: Ceiling, out_ceiling: Ceiling, *, lane_rate: float,
                     skp_fraction: float, itp_period_s: float, max_packet_size: int) -> Ceiling:
    """The loopback ceiling from the lanes' sharing and each direction's own bound."""
    itp = 20 / (lane_rate * itp_period_s)  # the host's ITP header on the host -> device lane
    rate = lane_rate * (1 - skp_fraction) * (1 - itp)
    per_pair = max_packet_size + PAIR_OVERHEAD
    shared = rate * max_packet_size / per_pair
    slower = min(in_ceiling, out_ceiling, key=lambda ceiling: ceiling.throughput)
    throughput = min(shared, slower.throughput)
    binding = "both lanes shared by data and the other direction's handshakes" \
        if throughput == shared else f"{slower.direction.upper()} alone is the bound"
    lines = [
        f"dual simplex: each lane carries its DP ({max_packet_size} + 32 B), the link commands "
        f"for its ACK TP (16 B), the other direction's ACK TP (20 B) and the link commands for "
        f"the other DP's header (16 B) = {per_pair} B per packet each way",
        f"lane {lane_rate / 1e6:.0f} MB/s × (1 - SKP {skp_fraction * 100:.2f} %) × (1 - ITP "
        f"{itp * 100:.3f} %) × {max_packet_size} / {per_pair} = {shared / 1e6:.1f} MB/s",
        f"IN alone {in_ceiling.throughput / 1e6:.1f}, OUT alone "
        f"{out_ceiling.throughput / 1e6:.1f} MB/s -> {throughput / 1e6:.1f} MB/s returned "
        f"({binding})",
    ]
    parts = {"lane_rate": lane_rate, "skp_fraction": skp_fraction, "itp_fraction": itp,
             "pair_wire_bytes": per_pair, "shared": shared, "in": in_ceiling.throughput,
             "out": out_ceiling.throughput, "plateau": throughput}
    return Ceiling(throughput, "\n".join(lines), parts, "loopback", "usb3-ss loopback")
