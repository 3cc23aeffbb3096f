"""Bulk-Only Transport commands on the simulated host controller, as a mass-storage driver runs
them: CBW, data, CSW, one command at a time.

Each stage is a bulk transfer of its own, scheduled by the host profile like any other
(:meth:`HostController.stream`, one transfer at queue depth 1): it completes
``completion_latency_us`` after its last handshake (on a microframe boundary where the profile
says so), and the driver's next stage is on the schedule ``resubmit_latency_us`` after that. So
every command pays the host's turnaround three times; ``busprobe.model.usb2_bot`` steps the
same rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from busprobe.protocol import bot, usb2

from .bulk_queue import StreamOutcome, cycles_from_us
from .controller import HostController

__all__ = ["BotOutcome", "run_commands"]


@dataclass
class BotOutcome:
    """What :func:`run_commands` measured (60 MHz line cycles; ``bytes`` counts data only)."""

    direction: str
    bytes: int = 0
    transfers: int = 0
    short_transfers: int = 0
    start: int = 0
    end: int = 0
    naks: int = 0
    nyets: int = 0
    transactions: int = 0
    repeats: int = 0
    csws: list[bytes] = field(default_factory=list)

    def add(self, stage: StreamOutcome) -> None:
        self.naks += stage.naks
        self.nyets += stage.nyets
        self.transactions += stage.transactions
        self.repeats += stage.repeats


async def run_commands(host: HostController, cbws: Sequence[bytes], direction: str, length: int,
                       outgoing: Sequence[bytes] | None, sink: list[bytes]) -> BotOutcome:
    """Run one command per CBW; IN data goes to ``sink``, OUT data is ``outgoing[i]``."""
    resubmit = cycles_from_us(host.profile.resubmit_latency_us)
    outcome = BotOutcome(direction, transfers=len(cbws))
    mps = usb2.MAX_PACKET_SIZE
    completed: int | None = None  # when the driver saw the last stage complete

    async def stage(stage_direction: str, endpoint: int, size: int, data: bytes | None,
                    into: list[bytes] | None) -> StreamOutcome:
        nonlocal completed
        if completed is not None:
            # The driver learns of the last stage's completion, then submits this one.
            await host.link.advance_to(completed + resubmit)
        result = await host.stream(stage_direction, endpoint & 0x7F, size, 1, 1,
                                   max_packet_size=mps,
                                   source=(lambda n: data) if data is not None else None,
                                   sink=into.append if into is not None else None)
        if completed is None:
            outcome.start = result.start
        completed = result.end
        outcome.add(result)
        return result

    for index, cbw in enumerate(cbws):
        await stage("out", usb2.EP_OUT, bot.CBW_SIZE, bytes(cbw), None)
        if direction == "in":
            received: list[bytes] = []
            data = await stage("in", usb2.EP_IN, length, None, received)
            if len(received) == 1 and bot.is_csw_for(received[0], cbw):
                # The device refused the CBW: its CSW came instead of the data.
                outcome.csws.append(received[0])
                outcome.end = data.end
                break
            sink += received
        else:
            if outgoing is None or len(outgoing[index]) != length:
                raise ValueError(f"OUT command {index}: the host sent no {length}-byte buffer")
            data = await stage("out", usb2.EP_OUT, length, bytes(outgoing[index]), None)
        outcome.bytes += data.bytes
        outcome.short_transfers += data.short_transfers
        csw = await stage("in", usb2.EP_IN, bot.CSW_SIZE, None, outcome.csws)
        outcome.end = csw.end
        if not bot.csw_passed(outcome.csws[-1] if outcome.csws else b"", cbw):
            break  # a driver looks at each command's status before it sends the next
    return outcome
