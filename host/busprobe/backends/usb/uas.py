"""USB Attached SCSI on the null disk's alternate 1, as Linux's ``uas`` drives it.

:class:`UasRun` is the plan: up to ``queue_depth`` commands outstanding, each a COMMAND IU on the
command pipe with a status transfer pending on the status pipe. At high speed (no streams) the
device names with READ READY or WRITE READY whose data move next, and the plan submits that
tag's data transfer then (and a status transfer in the place of the one the READY took); with
bulk streams (SuperSpeed, ``streams=True``) the command's status and data transfers go with its
COMMAND IU, each on the stream of its tag, and the device selects the streams. A command ends
when both its SENSE IU and its data transfer are in (as Linux's ``uas_try_complete`` waits for
both), and the next one is sent then. It runs on every platform's transfer queue
(:func:`~.transfers.run_plan`); with streams the platform's endpoints must have stream rings
(``alloc_streams``, as ``uas`` allocates them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...protocol import uas
from ...protocol.names import Direction
from ...transport import EndpointStalled, Sink, StreamResult, TransportError
from .transfers import Completion, Transfer

__all__ = ["UasCommand", "UasRun", "STATUS_LENGTH"]

#: What a status transfer asks for: more than any IU the disk sends (a SENSE IU with 18 bytes
#: of sense is 34), so each completes on the IU's short packet.
STATUS_LENGTH = 64


@dataclass
class UasCommand:
    """One command of a run and what it got.

    Attributes
    ----------
    tag : int
    cdb : bytes
    length : int
        Data bytes the command moves (0: none).
    direction : str
        ``in`` or ``out``.
    outgoing : bytes
        OUT: its data.
    data : bytes
        IN: what its data transfer received.
    status : uas.Iu or None
        Its SENSE (or RESPONSE) IU.
    """

    tag: int
    cdb: bytes
    length: int = 0
    direction: str = "in"
    outgoing: bytes = b""
    data: bytes = b""
    status: uas.Iu | None = None


class UasRun:
    """``commands`` over UAS, up to ``queue_depth`` outstanding.

    Attributes
    ----------
    order : list of int
        The tags in the order the device announced their data (READ / WRITE READY; empty
        with streams).

    Parameters
    ----------
    commands : sequence of UasCommand
    queue_depth : int
    what : str
        Names the run in errors.
    streams : bool
        Bulk streams: stream ID = tag on the status and data pipes, no READY IUs.
    """

    def __init__(self, commands: Sequence[UasCommand], queue_depth: int = 1, *,
                 what: str = "UAS", streams: bool = False) -> None:
        if queue_depth < 1:
            raise ValueError(f"UAS queue depth must be at least 1, not {queue_depth}")
        if streams and queue_depth > uas.TASK_SET_DEPTH:
            # One stream a tag: the device's task set and its streams both end there.
            raise ValueError(f"UAS with streams keeps at most {uas.TASK_SET_DEPTH} commands "
                             f"outstanding, not {queue_depth}")
        self.commands = list(commands)
        # Tags are 16 bits: a long run reuses them, as Linux's uas does; only the commands
        # outstanding at once must differ (checked as each is sent).
        self.by_tag: dict[int, UasCommand] = {}  # the commands outstanding
        self.moving: dict[int, UasCommand] = {}  # data transfers in flight, by tag
        self.queue_depth, self.what, self.streams = queue_depth, what, streams
        self.sent = self.done = self.moved = self.short = 0
        self.order: list[int] = []

    def _send(self) -> list[Transfer]:
        command = self.commands[self.sent]
        self.sent += 1
        if self.streams:
            # One stream a tag (1..TASK_SET_DEPTH): the lowest free, as the driver's tag map
            # gives them; commands complete out of order, so a numbering would collide.
            command.tag = min(set(range(1, uas.TASK_SET_DEPTH + 1)) - set(self.by_tag))
        if command.tag in self.by_tag:
            raise ValueError(f"{self.what}: UAS commands outstanding together need distinct "
                             f"tags (tag {command.tag} is)")
        self.by_tag[command.tag] = command
        iu = Transfer(uas.EP_COMMAND, uas.COMMAND_SIZE, uas.command_iu(command.tag, command.cdb),
                      tag="command")
        if not self.streams:
            return [iu, Transfer(uas.EP_STATUS, STATUS_LENGTH, tag="status")]
        # With streams, as uas_submit_urbs: the status and data transfers on the tag's streams,
        # then the command.
        out = [Transfer(uas.EP_STATUS, STATUS_LENGTH, tag="status", stream_id=command.tag)]
        if command.length:
            self.moving[command.tag] = command
            out.append(self._data(command))
        return [*out, iu]

    def _data(self, command: UasCommand) -> Transfer:
        stream = command.tag if self.streams else 0
        if command.direction == Direction.IN:
            return Transfer(uas.EP_DATA_IN, command.length, tag=("data", command.tag),
                            stream_id=stream)
        return Transfer(uas.EP_DATA_OUT, len(command.outgoing), command.outgoing,
                        tag=("data", command.tag), stream_id=stream)

    def start(self) -> list[Transfer]:
        out: list[Transfer] = []
        while self.sent < min(self.queue_depth, len(self.commands)):
            out += self._send()
        return out

    def completed(self, completion: Completion) -> list[Transfer]:
        stage = completion.transfer.tag
        if completion.stalled:
            raise EndpointStalled(f"{self.what}: the {stage} pipe stalled")
        if stage == "command":
            return []
        if isinstance(stage, tuple):  # ("data", tag)
            command = self.moving.pop(stage[1])
            self.moved += completion.actual
            self.short += completion.actual < command.length
            if command.direction == Direction.IN:
                command.data = completion.data
            return self._finish(command) if command.status is not None else []
        try:
            iu = uas.parse_iu(completion.data)
        except ValueError as exc:
            raise TransportError(f"{self.what}: {exc}") from None
        command = self.by_tag.get(iu.tag)
        if command is None:
            raise TransportError(f"{self.what}: {iu.kind.name} IU for tag {iu.tag}, which "
                                 f"no command outstanding has")
        if iu.kind in (uas.IuId.READ_READY, uas.IuId.WRITE_READY):
            if self.streams:
                raise TransportError(f"{self.what}: {iu.kind.name} IU for tag {iu.tag} on a "
                                     f"pipe with streams")
            self.order.append(iu.tag)
            self.moving[iu.tag] = command
            # The status transfer the READY completed is replaced: one stays pending per
            # command, as Linux's uas keeps one.
            return [self._data(command), Transfer(uas.EP_STATUS, STATUS_LENGTH, tag="status")]
        command.status = iu
        if self.streams and iu.tag in self.moving and (iu.kind is not uas.IuId.SENSE
                                                       or iu.status != uas.Status.GOOD):
            # Linux's uas unlinks the data transfers of a command that failed; a plan cannot
            # cancel one transfer, and one left on the tag's stream would take a later
            # command's data. Said, not waited for.
            raise TransportError(f"{self.what}: tag {iu.tag} ended with {iu.kind.name} status "
                                 f"{iu.status:#04x} while its data transfer was queued on its "
                                 f"stream")
        if iu.tag in self.moving:
            # The SENSE IU may overtake the tail of the command's data (the device has handed
            # it to its endpoint's buffers); like Linux's uas_try_complete, the command ends
            # when both are in.
            return []
        return self._finish(command)

    def _finish(self, command: UasCommand) -> list[Transfer]:
        """``command`` has its data and its status: the next command takes its place."""
        del self.by_tag[command.tag]
        self.done += 1
        return self._send() if self.sent < len(self.commands) else []

    def deliver(self, sink: Sink | None) -> None:
        """The IN data, command by command, in the order the commands were given."""
        for command in self.commands:
            if sink is not None and command.data:
                sink(command.data)

    def result(self, direction: str, start: float, end: float) -> StreamResult:
        """The data as one stream (first IU submitted to last SENSE IU, data bytes only)."""
        return StreamResult(direction, self.moved, len(self.commands), start, end, self.short)
