"""USB Attached SCSI (UAS, T10 UAS-2 and the USB UASP 1.0): its information units, defined once.

The null disk's interface 0 alternate 1 (:data:`UAS_INTERFACE`) carries UAS on four bulk pipes,
each named by the Pipe Usage descriptor after its endpoint descriptor (:data:`PIPE_USAGE_TYPE`,
:class:`Pipe`): commands and task management on the command pipe, READ READY / WRITE READY,
SENSE and RESPONSE on the status pipe, the data on the data-in and data-out pipes. At high speed
there are no bulk streams: the device says with READ READY or WRITE READY which tag's data move
next, and the host submits that tag's data transfer when it sees one (Linux's ``uas`` does so).

Every IU starts with the same 4 bytes (:data:`HEADER_FORMAT`: IU ID, reserved, the tag,
big-endian); the gateware indexes the byte offsets below, the tests and the host pack and parse
with the functions here. Tags are the host's, 1..0xFFFF here as Linux numbers them (0 is
never a command's).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from .streams import MAX_STREAMS

__all__ = [
    "UAS_INTERFACE", "UAS_ALTERNATE", "TASK_SET_DEPTH", "EP_COMMAND", "EP_STATUS", "EP_DATA_IN",
    "EP_DATA_OUT", "PIPE_ENDPOINTS", "STREAM_PIPES",
    "PIPE_USAGE_TYPE", "PIPE_USAGE_SIZE", "Pipe", "IuId",
    "Status", "ResponseCode", "TaskFunction", "HEADER_FORMAT", "COMMAND_FORMAT", "COMMAND_SIZE",
    "COMMAND_OFFSETS", "SENSE_FORMAT", "SENSE_HEADER_SIZE", "RESPONSE_FORMAT", "RESPONSE_SIZE",
    "TASK_FORMAT", "TASK_SIZE", "TASK_OFFSETS", "READY_SIZE", "pipe_usage", "command_iu",
    "task_management_iu", "ready_iu", "sense_iu", "response_iu", "Iu", "parse_iu",
]

#: bInterfaceClass, bInterfaceSubClass, bInterfaceProtocol of a UAS interface: mass storage,
#: SCSI transparent command set, UAS (what binds Linux's ``uas``).
UAS_INTERFACE = (0x08, 0x06, 0x62)
#: The alternate setting of interface 0 that carries UAS (alternate 0 is Bulk-Only Transport).
UAS_ALTERNATE = 1

#: The pipes' endpoints: the command and status pipes are the UAS alternate's own, the data
#: pipes are Bulk-Only Transport's (alternate 0's) endpoints, so one LBA source and checker and
#: one IN ring serve both transports.
EP_COMMAND, EP_STATUS, EP_DATA_IN, EP_DATA_OUT = 0x04, 0x83, 0x81, 0x02

#: Commands the null disk keeps outstanding (its task set's slots); one more is answered with a
#: SENSE IU of TASK SET FULL. 32: the streams its SuperSpeed pipes offer (MaxStreams 5), one a
#: tag, so a host that allocates them all cannot queue more at SuperSpeed either.
TASK_SET_DEPTH = MAX_STREAMS

#: bDescriptorType of the Pipe Usage class descriptor (UASP 1.0 §5.3.3.1); 4 bytes:
#: bLength, bDescriptorType, bPipeID, reserved.
PIPE_USAGE_TYPE = 0x24
PIPE_USAGE_SIZE = 4


class Pipe(enum.IntEnum):
    """``bPipeID`` of each of the four pipes (UASP 1.0 Table 9)."""

    COMMAND = 1
    STATUS = 2
    DATA_IN = 3
    DATA_OUT = 4


#: The alternate's endpoints in descriptor order, each with the pipe its Pipe Usage names.
PIPE_ENDPOINTS = ((EP_COMMAND, Pipe.COMMAND), (EP_STATUS, Pipe.STATUS),
                  (EP_DATA_IN, Pipe.DATA_IN), (EP_DATA_OUT, Pipe.DATA_OUT))
#: The pipes that carry bulk streams at SuperSpeed (stream ID = tag); the command pipe has none.
STREAM_PIPES = (EP_STATUS, EP_DATA_IN, EP_DATA_OUT)


class IuId(enum.IntEnum):
    """The first byte of every information unit (UAS-2 Table 7)."""

    COMMAND = 0x01
    SENSE = 0x03
    RESPONSE = 0x04
    TASK_MANAGEMENT = 0x05
    READ_READY = 0x06
    WRITE_READY = 0x07


class Status(enum.IntEnum):
    """The SCSI status a SENSE IU carries (SAM-5)."""

    GOOD = 0x00
    CHECK_CONDITION = 0x02
    TASK_SET_FULL = 0x28


class ResponseCode(enum.IntEnum):
    """A RESPONSE IU's code (UAS-2 Table 17), the values Linux's ``uas.h`` names."""

    TMF_COMPLETE = 0x00
    INVALID_INFO_UNIT = 0x02
    TMF_NOT_SUPPORTED = 0x04
    TMF_FAILED = 0x05
    TMF_SUCCEEDED = 0x08
    INCORRECT_LUN = 0x09
    OVERLAPPED_TAG = 0x0A


class TaskFunction(enum.IntEnum):
    """Task management functions (SAM-5); the null disk carries out these two."""

    ABORT_TASK = 0x01
    LOGICAL_UNIT_RESET = 0x08


#: IU ID, reserved, tag: the head of every IU.
HEADER_FORMAT = ">BBH"
#: COMMAND IU: header, priority/task attribute, reserved, additional CDB length (bits 7:2, in
#: dwords; always 0 here), reserved, LUN, CDB.
COMMAND_FORMAT = ">BBHBBBB8s16s"
COMMAND_SIZE = struct.calcsize(COMMAND_FORMAT)  # 32
COMMAND_OFFSETS = {"iu_id": 0, "tag": 2, "attribute": 4, "additional_length": 6, "lun": 8,
                   "cdb": 16}
#: SENSE IU: header, status qualifier, status, 7 reserved, sense length; the sense data follow.
SENSE_FORMAT = ">BBHHB7xH"
SENSE_HEADER_SIZE = struct.calcsize(SENSE_FORMAT)  # 16
#: RESPONSE IU: header, additional response information (3 bytes), response code.
RESPONSE_FORMAT = ">BBH3sB"
RESPONSE_SIZE = struct.calcsize(RESPONSE_FORMAT)  # 8
#: TASK MANAGEMENT IU: header, function, reserved, tag of the task managed, LUN.
TASK_FORMAT = ">BBHBBH8s"
TASK_SIZE = struct.calcsize(TASK_FORMAT)  # 16
TASK_OFFSETS = {"iu_id": 0, "tag": 2, "function": 4, "task_tag": 6, "lun": 8}
#: READ READY and WRITE READY IUs are the header alone.
READY_SIZE = struct.calcsize(HEADER_FORMAT)  # 4


def pipe_usage(pipe: Pipe) -> bytes:
    """The Pipe Usage descriptor that follows ``pipe``'s endpoint descriptor."""
    return bytes((PIPE_USAGE_SIZE, PIPE_USAGE_TYPE, int(pipe), 0))


def _lun(lun: int) -> bytes:
    """SAM's 8-byte LUN, single-level peripheral addressing (what ``int_to_scsilun`` makes)."""
    return struct.pack(">H6x", lun & 0x3FFF)


def command_iu(tag: int, cdb: bytes, lun: int = 0) -> bytes:
    """A COMMAND IU for ``cdb`` (at most 16 bytes, zero-padded), task attribute SIMPLE."""
    if not 1 <= len(cdb) <= 16:
        raise ValueError(f"UAS CDB is {len(cdb)} bytes, not 1..16")
    return struct.pack(COMMAND_FORMAT, IuId.COMMAND, 0, tag, 0, 0, 0, 0, _lun(lun), cdb)


def task_management_iu(tag: int, function: int, task_tag: int = 0, lun: int = 0) -> bytes:
    """A TASK MANAGEMENT IU: ``function`` on ``task_tag`` (ABORT TASK) or the LUN."""
    return struct.pack(TASK_FORMAT, IuId.TASK_MANAGEMENT, 0, tag, function, 0, task_tag,
                       _lun(lun))


def ready_iu(tag: int, *, read: bool) -> bytes:
    """READ READY (``read``) or WRITE READY for ``tag``."""
    return struct.pack(HEADER_FORMAT, IuId.READ_READY if read else IuId.WRITE_READY, 0, tag)


def sense_iu(tag: int, status: int, sense: bytes = b"") -> bytes:
    """A SENSE IU: ``status``, and the sense data of a CHECK CONDITION."""
    return struct.pack(SENSE_FORMAT, IuId.SENSE, 0, tag, 0, status, len(sense)) + sense


def response_iu(tag: int, code: int) -> bytes:
    """A RESPONSE IU (a task management function's outcome, or an IU refused)."""
    return struct.pack(RESPONSE_FORMAT, IuId.RESPONSE, 0, tag, b"\0\0\0", code)


@dataclass(frozen=True)
class Iu:
    """An IU read from the status pipe.

    Attributes
    ----------
    kind : IuId
    tag : int
    status : int
        SENSE: the SCSI status; RESPONSE: the response code; READ/WRITE READY: 0.
    sense : bytes
        SENSE: the sense data (empty when GOOD).
    """

    kind: IuId
    tag: int
    status: int = 0
    sense: bytes = b""


def parse_iu(data: bytes) -> Iu:
    """The status-pipe IU in ``data``; ``ValueError`` naming what is wrong with it."""
    if len(data) < READY_SIZE:
        raise ValueError(f"UAS IU is {len(data)} bytes, shorter than its {READY_SIZE}-byte head")
    iu_id, _, tag = struct.unpack_from(HEADER_FORMAT, data)
    try:
        kind = IuId(iu_id)
    except ValueError:
        raise ValueError(f"UAS IU ID {iu_id:#04x} is not one of {[int(i) for i in IuId]}") \
            from None
    sizes = {IuId.READ_READY: READY_SIZE, IuId.WRITE_READY: READY_SIZE,
             IuId.RESPONSE: RESPONSE_SIZE}
    if kind in sizes:
        if len(data) != sizes[kind]:
            raise ValueError(f"UAS {kind.name} IU is {len(data)} bytes, not {sizes[kind]}")
        status = data[RESPONSE_SIZE - 1] if kind is IuId.RESPONSE else 0
        return Iu(kind, tag, status)
    if kind is IuId.SENSE:
        if len(data) < SENSE_HEADER_SIZE:
            raise ValueError(f"UAS SENSE IU is {len(data)} bytes, under {SENSE_HEADER_SIZE}")
        _, _, _, _, status, length = struct.unpack_from(SENSE_FORMAT, data)
        if len(data) != SENSE_HEADER_SIZE + length:
            raise ValueError(f"UAS SENSE IU is {len(data)} bytes; its length says "
                             f"{SENSE_HEADER_SIZE + length}")
        return Iu(kind, tag, status, bytes(data[SENSE_HEADER_SIZE:]))
    raise ValueError(f"UAS {kind.name} IU does not come on the status pipe")
