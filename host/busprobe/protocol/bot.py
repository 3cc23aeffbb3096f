"""USB mass storage Bulk-Only Transport framing: the CBW and CSW, defined once.

With :data:`~busprobe.protocol.usb2.DataMode.BOT` the device speaks BOT's framing on its bulk
endpoints (USB Mass Storage Class Bulk-Only Transport 1.0, §5): every command is a 31-byte
Command Block Wrapper on OUT, then ``data_transfer_length`` bytes in the direction the CBW's flags
say, then a 13-byte Command Status Wrapper on IN, one command at a time. The data are the pattern
streams of the streamed mode (IN from the source, OUT to the checker), continuing across commands.

The gateware's framer (``gateware/common/bot.py``) parses CBWs and builds CSWs at the byte offsets
below; the host driver packs and checks them with :class:`Cbw` and :class:`Csw`. A CBW that is not
31 bytes or lacks :data:`CBW_SIGNATURE` is answered with a CSW of status
:attr:`CswStatus.PHASE_ERROR` and no data phase, as USB bridge chips answer one.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from .names import Direction

__all__ = [
    "CBW_SIGNATURE", "CSW_SIGNATURE", "CBW_FORMAT", "CSW_FORMAT", "CBW_SIZE", "CSW_SIZE",
    "CBW_FLAG_IN", "CB_MAX_LENGTH", "CBW_OFFSETS", "CSW_OFFSETS", "CswStatus", "Cbw", "Csw",
    "scsi_block_command", "is_csw_for", "csw_passed", "BOT_INTERFACE", "MASS_STORAGE_RESET",
    "GET_MAX_LUN",
]

#: bInterfaceClass, bInterfaceSubClass, bInterfaceProtocol of a BOT interface: mass storage,
#: SCSI transparent command set, Bulk-Only Transport (what the null disk's interface says, and
#: what binds Linux's ``usb-storage``).
BOT_INTERFACE = (0x08, 0x06, 0x50)
#: Class requests to the interface (BOT §3.1, §3.2): Bulk-Only Mass Storage Reset (no data),
#: Get Max LUN (one byte IN: the highest LUN).
MASS_STORAGE_RESET = 0xFF
GET_MAX_LUN = 0xFE

#: ``dCBWSignature``: the bytes ``USBC`` read little-endian (BOT §5.1).
CBW_SIGNATURE = 0x4342_5355
#: ``dCSWSignature``: the bytes ``USBS`` read little-endian (BOT §5.2).
CSW_SIGNATURE = 0x5342_5355

#: signature, tag, data transfer length, flags, LUN, CB length, command block.
CBW_FORMAT = "<IIIBBB16s"
#: signature, tag, data residue, status.
CSW_FORMAT = "<IIIB"
CBW_SIZE = struct.calcsize(CBW_FORMAT)  # 31
CSW_SIZE = struct.calcsize(CSW_FORMAT)  # 13

#: ``bmCBWFlags`` bit 7: the data phase is device-to-host (IN).
CBW_FLAG_IN = 0x80
#: ``CBWCB`` holds at most 16 bytes; ``bCBWCBLength`` is 1..16.
CB_MAX_LENGTH = 16

#: Byte offset of each CBW field (what the gateware indexes; the same order as :data:`CBW_FORMAT`).
CBW_OFFSETS = {"signature": 0, "tag": 4, "data_transfer_length": 8, "flags": 12, "lun": 13,
               "cb_length": 14, "cb": 15}
#: Byte offset of each CSW field.
CSW_OFFSETS = {"signature": 0, "tag": 4, "residue": 8, "status": 12}


class CswStatus(enum.IntEnum):
    """``bCSWStatus`` (BOT §5.2)."""

    PASSED = 0
    FAILED = 1
    #: The CBW was not valid or the host and device disagree on the data phase.
    PHASE_ERROR = 2


#: SCSI READ(10) / WRITE(10) operation codes (SBC-3): what a mass-storage driver's CB starts with.
_READ_10, _WRITE_10 = 0x28, 0x2A
#: Logical block size the CB counts in.
_BLOCK = 512


def scsi_block_command(direction: str, offset: int, length: int) -> bytes:
    """A READ(10) (``in``) or WRITE(10) (``out``) CB for ``length`` bytes at byte ``offset``.

    The device does not interpret the CB (its data are the pattern); it is filled in the way a
    driver fills it so that a CBW on the wire is one a bridge chip would take.
    """
    opcode = _READ_10 if direction == Direction.IN else _WRITE_10
    blocks = min(-(-length // _BLOCK), 0xFFFF)
    return struct.pack(">BBIBHB", opcode, 0, (offset // _BLOCK) & 0xFFFF_FFFF, 0, blocks, 0)


@dataclass(frozen=True)
class Cbw:
    """A Command Block Wrapper.

    Attributes
    ----------
    tag : int
        ``dCBWTag``, echoed in the CSW.
    length : int
        ``dCBWDataTransferLength``: bytes in the data phase.
    direction : str
        ``"in"`` (device to host) or ``"out"``: ``bmCBWFlags`` bit 7.
    lun : int
        ``bCBWLUN``.
    cb : bytes
        The command block, 1..16 bytes.
    """

    tag: int
    length: int
    direction: str
    lun: int = 0
    cb: bytes = b"\x00"

    def pack(self) -> bytes:
        if self.direction not in (Direction.IN, Direction.OUT):
            raise ValueError(f"CBW direction must be in or out, not '{self.direction}'")
        if not 1 <= len(self.cb) <= CB_MAX_LENGTH:
            raise ValueError(f"CBW command block is {len(self.cb)} bytes, not 1..{CB_MAX_LENGTH}")
        if not 0 <= self.length <= 0xFFFF_FFFF or not 0 <= self.tag <= 0xFFFF_FFFF:
            raise ValueError("CBW tag and length must fit 32 bits")
        flags = CBW_FLAG_IN if self.direction == Direction.IN else 0
        return struct.pack(CBW_FORMAT, CBW_SIGNATURE, self.tag, self.length, flags, self.lun,
                           len(self.cb), self.cb)

    @classmethod
    def unpack(cls, data: bytes) -> Cbw:
        """The CBW in ``data``; ``ValueError`` naming what makes it invalid (BOT §6.2.1)."""
        if len(data) != CBW_SIZE:
            raise ValueError(f"CBW is {len(data)} bytes, not {CBW_SIZE}")
        signature, tag, length, flags, lun, cb_length, cb = struct.unpack(CBW_FORMAT, data)
        if signature != CBW_SIGNATURE:
            raise ValueError(f"CBW signature {signature:#010x} is not {CBW_SIGNATURE:#010x}")
        if not 1 <= cb_length <= CB_MAX_LENGTH:
            raise ValueError(f"CBW command block length {cb_length} is not 1..{CB_MAX_LENGTH}")
        direction = Direction.IN if flags & CBW_FLAG_IN else Direction.OUT
        return cls(tag, length, direction, lun, cb[:cb_length])


@dataclass(frozen=True)
class Csw:
    """A Command Status Wrapper: ``tag`` of its CBW, data ``residue``, :class:`CswStatus`."""

    tag: int
    residue: int
    status: int

    def pack(self) -> bytes:
        return struct.pack(CSW_FORMAT, CSW_SIGNATURE, self.tag, self.residue, self.status)

    @classmethod
    def unpack(cls, data: bytes) -> Csw:
        """The CSW in ``data``; ``ValueError`` if it is not 13 bytes with ``USBS`` first."""
        if len(data) != CSW_SIZE:
            raise ValueError(f"CSW is {len(data)} bytes, not {CSW_SIZE}")
        signature, tag, residue, status = struct.unpack(CSW_FORMAT, data)
        if signature != CSW_SIGNATURE:
            raise ValueError(f"CSW signature {signature:#010x} is not {CSW_SIGNATURE:#010x}")
        return cls(tag, residue, status)

    def problem(self, cbw: Cbw) -> str | None:
        """Why this CSW does not close ``cbw`` successfully, or ``None`` if it does."""
        if self.tag != cbw.tag:
            return f"CSW tag {self.tag:#x} answers no CBW in flight (sent {cbw.tag:#x})"
        try:
            status = CswStatus(self.status).name.lower().replace("_", " ")
        except ValueError:
            status = f"status {self.status}"
        if self.status != CswStatus.PASSED:
            return f"command {cbw.tag:#x} ended with {status} (residue {self.residue})"
        if self.residue:
            return f"command {cbw.tag:#x} left a residue of {self.residue} of {cbw.length} bytes"
        return None


def is_csw_for(data: bytes, cbw: bytes) -> bool:
    """``data`` is a CSW answering the packed CBW ``cbw`` (the same tag): what a device sends
    instead of the data of a command it refused (BOT §6.7: a driver takes it as the status)."""
    tag = slice(CSW_OFFSETS["tag"], CSW_OFFSETS["tag"] + 4)
    return (len(data) == CSW_SIZE and data[:4] == struct.pack("<I", CSW_SIGNATURE)
            and data[tag] == cbw[CBW_OFFSETS["tag"]:CBW_OFFSETS["tag"] + 4])


def csw_passed(data: bytes, cbw: bytes) -> bool:
    """``data`` is the CSW of ``cbw`` with status passed: the driver may send the next command
    (anything else stops it; :meth:`Csw.problem` says why)."""
    return is_csw_for(data, cbw) and data[CSW_OFFSETS["status"]] == CswStatus.PASSED
