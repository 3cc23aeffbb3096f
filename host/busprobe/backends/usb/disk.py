"""The null disk swept over busprobe's own framing: ``--protocol bot`` and ``--protocol uas``.

The storage personality (``usb2-storage``, whose GET_INFO names
:attr:`~busprobe.protocol.usb2.Feature.STORAGE`) answers SCSI only, and every block holds the LBA
pattern (:mod:`busprobe.protocol.storage`), not a sweep's stream. So a sweep of it sends one
READ(10) or WRITE(10) per transfer, at increasing LBAs, and checks the data itself:
:class:`DiskFraming` numbers the commands (the same :class:`~.bot.BotCommands` the BOT framer's
sweep uses), builds the plan of either transport — :class:`~.bot.BotRun` on alternate 0,
:class:`~.uas.UasRun` on alternate 1 — and checks what came back (IN data against the pattern,
each command's CSW or SENSE IU). The transfer queue, the plans and the timing are those of every
other USB sweep (:func:`~.transfers.run_plan`); what the kernel's ``usb-storage`` and ``uas`` do
with the same disk is ``block:/dev/sdX`` (:mod:`busprobe.backends.block`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ...protocol import bot, uas
from ...protocol.names import Direction
from ...protocol.storage import BLOCK_SIZE, DEFAULT_CAPACITY_BLOCKS, check_lba_bytes, lba_bytes
from ...transport import InvalidRequest, TransportError
from .bot import BotCommands, BotRun
from .uas import UasCommand, UasRun

__all__ = ["DiskFraming", "DiskRun", "ALTERNATES", "MAX_COMMAND_BLOCKS"]

#: The interface's alternate setting of each framing (BOT 0, UAS 1).
ALTERNATES = {"bot": 0, "uas": uas.UAS_ALTERNATE}
#: READ(10)/WRITE(10) name at most this many blocks.
MAX_COMMAND_BLOCKS = 0xFFFF


@dataclass
class DiskRun:
    """One point's run on the disk: the plan, the LBA of each command and its tag.

    Attributes
    ----------
    plan : BotRun or UasRun
    lbas : list of int
    cbws : list of bot.Cbw
        The commands (BOT: as sent; UAS: their CDBs and tags are the IUs').
    """

    plan: BotRun | UasRun
    lbas: list[int]
    cbws: list[bot.Cbw]


class DiskFraming:
    """READ(10)/WRITE(10) commands of a sweep of the null disk, and the checks of their data.

    Parameters
    ----------
    name : str
        Prefix of error messages (the device selector).
    commands : BotCommands
        Numbers the commands (tags, byte offsets per direction).
    capacity_blocks : int
        Where the LBAs wrap to 0 (the default capacity of the gateware).
    """

    def __init__(self, name: str, commands: BotCommands,
                 capacity_blocks: int = DEFAULT_CAPACITY_BLOCKS) -> None:
        self.name, self.commands = name, commands
        self.capacity_bytes = capacity_blocks * BLOCK_SIZE

    @staticmethod
    def validate(length: int) -> None:
        """Refuse a length that is not whole blocks or more than one command names."""
        if length % BLOCK_SIZE or length // BLOCK_SIZE > MAX_COMMAND_BLOCKS:
            raise InvalidRequest(f"length {length} B: a command of the null disk is whole "
                                 f"{BLOCK_SIZE}-byte blocks, at most {MAX_COMMAND_BLOCKS} "
                                 f"(READ(10)/WRITE(10))")

    def _cbws(self, direction: str, length: int, count: int) -> tuple[list[bot.Cbw], list[int]]:
        offsets = self.commands.offsets
        if offsets[direction] + count * length > self.capacity_bytes:
            offsets[direction] = 0  # nothing is stored: the start of the disk reads the same
        cbws = self.commands.cbws(direction, length, count)
        return cbws, [struct.unpack_from(">I", c.cb, 2)[0] for c in cbws]

    def bot_run(self, direction: str, length: int, count: int) -> DiskRun:
        """``count`` BOT commands, one at a time (alternate 0)."""
        cbws, lbas = self._cbws(direction, length, count)
        outgoing = ([lba_bytes(lba, length // BLOCK_SIZE) for lba in lbas]
                    if direction == Direction.OUT else None)
        plan = BotRun([c.pack() for c in cbws], direction, length, outgoing,
                      what=f"{self.name}: BOT {direction} command")
        return DiskRun(plan, lbas, cbws)

    def uas_run(self, direction: str, length: int, count: int, queue_depth: int, *,
                streams: bool = False) -> DiskRun:
        """``count`` UAS commands, ``queue_depth`` outstanding (alternate 1); the tags are the
        BOT numbering's, folded into UAS's 16 bits (never 0); with bulk ``streams``
        (SuperSpeed) the run gives each command a free tag 1..32, its streams'."""
        cbws, lbas = self._cbws(direction, length, count)
        commands = [UasCommand((c.tag - 1) % 0xFFFF + 1, c.cb, length, direction,
                               lba_bytes(lba, length // BLOCK_SIZE) if direction == Direction.OUT
                               else b"")
                    for c, lba in zip(cbws, lbas, strict=True)]
        plan = UasRun(commands, queue_depth, what=f"{self.name}: UAS {direction} command",
                      streams=streams)
        return DiskRun(plan, lbas, cbws)

    def check(self, run: DiskRun) -> tuple[int, int | None]:
        """Raise :class:`TransportError` naming the first command that did not pass; return
        the IN data's ``(mismatched words, byte offset of the first)`` against the LBA
        pattern (offsets count from the run's first data byte)."""
        if isinstance(run.plan, BotRun):
            self.commands.check(run.cbws, run.plan.csws)
            chunks = list(run.plan.received)
        else:
            self.commands.since_clear += run.plan.done
            for command in run.plan.commands:
                status = command.status
                if status is None or status.kind is not uas.IuId.SENSE \
                        or status.status != uas.Status.GOOD:
                    raise TransportError(f"{self.name}: UAS: tag {command.tag} "
                                         f"({'no answer' if status is None else status})")
            chunks = [c.data for c in run.plan.commands if c.direction == Direction.IN]
        bad, first, at = 0, None, 0
        for lba, chunk in zip(run.lbas, chunks, strict=False):
            whole = len(chunk) - len(chunk) % BLOCK_SIZE  # a short tail is counted as lost
            words, offset = check_lba_bytes(lba, memoryview(chunk)[:whole])
            if words and first is None:
                first = at + (offset or 0)
            bad += words
            at += len(chunk)
        return bad, first
