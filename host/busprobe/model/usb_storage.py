"""A disk behind the operating system's USB storage drivers: BOT and UAS ceilings per host profile.

Bus kind ``usb-storage`` (``block:/dev/sdX``). A block I/O of ``length`` bytes becomes
``ceil(length / max_command)`` SCSI commands: the block layer splits at ``max_sectors_kb``
(``bus.extra``; 120 KiB, 240 sectors, is what Linux ``usb-storage`` allows at high speed).

BOT (``usb-storage``; ``bus.protocol == "bot"``). One command at a time whatever the queue depth
(the driver's ``can_queue`` is 1), each a CBW, the data and a CSW, each stage submitted when the
one before completed: :func:`.usb2_bot.bot_command` per command, so::

    t_io = Σ over the I/O's commands of t_BOT(command)           throughput = length / t_io

UAS (``uas``; ``"uas"``), at high speed without streams (UAS §4.4). The driver submits a
command IU on the command pipe with the status pipe's IN already queued; the device answers
READ READY / WRITE READY there; the driver then submits the data and the next status IN, and the
sense IU follows the data. So a command pays two of the host's turnarounds where BOT pays three,
and ``q`` commands are in flight at once (``queue_depth`` I/Os of ``k`` commands each, at most
the device's tags), so their turnarounds overlap; the bus carries one command's packets at a
time::

    chain    = resubmit + IU(command 32 B OUT) + IU(READY 8 B IN) + completion
               + resubmit + data + IU(sense 16 B IN) + completion     (µframe-rounded on EHCI)
    busy     = the command's data at the profile's packets per µframe + the three IUs' line time
    t_cmd    = max(busy, chain / q)                                   throughput = length / t_io

The stage stepping is :mod:`.usb2_bot`'s (its wrapper stage and :func:`.usb2_schedule.
run_transfers`), so BOT and UAS are stepped by the same rules the simulated controller follows.
Limits: a finite run's start-up is not modelled (the ceiling is the steady state); the IU sizes
are UAS's (command IU 32 B with a 16-byte CDB, READ/WRITE READY 8 B, sense IU 16 B without sense
data); SuperSpeed has no model yet.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..protocol.usb2 import CLOCK_HZ
from ..transport import BusDescription
from . import usb2_wire as wire
from .ceiling_type import Ceiling
from .usb2 import packets_per_uframe
from .usb2_bot import _wrapper_stage, bot_command
from .usb2_hosts import HostProfile, load_profile
from .usb2_schedule import run_transfers

__all__ = ["storage_ceiling", "storage_link_only", "commands_of", "uas_command", "uas_transfers",
           "DEFAULT_MAX_SECTORS_KB", "COMMAND_IU", "READY_IU", "SENSE_IU", "DEFAULT_UAS_TAGS"]

#: Linux ``usb-storage``'s limit at high speed: 240 sectors of 512 bytes.
DEFAULT_MAX_SECTORS_KB = 120
#: UAS information units (UAS 1.0 §6.2): command IU with a 16-byte CDB, READ/WRITE READY IU,
#: sense IU without sense data.
COMMAND_IU, READY_IU, SENSE_IU = 32, 8, 16
#: Commands in flight when neither the result nor the device says (Linux ``uas`` asks the
#: device's tag count; busprobe's null disk is configured with its own).
DEFAULT_UAS_TAGS = 32


def _usb_direction(direction: str) -> str:
    if direction not in ("read", "write"):
        raise ValueError(f"direction {direction!r} does not exist on usb-storage "
                         "(use read or write)")
    return "in" if direction == "read" else "out"


def commands_of(length: int, max_command: int) -> list[int]:
    """The commands (bytes each) an I/O of ``length`` bytes is split into."""
    full, rest = divmod(length, max_command)
    return [max_command] * full + ([rest] if rest else [])


def _line(direction: str, payload: int) -> int:
    return wire.bits_to_cycles(wire.transaction_bits(direction, payload).total)


def uas_command(profile: HostProfile, direction: str, length: int, *,
                max_packet_size: int = 512) -> dict[str, float]:
    """Seconds of one UAS command of ``length`` bytes: ``chain`` (its two turnarounds, stepped
    from cycle 0) and ``busy`` (what it holds the bus for)."""
    usb = _usb_direction(direction)
    resubmit = round(profile.resubmit_latency_us * 1e-6 * CLOCK_HZ)
    # Stage 1: the command IU, and the READY IU right behind it on the status pipe.
    done = _wrapper_stage(profile, "out", COMMAND_IU, resubmit, max_packet_size)
    done += _line("in", READY_IU)
    if profile.completion_on_uframe:
        done = -(-done // wire.UFRAME_CYCLES) * wire.UFRAME_CYCLES
    # Stage 2: the data, then the sense IU on the status pipe queued beside it.
    packets = max(1, math.ceil(length / max_packet_size))
    last = length - (packets - 1) * max_packet_size
    done = run_transfers(profile, usb, packets=packets, queue_depth=1, count=1,
                         start=done + resubmit, max_packet_size=max_packet_size,
                         last_payload=last).completions[0]
    done += _line("in", SENSE_IU)
    if profile.completion_on_uframe:
        done = -(-done // wire.UFRAME_CYCLES) * wire.UFRAME_CYCLES
    per_uframe = packets_per_uframe(profile, usb, max_packet_size)[0]
    busy = (length / (per_uframe * max_packet_size) * wire.UFRAME_S
            + (_line("out", COMMAND_IU) + _line("in", READY_IU) + _line("in", SENSE_IU))
            / CLOCK_HZ)
    return {"chain": done / CLOCK_HZ, "busy": busy}


def storage_link_only(bus: BusDescription) -> BusDescription:
    """The same disk behind the ideal host controller."""
    return replace(bus, host_profile="ideal")


def storage_ceiling(bus: BusDescription, direction: str, *, length: int | None = None,
                    queue_depth: int | None = None, transfers: int | None = None) -> Ceiling:
    """The most an I/O ladder point can read: BOT or UAS by ``bus.protocol``, per host profile.

    ``length`` omitted: I/Os of 8 whole commands (the plateau); ``queue_depth`` omitted: the
    device's tags (UAS). ``transfers`` is accepted and ignored: the steady state is the bound.
    """
    _usb_direction(direction)
    if bus.speed != "high":
        raise NotImplementedError(f"no usb-storage model at {bus.speed} speed yet")
    if bus.protocol not in ("bot", "uas"):
        raise ValueError(f"usb-storage protocol {bus.protocol!r} has no model (bot or uas)")
    profile = load_profile(bus.host_profile or "ideal")
    mps = bus.max_packet_size or 512
    max_command = int(bus.extra.get("max_sectors_kb") or DEFAULT_MAX_SECTORS_KB) * 1024
    length = length or 8 * max_command
    commands = commands_of(length, max_command)
    tags = int(bus.extra.get("uas_tags") or DEFAULT_UAS_TAGS)
    lines = [f"usb-storage {bus.protocol.upper()}, host profile {profile.name}: an I/O of "
             f"{length} B = {len(commands)} command(s) of at most {max_command} B "
             f"(max_sectors_kb {max_command // 1024})"]
    parts: dict[str, object] = {"protocol": bus.protocol, "commands": len(commands),
                                "max_command": max_command, "device_ceiling": None}
    if bus.protocol == "bot":
        per = [bot_command(profile, _usb_direction(direction), c,
                           max_packet_size=mps)["command"] for c in commands]
        seconds = sum(per)
        lines.append("BOT: one command at a time (CBW, data, CSW, 3 turnarounds each), "
                     "whatever the queue depth")
        lines.append(" + ".join(f"{s * 1e6:.2f}" for s in per) + f" = {seconds * 1e6:.2f} µs")
    else:
        in_flight = min(tags, (queue_depth or tags) * len(commands))
        seconds = 0.0
        for c in commands:
            times = uas_command(profile, direction, c, max_packet_size=mps)
            seconds += max(times["busy"], times["chain"] / in_flight)
        last = uas_command(profile, direction, commands[0], max_packet_size=mps)
        lines.append(f"UAS: {in_flight} command(s) in flight; per {commands[0]} B command chain "
                     f"{last['chain'] * 1e6:.2f} µs (2 turnarounds) / {in_flight}, bus "
                     f"{last['busy'] * 1e6:.2f} µs: the larger binds")
        lines.append(f"per I/O {seconds * 1e6:.2f} µs")
        parts["in_flight"] = in_flight
    throughput = length / seconds
    lines.append(f"{length} B / {seconds * 1e6:.2f} µs = {throughput / 1e6:.3f} MB/s")
    parts["io_seconds"] = seconds
    return Ceiling(throughput, "\n".join(lines), parts, direction,
                   f"usb-storage {bus.protocol} host profile {profile.name}")


def uas_transfers(profile: HostProfile, direction: str, length: int, queue_depth: int,
                  max_packet_size: int = 512) -> Ceiling:
    """busprobe's own UAS framing on the null disk (``sweep --protocol uas``, bus ``usb2-hs``):
    each transfer one command of ``length`` bytes, ``queue_depth`` of them outstanding, so the
    UAS term above with ``in_flight = queue_depth`` and no splitting (``direction`` ``in`` or
    ``out``)."""
    if direction not in ("in", "out"):
        raise ValueError(f"UAS moves data in or out, not {direction}")
    times = uas_command(profile, "read" if direction == "in" else "write", length,
                        max_packet_size=max_packet_size)
    seconds = max(times["busy"], times["chain"] / queue_depth)
    throughput = length / seconds
    formula = "\n".join([
        f"usb2-hs UAS, host profile {profile.name}: one command of {length} B per transfer, "
        f"{queue_depth} outstanding",
        f"chain {times['chain'] * 1e6:.2f} µs (2 turnarounds) / {queue_depth}, bus "
        f"{times['busy'] * 1e6:.2f} µs: the larger binds",
        f"{length} B / {seconds * 1e6:.2f} µs = {throughput / 1e6:.3f} MB/s"])
    parts: dict[str, object] = {"protocol": "uas", "length": length, "in_flight": queue_depth,
                                "chain": times["chain"], "busy": times["busy"],
                                "period": seconds, "device_ceiling": None}
    return Ceiling(throughput, formula, parts, direction,
                   f"usb2-hs host profile {profile.name} UAS")
