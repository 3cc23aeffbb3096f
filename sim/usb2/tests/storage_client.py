"""A SCSI initiator over BOT for the null disk's simulation tests: one command at a time on the
platform's transfer queue (CBW, data, CSW, each a bulk transfer through the simulated host
controller and the ULPI PHY model), and the BOT class requests on EP0."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from busprobe.backends.usb.plans import QueuedStream
from busprobe.backends.usb.transfers import run_plan, silence_for
from busprobe.protocol import bot, scsi, usb2

__all__ = ["Answer", "Initiator", "bulk", "read_10", "write_10", "read_16", "inquiry",
           "request_sense", "clear_halt"]

#: bmRequestType of a class request to interface 0, OUT and IN.
_CLASS_OUT, _CLASS_IN = 0x21, 0xA1


@dataclass
class Answer:
    """What a command got: its data-in phase (if any) and its CSW."""

    data: bytes
    csw: bot.Csw


def bulk(platform, endpoint: int, data_or_length: bytes | int) -> bytes:
    """One bulk transfer on the platform's queue; what an IN transfer received."""
    length = data_or_length if isinstance(data_or_length, int) else len(data_or_length)
    outgoing = None if isinstance(data_or_length, int) else [data_or_length]
    plan = QueuedStream(endpoint, length, 1, 1, outgoing=outgoing)
    run_plan(platform, plan, what="bulk", silence=silence_for(length))
    got: list[bytes] = []
    plan.deliver(got.append)
    return b"".join(got)


class Initiator:
    """Sends SCSI commands to the null disk, numbering the tags.

    Parameters
    ----------
    platform : UsbPlatform
    """

    def __init__(self, platform) -> None:
        self.platform = platform
        self.tag = 0x100

    def command(self, cb: bytes, length: int = 0, direction: str = "in",
                data: bytes | None = None) -> Answer:
        """CBW with ``cb`` and ``length``, the data phase, then the CSW (checked for the tag)."""
        self.tag += 1
        cbw = bot.Cbw(self.tag, length, direction, cb=cb)
        bulk(self.platform, usb2.EP_OUT, cbw.pack())
        got = b""
        if length and direction == "in":
            got = bulk(self.platform, usb2.EP_IN, length)
        elif length:
            bulk(self.platform, usb2.EP_OUT, data if data is not None else bytes(length))
        csw = bot.Csw.unpack(bulk(self.platform, usb2.EP_IN, bot.CSW_SIZE))
        assert csw.tag == self.tag, f"CSW tag {csw.tag:#x} for CBW {self.tag:#x}"
        return Answer(got, csw)

    def telemetry(self) -> dict[str, int]:
        """The disk's telemetry page (INQUIRY, its vendor VPD page), decoded; the command
        must pass."""
        answer = self.command(inquiry(scsi.VPD_TELEMETRY), 255)
        assert answer.csw.status == bot.CswStatus.PASSED
        return scsi.parse_telemetry(answer.data)

    def mass_storage_reset(self) -> None:
        self.platform.control(_CLASS_OUT, bot.MASS_STORAGE_RESET, 0, 0, b"")

    def max_lun(self) -> bytes:
        return self.platform.control(_CLASS_IN, bot.GET_MAX_LUN, 0, 0, 1)


def clear_halt(platform, endpoint: int) -> None:
    """CLEAR_FEATURE(ENDPOINT_HALT): what a driver sends after a BOT reset (BOT §5.3.4)."""
    platform.control(0x02, 1, 0, endpoint, b"")


def read_10(lba: int, blocks: int) -> bytes:
    return struct.pack(">BBIBHB", scsi.Op.READ_10, 0, lba, 0, blocks, 0)


def write_10(lba: int, blocks: int) -> bytes:
    return struct.pack(">BBIBHB", scsi.Op.WRITE_10, 0, lba, 0, blocks, 0)


def read_16(lba: int, blocks: int) -> bytes:
    return struct.pack(">BBQIBB", scsi.Op.READ_16, 0, lba, blocks, 0, 0)


def inquiry(page: int | None = None, allocation: int = 255) -> bytes:
    evpd = page is not None
    return struct.pack(">BBBHB", scsi.Op.INQUIRY, int(evpd), page or 0, allocation, 0)


def request_sense(allocation: int = scsi.SENSE_SIZE) -> bytes:
    return struct.pack(">BBBBBB", scsi.Op.REQUEST_SENSE, 0, 0, 0, allocation, 0)
