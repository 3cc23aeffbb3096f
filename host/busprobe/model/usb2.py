"""USB 2.0 high-speed bulk ceiling, per host-controller profile.

Plateau (long transfers, enough queued)::

    packets/µframe = min(profile.max_per_uframe(direction),
                         transactions that fit after SOF (usb2_wire, with the profile's gap))
    ceiling        = packets/µframe × max packet size × 8000 µframes/s

With the ``ideal`` profile this is the spec's 13 × 512 × 8000 = 53.248 MB/s; the simulated host
controller schedules by the same profile and the same line times
(:mod:`busprobe.protocol.usb2_wire`), so its
plateau equals this ceiling.

Per transfer of ``length`` bytes at queue depth ``q`` (what short transfers and QD 1 pay)::

    packets    = ceil(length / max packet size)           (a short last packet takes a slot)
    t_bus      = packets / packets-per-µframe × 125 µs     (the transfer's share of the bus)
    t_cycle    = resubmit + t_bus + completion latency    (one transfer's turnaround, alone)
                 rounded up to whole µframes when the profile reports completions on µframe
                 boundaries (EHCI interrupt threshold): a completion lands on a boundary, so the
                 next transfer starts ``resubmit`` after one and the cycle repeats in µframes
    throughput = length / max(t_bus, t_cycle / q)

A transfer that is already queued starts as soon as the previous one leaves the bus, so ``q``
transfers in flight hide the turnaround once ``t_cycle <= q × t_bus``. For transfers of up to
128 KiB the microframe phase at which each starts matters more than this average; there the time
per transfer comes from stepping the same rules (:mod:`.usb2_schedule`).
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..protocol import usb2_wire as wire
from ..protocol.names import Direction, Framing
from ..protocol.usb2 import MAX_PACKET_SIZE
from ..transport import BusDescription
from .ceiling_type import Ceiling
from .usb2_bot import bot_command, bot_lines
from .usb2_hosts import HostProfile, load_profile
from .usb2_loopback import loopback_ceiling
from .usb2_run import finite_run
from .usb2_schedule import MAX_STEPPED_PACKETS, average_period, steady_period

__all__ = ["usb2_ceiling", "usb2_link_only", "usb2_shared_ceiling", "describe_usb2",
           "packets_per_uframe", "UFRAMES_PER_S"]

UFRAMES_PER_S = round(1 / wire.UFRAME_S)  # 8000


def packets_per_uframe(profile: HostProfile, direction: str,
                       max_packet_size: int = MAX_PACKET_SIZE) -> tuple[int, int, int]:
    """``(used, profile_limit, wire_fit)`` bulk packets per microframe for ``profile``.

    ``wire_fit`` counts what fits after SOF with the profile's inter-transaction gap added to the
    spec's minimum inter-packet delay
    (:func:`~busprobe.protocol.usb2_wire.bulk_transactions_per_uframe`).
    """
    gap_bits = wire.IPD_MIN_BITS + round(profile.inter_transaction_gap_ns * 1e-9 * wire.BIT_RATE)
    fit = wire.bulk_transactions_per_uframe(max_packet_size, direction=direction,
                                            gap_bits=gap_bits)
    limit = profile.max_per_uframe(direction)
    return min(limit, fit), limit, fit


def usb2_link_only(bus: BusDescription) -> BusDescription:
    """``bus`` behind the ideal host controller: what the bus itself allows."""
    return replace(bus, host_profile="ideal")


def describe_usb2(bus: BusDescription) -> str:
    """One line naming the configuration (``busprobe model``)."""
    return (f"usb2 high speed, host profile {bus.host_profile or 'ideal'}"
            + (", BOT framing" if bus.protocol == Framing.BOT else ""))


def usb2_ceiling(bus: BusDescription, direction: str, *, length: int | None = None,
                 queue_depth: int | None = None, transfers: int | None = None) -> Ceiling:
    """Ceiling of bulk ``direction`` on a high-speed bus with ``bus.host_profile`` (see module).

    With ``transfers`` (and a length), the ceiling of one measured run of that many transfers,
    on the host's clock, and in ``parts["device_ceiling"]`` on the device's (:mod:`.usb2_run`).
    """
    profile = load_profile(bus.host_profile or "ideal")
    mps = bus.max_packet_size or MAX_PACKET_SIZE
    if direction == Direction.LOOPBACK:
        ceiling = loopback_ceiling(profile, mps, length=length, queue_depth=queue_depth,
                                   uframes_per_s=UFRAMES_PER_S)
        if transfers is None or length is None:
            return ceiling
        return finite_run(ceiling, profile, direction, length, queue_depth or 1, transfers, mps)
    used, limit, fit = packets_per_uframe(profile, direction, mps)
    plateau = used * mps * UFRAMES_PER_S
    binding = "host profile" if limit < fit else "bus"
    lines = [
        f"packets/µframe = min(profile {profile.name} {limit}, fit after SOF {fit}) = {used}"
        f" ({binding} binds)",
        f"plateau = {used} × {mps} B × {UFRAMES_PER_S} µframe/s = {plateau / 1e6:.3f} MB/s",
    ]
    parts: dict[str, object] = {
        "host_profile": profile.name, "packets_per_uframe": used, "profile_per_uframe": limit,
        "wire_fit_per_uframe": fit, "max_packet_size": mps, "uframes_per_s": UFRAMES_PER_S,
        "plateau": plateau,
    }
    throughput = float(plateau)
    if bus.protocol == Framing.BOT and direction not in (Direction.IN, Direction.OUT):
        raise ValueError(f"BOT moves data in or out, not {direction}")
    if bus.protocol == Framing.BOT and length is not None:
        # One command at a time whatever the queue depth: BOT has no queue (usb2_bot).
        times = bot_command(profile, direction, length, max_packet_size=mps)
        lines += bot_lines(profile, direction, length, times)
        parts.update(protocol="bot", length=length, period=times["command"],
                     stage_seconds={k: v for k, v in times.items() if k != "command"})
        throughput = length / times["command"]
    elif length is not None or queue_depth is not None:
        throughput = _per_transfer(profile, direction, used, mps, length, queue_depth, lines,
                                   parts)
    model = f"usb2-hs host profile {profile.name}" + (" BOT" if bus.protocol == Framing.BOT else "")
    ceiling = Ceiling(throughput, "\n".join(lines), parts, direction, model)
    if transfers is None or length is None:
        return ceiling
    return finite_run(ceiling, profile, direction, length, queue_depth or 1, transfers, mps,
                      bot=bus.protocol == Framing.BOT)


def usb2_shared_ceiling(bus: BusDescription, direction: str, devices: int) -> Ceiling:
    """Plateau of ``devices`` devices together, one bulk endpoint each, on one schedule (behind
    a hub, or on the root ports of a controller whose root ports share one schedule: EHCI).

    The schedule takes one transaction at a time for all of them, so the microframe holds what
    fits after SOF whoever's the packets are; the profile's per-endpoint limit binds each
    device alone, ``devices`` times it binds them together::

        packets/µframe = min(devices × profile limit, fit after SOF)
    """
    if direction not in (Direction.IN, Direction.OUT):
        raise ValueError(f"the shared-schedule model is for in or out, not {direction}")
    profile = load_profile(bus.host_profile or "ideal")
    mps = bus.max_packet_size or MAX_PACKET_SIZE
    _, limit, fit = packets_per_uframe(profile, direction, mps)
    used = min(devices * limit, fit)
    plateau = used * mps * UFRAMES_PER_S
    formula = (f"packets/µframe = min({devices} devices × profile {profile.name} {limit}, fit "
               f"after SOF {fit}) = {used}\n"
               f"plateau together = {used} × {mps} B × {UFRAMES_PER_S} µframe/s = "
               f"{plateau / 1e6:.3f} MB/s")
    parts = {"host_profile": profile.name, "devices": devices, "packets_per_uframe": used,
             "profile_per_uframe": limit, "wire_fit_per_uframe": fit, "max_packet_size": mps,
             "uframes_per_s": UFRAMES_PER_S, "plateau": plateau}
    return Ceiling(float(plateau), formula, parts, direction,
                   f"usb2-hs {devices} devices on one bus, host profile {profile.name}")


def _per_transfer(profile: HostProfile, direction: str, used: int, mps: int, length: int | None,
                  queue_depth: int | None, lines: list[str], parts: dict[str, object]) -> float:
    """Throughput of transfers of ``length`` at ``queue_depth`` (the module's per-transfer term)."""
    # Without a length the transfer is long: 1 MiB amortises every turnaround but QD 1 on EHCI.
    length = length if length is not None else 1 << 20
    q = queue_depth if queue_depth is not None else 1 << 30
    packets = math.ceil(length / mps)
    t_bus, t_cycle, period = average_period(profile, packets, used, q)
    qd = "∞" if queue_depth is None else str(queue_depth)
    lines += [
        f"transfer {length} B = {packets} packets -> t_bus = {packets}/{used} × 125 µs"
        f" = {t_bus * 1e6:.2f} µs",
        f"t_cycle = resubmit {profile.resubmit_latency_us:g} µs + t_bus + completion"
        f" {profile.completion_latency_us:g} µs"
        f"{', rounded up to whole µframes,' if profile.completion_on_uframe else ''}"
        f" = {t_cycle * 1e6:.2f} µs",
        f"QD {qd}: {length} B / max({t_bus * 1e6:.2f} µs, {t_cycle * 1e6:.2f} µs / {qd})"
        f" = {length / period / 1e6:.3f} MB/s",
    ]
    if queue_depth is not None and packets <= MAX_STEPPED_PACKETS:
        # Short transfers: where in a microframe each one starts decides how many microframes
        # it spans; step the schedule rules instead of trusting the average.
        period = steady_period(profile, direction, packets=packets, queue_depth=queue_depth,
                               max_packet_size=mps)
        lines.append(f"stepped schedule (short transfer, µframe phase matters): "
                     f"{period * 1e6:.2f} µs per transfer = {length / period / 1e6:.3f} MB/s")
    throughput = length / period
    parts.update(length=length, queue_depth=queue_depth, packets=packets, t_bus=t_bus,
                 t_cycle=t_cycle, period=period)
    return throughput
