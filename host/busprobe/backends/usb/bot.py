"""Bulk-Only Transport on the busprobe USB device: CBW, data, CSW per transfer, as a driver does.

:class:`BotCommands` is the host half of :data:`~busprobe.protocol.usb2.DataMode.BOT`: it packs
one CBW per transfer (a READ(10)/WRITE(10) command block, an increasing tag) and checks every CSW
(signature, tag, status, residue). :class:`BotRun` is the plan that moves the commands one at a
time, each stage a bulk transfer submitted when the one before completed, as a mass-storage
driver does; it runs on every platform's transfer queue (:func:`~.transfers.run_plan`), so on
the simulated bus each stage pays the host profile's completion and resubmit latency.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...protocol import bot, usb2
from ...protocol.names import Direction
from ...transport import EndpointStalled, Sink, StreamResult, TransportError
from .transfers import Completion, Transfer

__all__ = ["BotCommands", "BotRun", "wrapper_bytes"]


def wrapper_bytes(commands: int) -> dict[str, int]:
    """Bytes the device counts per direction beyond the data for ``commands`` commands: each
    CBW on OUT, each CSW on IN."""
    return {"out": commands * bot.CBW_SIZE, "in": commands * bot.CSW_SIZE}


class BotRun:
    """One BOT command per CBW, one at a time: CBW (OUT), ``length`` data bytes in
    ``direction``, CSW (IN), each stage submitted when the one before completed.

    A CSW that arrives in place of IN data (the device refused the CBW) is taken as that
    command's status; no command follows one whose CSW did not pass.

    Parameters
    ----------
    cbws : sequence of bytes
        Packed CBWs, one per command.
    direction : str
        ``in`` or ``out``.
    length : int
        Data bytes per command.
    outgoing : sequence of bytes, optional
        OUT: each command's data.
    what : str
        Names the run in errors.
    """

    def __init__(self, cbws: Sequence[bytes], direction: str, length: int,
                 outgoing: Sequence[bytes] | None, *, what: str) -> None:
        self.cbws, self.direction, self.length = list(cbws), direction, length
        self.outgoing, self.what = outgoing, what
        self.index = self.moved = self.short = 0
        self.csws: list[bytes] = []
        self.received: list[bytes] = []

    def _cbw(self) -> Transfer:
        return Transfer(usb2.EP_OUT, bot.CBW_SIZE, bytes(self.cbws[self.index]), tag="cbw")

    def start(self) -> list[Transfer]:
        return [self._cbw()] if self.cbws else []

    def completed(self, completion: Completion) -> list[Transfer]:
        stage = completion.transfer.tag
        if completion.stalled:
            raise EndpointStalled(f"{self.what}: the {stage} stage stalled")
        cbw = self.cbws[self.index]
        if stage == "cbw":
            if self.direction == Direction.IN:
                return [Transfer(usb2.EP_IN, self.length, tag="data")]
            data = self.outgoing[self.index] if self.outgoing else b""
            return [Transfer(usb2.EP_OUT, len(data), bytes(data), tag="data")]
        if stage == "data":
            if self.direction == Direction.IN and bot.is_csw_for(completion.data, cbw):
                self.csws.append(completion.data)  # the device refused the CBW
                return []
            self.moved += completion.actual
            self.short += completion.actual < self.length
            if self.direction == Direction.IN:
                self.received.append(completion.data)
            return [Transfer(usb2.EP_IN, bot.CSW_SIZE, tag="csw")]
        self.csws.append(completion.data)
        if not bot.csw_passed(completion.data, cbw) or self.index + 1 == len(self.cbws):
            return []  # a driver looks at each command's status before it sends the next
        self.index += 1
        return [self._cbw()]

    def deliver(self, sink: Sink | None) -> None:
        """The IN data phases to ``sink``, in order."""
        for chunk in self.received:
            if sink is not None:
                sink(chunk)
        self.received.clear()

    def result(self, start: float, end: float) -> StreamResult:
        """The data phases as one stream (first CBW submitted to last CSW completed, data bytes
        only)."""
        return StreamResult(self.direction, self.moved, len(self.cbws), start, end, self.short)


class BotCommands:
    """Numbers, packs and checks the BOT commands of one device.

    Tags increase across the whole session, so a CSW left over from an earlier command can never
    pass for the answer to a new one.

    Parameters
    ----------
    name : str
        Prefix of error messages (the device selector).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.next_tag = 1
        self.offsets = {"in": 0, "out": 0}  # the block address the CB names, per direction
        self.since_clear = 0  # commands since the device's counters were cleared

    def cbws(self, direction: str, length: int, count: int) -> list[bot.Cbw]:
        """``count`` CBWs of ``length`` bytes in ``direction``."""
        out = []
        for _ in range(count):
            cb = bot.scsi_block_command(direction, self.offsets[direction], length)
            out.append(bot.Cbw(self.next_tag, length, direction, cb=cb))
            self.next_tag = self.next_tag % 0xFFFF_FFFF + 1
            self.offsets[direction] += length
        return out

    def check(self, cbws: Sequence[bot.Cbw], csws: Sequence[bytes]) -> None:
        """Raise :class:`TransportError` naming the first CSW that does not close its CBW."""
        self.since_clear += len(csws)
        for cbw, raw in zip(cbws, csws, strict=False):
            try:
                problem = bot.Csw.unpack(raw).problem(cbw)
            except ValueError as exc:
                problem = str(exc)
            if problem:
                raise TransportError(f"{self.name}: BOT: {problem}")
        if len(csws) != len(cbws):
            raise TransportError(f"{self.name}: BOT: {len(csws)} CSWs for {len(cbws)} commands")
