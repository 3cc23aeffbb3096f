"""A disk behind the operating system's USB storage drivers: BOT and UAS ceilings per host profile.

Bus kind ``usb-storage`` (``block:/dev/sdX``). A block I/O of ``length`` bytes becomes
``ceil(length / max_command)`` SCSI commands: the block layer splits at ``max_sectors_kb``
(``bus.extra``; 120 KiB, 240 sectors, is what Linux ``usb-storage`` allows at high speed).

BOT (``usb-storage``; ``Framing.BOT``). One command at a time whatever the queue depth
(the driver's ``can_queue`` is 1), each a CBW, the data and a CSW, each stage submitted when the
one before completed: :func:`.usb2_bot.bot_command` per command, so::

    t_io = Σ over the I/O's commands of t_BOT(command)           throughput = length / t_io

UAS (``uas``; ``"uas"``), at high speed without streams (UAS §4.4): a command IU on the command
pipe with the status pipe's IN already queued; the device answers READ READY / WRITE READY
there; the driver then submits the data and a status IN in the READY's place; the SENSE IU
follows the data, and the command is done when both are in. So a command pays the host's
turnaround after its READY (its data waits for the driver) and, at queue depth 1, after its
SENSE too; ``q`` commands in flight (``queue_depth`` I/Os of ``k`` commands each, at most the
device's tags) hide the second: the next command's READY follows the SENSE at once. The bus
carries one command's data at a time and polls the status pipe between its packets. All of it
is stepped transaction by transaction by :func:`.usb2_uas.uas_run` (the simulated
controller's rules, an ideal device), and the I/O's time is the steady state's::

    t_io = the period of one I/O's commands with q in flight      throughput = length / t_io

Limits: the steady state (a finite run's start-up is not modelled here; ``sweep --protocol uas``
steps its own run, :func:`uas_transfers`); the IU sizes are :mod:`busprobe.protocol.uas`'s
(command IU 32 B, READY 4 B, SENSE 16 B without sense data). At SuperSpeed (``speed``
``super``) the commands are costed by the ``usb3-ss`` models instead (:mod:`.usb3_storage`:
BOT one at a time, UAS with bulk streams).
"""

from __future__ import annotations

from dataclasses import replace

from ..protocol.names import Direction, Framing
from ..transport import BusDescription
from .ceiling_type import Ceiling
from .usb2_bot import bot_command
from .usb2_hosts import HostProfile, load_profile
from .usb2_run import uas_run_ceiling
from .usb2_uas import uas_period
from .usb3_storage import SUPERSPEED_MAX_SECTORS_KB, superspeed_io

__all__ = ["storage_ceiling", "storage_link_only", "commands_of", "uas_transfers",
           "DEFAULT_MAX_SECTORS_KB", "DEFAULT_UAS_TAGS"]

#: Linux ``usb-storage``'s limit at high speed: 240 sectors of 512 bytes.
DEFAULT_MAX_SECTORS_KB = 120
#: Commands in flight when neither the result nor the device says (Linux ``uas`` asks the
#: device's tag count; busprobe's null disk is configured with its own).
DEFAULT_UAS_TAGS = 32


def _usb_direction(direction: str) -> str:
    if direction not in (Direction.READ, Direction.WRITE):
        raise ValueError(f"direction '{direction}' does not exist on usb-storage "
                         "(use read or write)")
    return Direction.IN if direction == Direction.READ else Direction.OUT


def commands_of(length: int, max_command: int) -> list[int]:
    """The commands (bytes each) an I/O of ``length`` bytes is split into."""
    full, rest = divmod(length, max_command)
    return [max_command] * full + ([rest] if rest else [])


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
    if bus.speed not in ("high", "super"):
        raise NotImplementedError(f"no usb-storage model at {bus.speed} speed yet")
    if bus.protocol not in (Framing.BOT, Framing.UAS):
        raise ValueError(f"usb-storage protocol '{bus.protocol}' has no model (bot or uas)")
    superspeed = bus.speed == "super"
    default_kb = (SUPERSPEED_MAX_SECTORS_KB[Framing(bus.protocol)] if superspeed
                  else DEFAULT_MAX_SECTORS_KB)
    max_command = int(bus.extra.get("max_sectors_kb") or default_kb) * 1024
    length = length or 8 * max_command
    commands = commands_of(length, max_command)
    tags = int(bus.extra.get("uas_tags") or DEFAULT_UAS_TAGS)
    in_flight = min(tags, (queue_depth or tags) * len(commands))
    parts: dict[str, object] = {"protocol": bus.protocol, "commands": len(commands),
                                "max_command": max_command, "device_ceiling": None}
    split = (f"an I/O of {length} B = {len(commands)} command(s) of at most {max_command} B "
             f"(max_sectors_kb {max_command // 1024})")
    if superspeed:
        seconds, derivation, host = superspeed_io(bus, _usb_direction(direction), commands,
                                                  in_flight)
        lines = [f"usb-storage {bus.protocol.upper()} at 5000M, host {host}: {split}",
                 *derivation]
        if bus.protocol == Framing.UAS:
            parts["in_flight"] = in_flight
        if host != (bus.host_profile or "ideal"):
            parts["host_stand_in"] = bus.host_profile  # the ideal host stood in for it
        return _ceiling(bus, direction, length, seconds, lines, parts, host)
    profile = load_profile(bus.host_profile or "ideal")
    mps = bus.max_packet_size or 512
    lines = [f"usb-storage {bus.protocol.upper()}, host profile {profile.name}: {split}"]
    if bus.protocol == Framing.BOT:
        per = [bot_command(profile, _usb_direction(direction), c,
                           max_packet_size=mps)["command"] for c in commands]
        seconds = sum(per)
        lines.append("BOT: one command at a time (CBW, data, CSW, 3 turnarounds each), "
                     "whatever the queue depth")
        lines.append(" + ".join(f"{s * 1e6:.2f}" for s in per) + f" = {seconds * 1e6:.2f} µs")
    else:
        seconds = uas_period(profile, _usb_direction(direction), commands,
                             queue_depth=in_flight, max_packet_size=mps)
        lines.append(f"UAS: {in_flight} command(s) in flight, stepped transaction by "
                     f"transaction (READY, the driver's turnaround, the data, the SENSE"
                     f"{'' if in_flight > 1 else ', the turnaround again'}); per I/O "
                     f"{seconds * 1e6:.2f} µs in steady state")
        parts["in_flight"] = in_flight
    return _ceiling(bus, direction, length, seconds, lines, parts, profile.name)


def _ceiling(bus: BusDescription, direction: str, length: int, seconds: float,
             lines: list[str], parts: dict[str, object], host: str) -> Ceiling:
    throughput = length / seconds
    lines.append(f"{length} B / {seconds * 1e6:.2f} µs = {throughput / 1e6:.3f} MB/s")
    parts["io_seconds"] = seconds
    return Ceiling(throughput, "\n".join(lines), parts, direction,
                   f"usb-storage {bus.protocol} host profile {host}")


def uas_transfers(profile: HostProfile, direction: str, length: int, queue_depth: int,
                  max_packet_size: int = 512, transfers: int | None = None) -> Ceiling:
    """busprobe's own UAS framing on the null disk (``sweep --protocol uas``, bus ``usb2-hs``):
    each transfer one command of ``length`` bytes, ``queue_depth`` of them outstanding
    (``direction`` ``in`` or ``out``), stepped by :func:`.usb2_uas.uas_run`: the steady state,
    or with ``transfers`` the most a host-timed run of that many commands reads
    (:func:`.usb2_run.uas_run_ceiling`, over its start phase)."""
    if direction not in (Direction.IN, Direction.OUT):
        raise ValueError(f"UAS moves data in or out, not {direction}")
    period = uas_period(profile, direction, [length], queue_depth=queue_depth,
                        max_packet_size=max_packet_size)
    throughput = length / period
    lines = [f"usb2-hs UAS, host profile {profile.name}: one command of {length} B per "
             f"transfer, {queue_depth} outstanding, stepped transaction by transaction "
             f"(READY, the driver's turnaround, the data, the SENSE"
             f"{'' if queue_depth > 1 else ', the turnaround again'})",
             f"steady state: {period * 1e6:.2f} µs per command = {throughput / 1e6:.3f} MB/s"]
    parts: dict[str, object] = {"protocol": "uas", "length": length, "in_flight": queue_depth,
                                "period": period, "device_ceiling": None}
    if transfers is not None:
        run = uas_run_ceiling(profile, direction, length=length, queue_depth=queue_depth,
                              transfers=transfers, max_packet_size=max_packet_size)
        lines.append(f"measured run: {transfers} commands, host clock from the first "
                     f"submission to the last completion, stepped from {run.phases} start "
                     f"phases: at least {run.seconds * 1e6:.2f} µs -> "
                     f"{run.throughput / 1e6:.3f} MB/s")
        parts.update(transfers=transfers, steady=throughput, run_seconds=run.seconds,
                     start_phases=run.phases)
        throughput = run.throughput
    return Ceiling(throughput, "\n".join(lines), parts, direction,
                   f"usb2-hs host profile {profile.name} UAS")
