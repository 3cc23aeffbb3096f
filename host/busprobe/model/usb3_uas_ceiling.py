"""The ``usb3-ss`` bus's ceiling for UAS with bulk streams (``sweep --protocol uas``): the bound
and the stepped schedules of :mod:`.usb3_uas` for a bus and host profile, with their derivation
and busprobe's engine beside the ideal device."""

from __future__ import annotations

from ..protocol import uas
from ..protocol.names import Direction
from ..protocol.streams import NAMED_PRIMES, PIPE_PRIMES
from ..transport import BusDescription
from .ceiling_type import Ceiling
from .usb3 import usb3_link
from .usb3_hosts import Usb3HostProfile, load_usb3_profile
from .usb3_uas import uas_period, uas_run, uas_timing
from .usb3_uas_bound import UasBound, uas_bound
from .usb3_uas_device import BUSPROBE_DEVICE, IDEAL_DEVICE, UasDevice

__all__ = ["uas_ceiling"]

#: What each term of the bound is, as the formula names it.
_SETTERS = {"data": "data pipe", "status": "status pipe", "driver": "driver turnaround",
            "lane": "lane: every command's packets on it"}


def uas_ceiling(bus: BusDescription, direction: str, *, length: int,
                queue_depth: int | None = None, transfers: int | None = None,
                profile: Usb3HostProfile | None = None) -> Ceiling:
    """busprobe's UAS framing on the SuperSpeed null disk (``sweep --protocol uas``): each
    transfer one command of ``length`` bytes, ``queue_depth`` (default 1) outstanding; the
    steady state, or with ``transfers`` the host-timed run of that many commands
    (:func:`uas_bound`, an ideal device). ``parts``: ``stepped`` the stepped schedule's
    figure, ``busprobe_device`` / ``busprobe_stepped`` both with busprobe's UAS engine."""
    if direction not in (Direction.IN, Direction.OUT):
        raise ValueError(f"UAS moves data in or out, not {direction}")
    q = queue_depth or 1
    if q > uas.TASK_SET_DEPTH:
        raise ValueError(f"UAS with streams keeps at most {uas.TASK_SET_DEPTH} commands "
                         f"outstanding (one stream a tag), not {q}")
    profile = profile or load_usb3_profile(bus.host_profile or "ideal")
    link = usb3_link(bus, direction, profile)
    t = uas_timing(link, profile, length)
    pipe = bus.extra.get("primes") == PIPE_PRIMES
    commands = max(48, 8 * q)
    us = {k: v * 1e6 for k, v in uas_run(link, profile, length, commands=commands,
                                          queue_depth=q, pipe_primes=pipe
                                          ).stages[commands // 2].items()}

    def figures(device: UasDevice) -> tuple[float, float, UasBound]:
        """(bound, stepped, the bound's terms) in bytes/s. The stepped schedule lets no two
        packets of different pipes wait for each other on a lane, so it is held to the lane's
        term (where that binds, the lanes' sharing decides, which stepping leaves out)."""
        bound = uas_bound(link, profile, length, queue_depth=q, commands=transfers,
                          device=device, pipe_primes=pipe)
        lane = bound.terms["lane"]
        if transfers is None:
            period = uas_period(link, profile, length, queue_depth=q, device=device,
                                pipe_primes=pipe)
            return length / bound.seconds, length / max(period, lane), bound
        run = uas_run(link, profile, length, commands=transfers, queue_depth=q,
                      device=device, pipe_primes=pipe)
        return (transfers * length / bound.seconds, transfers * length / max(run.end, lane),
                bound)

    throughput, stepped, bound = figures(IDEAL_DEVICE)
    mine, mine_stepped, _ = figures(BUSPROBE_DEVICE)
    prime = "an ACK TP" if direction == Direction.IN else "its first data packet (dropped)"
    pipe_prime = "an ACK TP" if direction == Direction.IN else "a zero-length data packet"
    priming = (f"each pipe primed once with the Prime Stream ID ({pipe_prime}), NRDY; each "
               f"stream selected by the device's ERDY" if pipe else
               f"each stream primed with {prime}, NRDY, selected by the device's ERDY")
    what = ("one command's period in steady state" if transfers is None else
            f"a run of {transfers} commands, host clock from the first submission to the last "
            f"completion")
    lines = [
        f"usb3-ss UAS with bulk streams, host {profile.name}: one command of {length} B "
        f"{direction.upper()} per transfer, {q} outstanding; each its status and data transfer "
        f"on the stream of its tag, then the COMMAND IU ({uas.COMMAND_SIZE} B OUT)",
        f"stepped by the simulated xHCI's rules: a pipe moves one transfer at a time, "
        f"{profile.retoken_delay_us:g} µs after its last; {priming} and answered "
        f"{profile.turnaround_ns:g} ns later; "
        f"the {direction.upper()} transfer {t.span() * 1e6:.3f} µs; completion "
        f"{profile.completion_latency_us:g} µs, the next command "
        f"{profile.resubmit_latency_us:g} µs after the one it follows is done; a device never "
        f"the bottleneck",
        "a command in steady state, µs from its being ready: " + ", ".join(
            f"{name} {value:.2f}" for name, value in us.items()),
        f"stepped schedule: {stepped / 1e6:.3f} MB/s",
        f"bound on {what} whatever the pipes' phases: data pipe "
        f"{bound.terms['data'] * 1e6:.2f}, status pipe {bound.terms['status'] * 1e6:.2f}, "
        f"driver {bound.terms['driver'] * 1e6:.2f}, {direction.upper()} lane "
        f"{bound.terms['lane'] * 1e6:.2f} µs -> {throughput / 1e6:.3f} MB/s "
        f"(set by the {_SETTERS[bound.binding]})",
        f"with busprobe's UAS engine (its decode, a read's first packet filled at 4 bytes a "
        f"cycle, its link's idle cycles and answers, a read's next stream selected after the "
        f"host's ACK reaches it): bound {mine / 1e6:.3f} MB/s = "
        f"{mine / throughput * 100:.2f} % of it, stepped {mine_stepped / 1e6:.3f} MB/s",
    ]
    parts: dict[str, object] = {
        "protocol": "uas", "length": length, "in_flight": q, "host_profile": profile.name,
        "transfer_seconds": t.span(), "device_ceiling": None,
        "latency_bound": link.latency_bound, "stages": us, "stepped": stepped,
        "bound_terms": bound.terms, "binding": _SETTERS[bound.binding],
        "busprobe_device": mine, "busprobe_stepped": mine_stepped,
        "primes": PIPE_PRIMES if pipe else NAMED_PRIMES}
    if transfers is None:
        parts["period"] = bound.seconds
    else:
        steady = length / uas_bound(link, profile, length, queue_depth=q,
                                    pipe_primes=pipe).seconds
        parts.update(transfers=transfers, steady=steady, run_seconds=bound.seconds)
    return Ceiling(throughput, "\n".join(lines), parts, direction,
                   f"usb3-ss link UAS host profile {profile.name}")
