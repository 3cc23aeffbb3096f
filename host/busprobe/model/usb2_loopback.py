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

from ..protocol import usb2_wire as wire
from ..protocol.names import Direction
from ..protocol.usb2 import CLOCK_HZ
from .ceiling_type import Ceiling
from .usb2_hosts import HostProfile
from .usb2_schedule import average_period

__all__ = ["loopback_ceiling", "loopback_run", "alternating_fit"]


def alternating_fit(max_packet_size: int, gap_bits: int) -> float:
    """Bulk transactions per microframe, OUT and IN alternating, averaged over two microframes
    (the second starts with the direction the first did not)."""
    available = wire.UFRAME_BITS - wire.sof_bits() - gap_bits
    per = {direction: wire.transaction_bits(direction, max_packet_size).total + gap_bits
           for direction in (Direction.OUT, Direction.IN)}
    total = 0
    for first in (Direction.OUT, Direction.IN):
        used, turn, count = 0, first, 0
        while used + per[turn] <= available and count < wire.SPEC_MAX_BULK_PER_UFRAME:
            used += per[turn]
            count += 1
            turn = Direction.IN if turn == Direction.OUT else Direction.OUT
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


def loopback_run(profile: HostProfile, *, length: int, queue_depth: int, count: int,
                 start: int = 0, max_packet_size: int = 512,
                 frames: dict[str, dict[int, int]] | None = None) -> int:
    """Line cycles from the first submission at ``start`` to the last completion of a loopback
    run: ``count`` OUT and ``count`` IN transfers of ``length``, ``queue_depth`` of each queued,
    stepped a transaction at a time by the simulated controller's rules (the endpoints take
    turns, OUT first; each within its per-microframe limit; every completion answered
    ``resubmit`` later with the next transfer of its direction).

    An IN transaction goes only once the OUT packet it returns has ended: the device would NAK
    it before, and the NAK, which costs line time and a place in the microframe, is left out,
    as is the device's ring filling up, so no real run is faster. With ``frames`` the payload
    bytes of each microframe are added per direction (``frames["in"]``, ``frames["out"]``).
    """
    uframe = wire.UFRAME_CYCLES
    after_sof = wire.bits_to_cycles(wire.sof_bits()) + \
        wire.bits_to_cycles(wire.IPD_HOST_BACK_TO_BACK_BITS)
    packets = max(1, -(-length // max_packet_size))
    last = length - (packets - 1) * max_packet_size
    ipd = wire.bits_to_cycles(wire.IPD_MIN_BITS)
    gap = wire.bits_to_cycles(round(profile.inter_transaction_gap_ns * wire.BIT_RATE / 1e9))
    order = ("out", "in")
    reserve = {d: wire.bits_to_cycles(wire.transaction_bits(d, max_packet_size).total)
               for d in order}
    short = {d: wire.bits_to_cycles(wire.transaction_bits(d, last).total) for d in order}
    limit = {d: profile.max_per_uframe(d) for d in order}
    completion = round(profile.completion_latency_us * 1e-6 * CLOCK_HZ)
    resubmit = round(profile.resubmit_latency_us * 1e-6 * CLOCK_HZ)
    ready = {d: [start] * min(queue_depth, count) for d in order}
    index, sent, in_uframe = dict.fromkeys(order, 0), dict.fromkeys(order, 0), \
        dict.fromkeys(order, 0)
    out_ends: list[int] = []
    returned = 0  # IN packets sent
    uframe_start = start // uframe * uframe
    free_at, turn, finished = max(start, uframe_start + after_sof), 0, start
    while index["in"] < count:
        if free_at >= uframe_start + uframe:
            uframe_start = free_at - free_at % uframe
            in_uframe = dict.fromkeys(order, 0)
            free_at = max(free_at, uframe_start + after_sof)
        waits = {}
        for d in order:
            if index[d] < count and in_uframe[d] < limit[d]:
                at = ready[d][index[d]]
                if d == Direction.IN:
                    if returned >= len(out_ends):
                        continue  # its data has not been sent yet
                    at = max(at, out_ends[returned] + 1)
                waits[d] = at
        chosen = next((d for d in order[turn:] + order[:turn]
                       if d in waits and waits[d] <= free_at), None)
        if chosen is None:
            later = min(waits.values(), default=uframe_start + uframe)
            free_at = later if later > free_at else uframe_start + uframe
            continue
        if free_at + reserve[chosen] > uframe_start + uframe:
            free_at = uframe_start + uframe  # it does not fit: the next microframe
            continue
        final = sent[chosen] + 1 == packets
        end = free_at + (short[chosen] if final else reserve[chosen])
        free_at = end + ipd + gap
        in_uframe[chosen] += 1
        turn = (order.index(chosen) + 1) % len(order)
        if frames is not None:
            table = frames.setdefault(chosen, {})
            key = uframe_start // uframe
            table[key] = table.get(key, 0) + (last if final else max_packet_size)
        if chosen == Direction.OUT:
            out_ends.append(end)
        else:
            returned += 1
        sent[chosen] += 1
        if final:
            done = end + completion
            if profile.completion_on_uframe:
                done = -(-done // uframe) * uframe
            sent[chosen] = 0
            index[chosen] += 1
            if len(ready[chosen]) < count:
                ready[chosen].append(done + resubmit)
            finished = max(finished, done)
    return finished - start
