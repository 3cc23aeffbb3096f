"""What the null disk's two command engines share: the answers, the telemetry strobes, a reset."""

from amaranth import Module, Mux, ResetInserter
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.storage import DEFAULT_CAPACITY_BLOCKS

from .storage_replies import StorageReplies

__all__ = ["StorageEngine", "address_ahead"]


def address_ahead(word, position, width, step):
    """The replies RAM's word for byte ``position`` of the answer at ``word``, or (``step``)
    for the beat after it: ``word + ((position + width * step) >> 2)`` with ``step`` in the last
    multiplexer instead of the adders' carry chains. ``step`` (a beat taken by the stream's
    consumer this cycle) is the late input: through both adders into the RAM's address it was
    the SuperSpeed disk's ss critical path on ECPIX-5 (issue 44 item 7)."""
    return Mux(step, word + ((position + width) >> 2), word + (position >> 2))


class StorageEngine(wiring.Component):
    """The frame of a SCSI null disk's command engine (BOT's :class:`~.scsi_engine.ScsiBotEngine`,
    UAS's :class:`~busprobe.gateware.common.uas_engine.UasEngine`): the ports both have, and a
    reset that returns every register to its reset value at once, whatever the state. A
    subclass adds its packet streams and strobes (``members``) and writes ``_engine(m)`` in the
    ``usb`` domain (the SuperSpeed disk renames it ``ss``).

    Attributes
    ----------
    reset: Signal(), input
        Strobe: forget the command in progress (BOT reset, SET_INTERFACE).
    read_address: Signal(range(replies.depth)), output
    read_data: Signal(32), input
        The replies RAM (a cycle's latency).
    capture: Signal(), output
        Strobe: snapshot the telemetry (the telemetry page was asked for).
    snapshot_ready: Signal(), input
    command, read, write, check: Signal(), output
        Strobes: a command was taken; it was a READ / WRITE of ``blocks`` blocks; it failed.
    blocks: Signal(32), output
    mismatch: Signal(), output
        Strobe: a written word was not the LBA pattern.
    waiting: Signal(), output
        Between commands (its cycles are the gap between them).

    Parameters
    ----------
    members: dict
        The subclass's own ports.
    replies: StorageReplies
        The answers (and the capacity they were built for).
    capacity_blocks: int
    """

    def __init__(self, members: dict, *, replies=None, capacity_blocks=DEFAULT_CAPACITY_BLOCKS):
        self._capacity = capacity_blocks
        self._replies = replies if replies is not None else StorageReplies(capacity_blocks)
        super().__init__({
            "reset": In(1),
            **members,
            "read_address": Out(range(self._replies.depth)),
            "read_data": In(32),
            "capture": Out(1),
            "snapshot_ready": In(1),
            "command": Out(1), "read": Out(1), "write": Out(1), "check": Out(1),
            "blocks": Out(32), "mismatch": Out(1), "waiting": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        engine = Module()
        self._engine(engine)
        m.submodules.engine = ResetInserter({"usb": self.reset})(engine)
        return m

    def _engine(self, m):
        raise NotImplementedError
