"""A disk behind the operating system's USB storage drivers on a SuperSpeed port: one I/O's least
time under BOT or UAS with bulk streams, from the ``usb3-ss`` models (what
:func:`.usb_storage.storage_ceiling` uses at ``super``).

An I/O is the block layer's commands (:func:`.usb_storage.commands_of`). Each is costed with the
SuperSpeed link's own models, the I/O's time their sum::

    BOT  t_io = Σ t_BOT(command)       one command at a time: CBW, data, CSW (:mod:`.usb3_bot`)
    UAS  t_io = Σ command / rate(command, q)   q = min(tags, queue depth × commands) in flight,
                                       each command's least period in steady state with q
                                       outstanding (:func:`.usb3_uas_bound.uas_bound`, the
                                       ideal device: ``uas_ceiling``'s figure), the host
                                       priming by stream or by pipe, whichever is faster

Host: the bus's host profile when it is a SuperSpeed one (``vl805``, ``small-burst``,
``ideal``). Any other (a block device names its controller's driver, ``xhci``) has no
SuperSpeed profile, and the ideal host stands for it: the figure is then the link's and the
protocol's, not the controller's, and the formula says so.

Limits: the steady state (a run's start is not modelled here); the commands of one I/O costed
each as if every command in flight were its size.
"""

from __future__ import annotations

from dataclasses import replace

from ..protocol import uas
from ..protocol.names import Framing
from ..transport import BusDescription
from .usb3 import usb3_ceiling, usb3_link
from .usb3_hosts import builtin_usb3_profiles, load_usb3_profile
from .usb3_uas_bound import uas_bound

__all__ = ["superspeed_io", "SUPERSPEED_MAX_SECTORS_KB"]

#: What Linux (6.1, the VM's guest) gives a SuperSpeed disk's requests when the result does not
#: say: ``usb-storage`` 1024 KiB, ``uas`` 512 KiB (``max_sectors_kb``).
SUPERSPEED_MAX_SECTORS_KB = {Framing.BOT: 1024, Framing.UAS: 512}


def superspeed_io(bus: BusDescription, direction: str, commands: list[int],
                  in_flight: int) -> tuple[float, list[str], str]:
    """Least seconds of one I/O of ``commands`` (bytes each) in ``direction`` (``in``/``out``)
    on a SuperSpeed disk under ``bus.protocol``, ``in_flight`` commands outstanding (UAS);
    the derivation's lines; the host profile used."""
    name = bus.host_profile or "ideal"
    lines = []
    if name not in builtin_usb3_profiles():
        lines.append(f"host {name}: no SuperSpeed profile, the ideal host stands for it (the "
                     f"link's and the protocol's ceiling, not the controller's)")
        name = "ideal"
    profile = load_usb3_profile(name)
    link_bus = replace(bus, kind="usb3-ss", protocol=Framing.STREAM,
                       max_packet_size=bus.max_packet_size or 1024)

    def command_seconds(length: int) -> float:
        if bus.protocol == Framing.BOT:
            return usb3_ceiling(replace(link_bus, protocol=Framing.BOT), direction,
                                length=length, queue_depth=1, profile=profile).parts["period"]
        # UAS: the ideal device's bound in steady state (what uas_ceiling's figure is), for
        # whichever way the host primes its stream pipes: a real xHC's is not known here
        # (DESIGN §6.10), and one that primes the pipe moves queued writes faster.
        link = usb3_link(link_bus, direction, profile)
        return min(uas_bound(link, profile, length, queue_depth=min(in_flight, uas.TASK_SET_DEPTH),
                             pipe_primes=pipe).seconds for pipe in (False, True))

    # An I/O's commands are of at most two lengths: each costed once.
    each = {length: command_seconds(length) for length in set(commands)}
    seconds = [each[length] for length in commands]
    if bus.protocol == Framing.BOT:
        lines.append(f"BOT at 5000M (usb3-ss, host {name}): one command at a time, each CBW, "
                     f"data, CSW")
    else:
        lines.append(f"UAS with bulk streams at 5000M (usb3-ss, host {name}): {in_flight} "
                     f"command(s) in flight, each its least period in steady state, the host "
                     f"priming each stream or each pipe, whichever is faster")
    lines.append(" + ".join(f"{s * 1e6:.2f}" for s in seconds) + f" = {sum(seconds) * 1e6:.2f} µs")
    return sum(seconds), lines, name
