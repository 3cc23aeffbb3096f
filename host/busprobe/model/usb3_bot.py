"""USB 3.0 SuperSpeed bulk throughput under Bulk-Only Transport, per host profile: the
SuperSpeed twin of :mod:`.usb2_bot`.

BOT moves each command as three bulk transfers, one after the other (``protocol/bot.py``): a
31-byte CBW on OUT, the data, a 13-byte CSW on IN, each submitted when the one before has
completed. The simulated xHCI (``sim/usb3/controller.py``) moves a transfer from when it is
ready (an endpoint's later transfer of a run no sooner than ``retoken_delay_us`` after its
previous one ended) for its own time on the link (:func:`.usb3_run.transfer_seconds`: a CBW or
CSW is one short DP with its token or ACK, the data its DPs in bursts), completes it
``completion_latency_us`` after its end, and the next stage is ready ``resubmit_latency_us``
later::

    t_stage    = max(ready, previous end on its endpoint + retoken) - ready + t_transfer
                 + completion
    t_command  = t_stage(CBW) + t_stage(data) + t_stage(CSW) + 3 × resubmit
    throughput = length / t_command

A finite run of N commands (what a repeat's host clock reads) has no resubmit before its first
CBW and nothing after its last CSW's completion.

Assumptions: the device answers each stage as the streamed model's device does (its measured
response cycles, :data:`.usb3.DEVICE_RESPONSE_CYCLES`): the data's first DP is ready when the
host tokens the IN endpoint, the CSW when the data stage ends. busprobe's disk needs some 3 µs
after the CBW for the first DP (the decode, then 1024 bytes into the IN ring at 4 bytes a
cycle), which any host turnaround of more than that hides; behind the ``ideal`` profile (no
turnaround at all) it shows, and the figure reads below this ceiling by that much per
command.
"""

from __future__ import annotations

from collections.abc import Callable

from ..protocol.bot import CBW_SIZE, CSW_SIZE
from ..protocol.names import Direction

__all__ = ["bot_stages", "bot_run_seconds", "bot_command_seconds"]


def bot_stages(direction: str, length: int) -> list[tuple[str, str, int]]:
    """``(name, direction, bytes)`` of one command's stages."""
    if direction not in (Direction.IN, Direction.OUT):
        raise ValueError(f"BOT moves data in or out, not {direction}")
    if length < 1:
        raise ValueError(f"transfer length must be positive, not {length}")
    return [("CBW", "out", CBW_SIZE), ("data", direction, length), ("CSW", "in", CSW_SIZE)]


def bot_run_seconds(transfer: Callable[[str, int], float], direction: str, length: int, *,
                    commands: int, completion: float, resubmit: float, retoken: float,
                    spent: dict[str, float] | None = None) -> float:
    """Seconds from the first CBW's submission to the last CSW's completion of ``commands``
    commands one after the other; ``transfer(direction, bytes)`` is one transfer's time on the
    link. ``spent``, if given, sums each stage's time from ready to completion."""
    ready = done = 0.0
    last_end: dict[str, float] = {}
    for _ in range(commands):
        for name, way, size in bot_stages(direction, length):
            start = ready
            if way in last_end:
                start = max(start, last_end[way] + retoken)
            end = start + transfer(way, size)
            last_end[way] = end
            done = end + completion
            if spent is not None:
                spent[name] = spent.get(name, 0.0) + done - ready
            ready = done + resubmit
    return done


def bot_command_seconds(transfer: Callable[[str, int], float], direction: str, length: int, *,
                        completion: float, resubmit: float,
                        retoken: float) -> dict[str, float]:
    """Seconds per BOT command in steady state (``command``) and per stage (``CBW``,
    ``data``, ``CSW``: from being ready to completing) and ``resubmit`` (three per command)."""
    terms = dict(completion=completion, resubmit=resubmit, retoken=retoken)
    spent: dict[str, float] = {}
    # The third command's time: the first two set every endpoint's last end.
    before = bot_run_seconds(transfer, direction, length, commands=2, **terms)
    after = bot_run_seconds(transfer, direction, length, commands=3, spent=spent, **terms)
    out = {name: seconds / 3 for name, seconds in spent.items()}
    out.update(command=after - before, resubmit=resubmit)
    return out
