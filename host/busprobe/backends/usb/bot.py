"""Bulk-Only Transport on the busprobe USB device: CBW, data, CSW per transfer, as a driver does.

:class:`BotCommands` is the host half of :data:`~busprobe.protocol.usb2.DataMode.BOT` for every
platform: it packs one CBW per transfer (a READ(10)/WRITE(10) command block, an increasing tag),
has the platform run the commands one at a time, and checks every CSW (signature, tag, status,
residue). A platform only carries the three stages: :func:`run_by_bulk` does it with one bulk
transfer per stage (libusb, from user space, as a user-space mass-storage driver would), the
simulation does it inside the simulator (one request for a whole repeat).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...protocol import bot, usb2
from ...transport import Sink, StreamResult, TransportError

__all__ = ["BotCommands", "BulkCall", "run_by_bulk", "wrapper_bytes"]

#: ``bulk(endpoint, length, count, queue_depth, outgoing, sink)``: one UsbPlatform.bulk call.
BulkCall = Callable[[int, int, int, int, "Sequence[bytes] | None", "Sink | None"], StreamResult]


def wrapper_bytes(commands: int) -> dict[str, int]:
    """Bytes the device counts per direction beyond the data for ``commands`` commands: each
    CBW on OUT, each CSW on IN."""
    return {"out": commands * bot.CBW_SIZE, "in": commands * bot.CSW_SIZE}


def run_by_bulk(bulk: BulkCall, cbws: Sequence[bytes], direction: str, length: int,
                outgoing: Sequence[bytes] | None,
                sink: Sink | None) -> tuple[StreamResult, list[bytes]]:
    """Run the commands of ``cbws`` one at a time, each stage a bulk transfer of its own.

    Returns the data phases as one :class:`StreamResult` (from the first CBW's submission to the
    last CSW's completion; ``bytes`` counts data only) and the CSWs as received. A CSW that
    arrives in place of IN data (the device refused the CBW) is taken as that command's status;
    no command follows one whose CSW did not pass.
    """
    csws: list[bytes] = []
    moved = shorts = 0
    start: float | None = None
    end = 0.0
    for index, cbw in enumerate(cbws):
        sent = bulk(usb2.EP_OUT, bot.CBW_SIZE, 1, 1, [cbw], None)
        start = sent.start if start is None else start
        if direction == "in":
            received: list[bytes] = []
            data = bulk(usb2.EP_IN, length, 1, 1, None, received.append)
            if len(received) == 1 and bot.is_csw_for(received[0], cbw):
                csws.append(received[0])
                end = data.end
                break
            for chunk in received:
                if sink is not None:
                    sink(chunk)
        else:
            data = bulk(usb2.EP_OUT, length, 1, 1, [outgoing[index]] if outgoing else None, None)
        status = bulk(usb2.EP_IN, bot.CSW_SIZE, 1, 1, None, csws.append)
        end = status.end
        moved += data.bytes
        shorts += data.short_transfers
        if not bot.csw_passed(csws[-1] if csws else b"", cbw):
            break  # a driver looks at each command's status before it sends the next
    return StreamResult(direction, moved, len(cbws), start or 0.0, end, shorts), csws


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
