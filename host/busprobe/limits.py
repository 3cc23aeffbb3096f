"""The most a user may ask of a sweep, and why (docs/DESIGN.md §5.1, "Limits").

Each bound comes from what the run needs or what can finish, not from taste; asking beyond one is
refused in one line naming the bound, before anything is built, opened or measured
(:class:`LimitExceeded`, an :class:`~busprobe.transport.InvalidRequest`).

=========================  ==============  ==================================================
what                       bound           why
=========================  ==============  ==================================================
queue depth                256             transfers in flight: the PCIe engine's descriptor
                                           table holds 256 (``protocol.pcie.DMA_TABLE_DEPTH``),
                                           an xHCI transfer ring segment 256 TRBs; a USB 2.0
                                           bus moves at most 13 packets a microframe
transfer length            64 MiB          one transfer's buffer
queued bytes               256 MiB         queue depth × length: the buffers held at once
repeats                    100             the median of 100 repeats is as good as it gets;
                                           more only multiplies the run time
points                     10,000          directions × lengths × queue depths × settings: a
                                           sweep that ends (and a result file of a few hundred
                                           MB at most)
bytes per point            64 GiB          repeats × transfers × length: about 20 min at USB
                                           2.0's 53 MB/s
bytes per simulated point  256 MiB         a simulation moves 0.15-0.5 MB of bus data per
                                           wall second: 256 MiB is 10 to 30 min
=========================  ==============  ==================================================
"""

from __future__ import annotations

from collections.abc import Sequence

from .transport import InvalidRequest

__all__ = ["LimitExceeded", "MAX_QUEUE_DEPTH", "MAX_LENGTH", "MAX_QUEUED_BYTES", "MAX_REPEAT",
           "MAX_POINTS", "MAX_POINT_BYTES", "MAX_SIMULATED_POINT_BYTES", "check_repeat",
           "check_queue_depths", "check_lengths", "check_queued", "check_points",
           "check_point_bytes", "point_bytes_limit"]

MAX_QUEUE_DEPTH = 256
MAX_LENGTH = 64 << 20
MAX_QUEUED_BYTES = 256 << 20
MAX_REPEAT = 100
MAX_POINTS = 10_000
MAX_POINT_BYTES = 64 << 30
MAX_SIMULATED_POINT_BYTES = 256 << 20


class LimitExceeded(InvalidRequest):
    """A request beyond one of this module's bounds; ``str()`` names the bound."""


def _size(n: int) -> str:
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift:
            whole = n % (1 << shift) == 0
            return f"{n >> shift} {unit}" if whole else f"{n / (1 << shift):.1f} {unit}"
    return f"{n} B"


def check_repeat(repeat: int) -> None:
    if repeat > MAX_REPEAT:
        raise LimitExceeded(f"--repeat {repeat} is above the bound of {MAX_REPEAT} (the median "
                            "settles long before; more repeats only lengthen the run)")


def check_queue_depths(depths: Sequence[int]) -> None:
    for depth in depths:
        if depth > MAX_QUEUE_DEPTH:
            raise LimitExceeded(f"--queue-depth {depth} is above the bound of {MAX_QUEUE_DEPTH} "
                                "transfers in flight (the PCIe engine's descriptor table and "
                                "an xHCI ring segment hold 256)")


def check_lengths(lengths: Sequence[int]) -> None:
    for length in lengths:
        if length > MAX_LENGTH:
            raise LimitExceeded(f"length {_size(length)} is above the bound of "
                                f"{_size(MAX_LENGTH)} per transfer")


def check_queued(lengths: Sequence[int], depths: Sequence[int]) -> None:
    """Queue depth × length: the transfer buffers a point holds at once."""
    if not lengths or not depths:
        return
    length, depth = max(lengths), max(depths)
    if length * depth > MAX_QUEUED_BYTES:
        raise LimitExceeded(f"queue depth {depth} × length {_size(length)} = "
                            f"{_size(length * depth)} of buffers in flight, above the bound of "
                            f"{_size(MAX_QUEUED_BYTES)}; lower one of them")


def check_points(points: int) -> None:
    if points > MAX_POINTS:
        raise LimitExceeded(f"{points:,} points (directions × lengths × queue depths × "
                            f"settings) is above the bound of {MAX_POINTS:,} per sweep; split it")


def point_bytes_limit(simulated: bool) -> int:
    return MAX_SIMULATED_POINT_BYTES if simulated else MAX_POINT_BYTES


def check_point_bytes(total: int, *, simulated: bool, what: str) -> None:
    """``total`` bytes a point would move (repeats × transfers × length) against its bound;
    ``what`` names the point in the message."""
    bound = point_bytes_limit(simulated)
    if total > bound:
        kind = "a simulated point" if simulated else "a point"
        raise LimitExceeded(f"{what} would move {_size(total)}, above the bound of "
                            f"{_size(bound)} for {kind}; lower --min-bytes, --repeat or the "
                            "length")
