"""USB 2.0 high-speed loopback ceiling: OUT data returned on IN over the same half-duplex bus.

Every byte crosses the bus twice, once each way, and both directions share each microframe. A
host controller serving the OUT and the IN endpoint in turn alternates their transactions::

    transactions/µframe = those of alternating OUT and IN that fit after SOF (at most the spec's
                          13 bulk transactions, Table 5-10), and at most the profile's OUT + IN
                          limits together
    returned/µframe     = min(transactions/µframe / 2, profile OUT limit, profile IN limit)
    ceiling             = returned/µframe × max packet size × 8000 µframes/s     (bytes back/s)

With the ``ideal`` profile: 13 / 2 = 6.5 packets of 512 B per microframe, 26.624 MB/s returned
(53.248 MB/s on the wire, counting both directions).

Per transfer of ``length`` at queue depth ``q``: an OUT and an IN transfer per round trip, their
bus time ``t_bus`` = packets / returned-per-µframe × 125 µs, and one turnaround of each
(resubmit + completion) once per round trip::

    throughput = length / max(t_bus, (resubmit + t_bus + completion) / q)
"""

from __future__ import annotations

import math

from . import usb2_wire as wire
from .ceiling_type import Ceiling
from .usb2_hosts import HostProfile
from .usb2_schedule import average_period

__all__ = ["loopback_ceiling", "alternating_fit"]


def alternating_fit(max_packet_size: int, gap_bits: int) -> float:
    """Bulk transactions per microframe, OUT and IN alternating, averaged over two microframes
    (the second starts with the direction the first did not)."""
    available = wire.UFRAME_BITS - wire.sof_bits() - gap_bits
    per = {direction: wire.transaction_bits(direction, max_packet_size).total + gap_bits
           for direction in ("out", "in")}
    total = 0
    for first in ("out", "in"):
        used, turn, count = 0, first, 0
        while used + per[turn] <= available and count < wire.SPEC_MAX_BULK_PER_UFRAME:
            used += per[turn]
            count += 1
            turn = "in" if turn == "out" else "out"
        total += count
    return total / 2


def loopback_ceiling(profile: HostProfile, max_packet_size: int, *, length: int | None,
                     queue_depth: int | None, uframes_per_s: int) -> Ceiling:
    """Ceiling of ``loopback`` on a high-speed bus behind ``profile`` (see module)."""
    gap_bits = wire.IPD_MIN_BITS + round(profile.inter_transaction_gap_ns * 1e-9 * wire.BIT_RATE)
    fit = alternating_fit(max_packet_size, gap_bits)
    limit_out, limit_in = profile.max_per_uframe("out"), profile.max_per_uframe("in")
    transactions = min(fit, limit_out + limit_in)
    returned = min(transactions / 2, limit_out, limit_in)
    plateau = returned * max_packet_size * uframes_per_s
    lines = [
        f"OUT and IN alternate: {fit:g} transactions fit per µframe after SOF; profile "
        f"{profile.name} allows {limit_out} OUT + {limit_in} IN",
        f"returned = min({transactions:g} / 2, {limit_out}, {limit_in}) = {returned:g} "
        f"packets/µframe",
        f"plateau = {returned:g} × {max_packet_size} B × {uframes_per_s} µframe/s = "
        f"{plateau / 1e6:.3f} MB/s returned (each byte crosses the bus twice)",
    ]
    parts: dict[str, object] = {
        "host_profile": profile.name, "transactions_per_uframe": transactions,
        "returned_per_uframe": returned, "packets_per_uframe": returned,
        "max_packet_size": max_packet_size, "uframes_per_s": uframes_per_s, "plateau": plateau,
    }
    throughput = plateau
    if length is not None or queue_depth is not None:
        length = length if length is not None else 1 << 20
        q = queue_depth if queue_depth is not None else 1 << 30
        packets = math.ceil(length / max_packet_size)
        t_bus, t_cycle, period = average_period(profile, packets, returned, q)
        throughput = length / period
        qd = "∞" if queue_depth is None else str(queue_depth)
        lines.append(f"transfer {length} B each way: t_bus = {packets}/{returned:g} × 125 µs = "
                     f"{t_bus * 1e6:.2f} µs, round trip {t_cycle * 1e6:.2f} µs; QD {qd}: "
                     f"{throughput / 1e6:.3f} MB/s")
        parts.update(length=length, queue_depth=queue_depth, packets=packets, t_bus=t_bus,
                     t_cycle=t_cycle, period=period)
    model = f"usb2-hs loopback host profile {profile.name}"
    return Ceiling(throughput, "\n".join(lines), parts, "loopback", model)
