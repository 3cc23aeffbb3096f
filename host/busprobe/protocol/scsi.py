"""The SCSI commands the null disk answers, their answers, sense and telemetry: defined once.

The storage personality (issue 28, ``gateware/usb2/storage*.py``) decodes the command blocks
Linux, Windows and macOS send a USB disk on attach and I/O; every answer but the read data is a
fixed table, built here from the disk's capacity (an elaboration parameter) and the identity of
:mod:`busprobe.protocol.storage`: the gateware puts these bytes in block RAM, the simulation
tests and the host decode the same with the parsers below. What the blocks hold is
:mod:`busprobe.protocol.storage`'s LBA pattern.

Sense (SPC-4 §4.5.3, fixed format): a command that fails ends with CHECK CONDITION (BOT:
``bCSWStatus`` 1) and the next REQUEST SENSE returns its key and additional sense code; any other
command clears it.

The storage telemetry (:data:`STORAGE_TELEMETRY`) is what the driver did, counted by the device:
it is the vendor VPD page :data:`VPD_TELEMETRY` (INQUIRY EVPD), so the host reads it through the
same block device, even from inside a guest (``sg_inq -p 0xc0``).
"""

from __future__ import annotations

import enum
import struct

from .storage import BLOCK_SIZE, DEFAULT_CAPACITY_BLOCKS, INQUIRY_PRODUCT, INQUIRY_VENDOR

__all__ = ["Op", "SenseKey", "Asc", "CheckCondition", "SENSE_SIZE", "VPD_PAGES", "VPD_TELEMETRY",
           "HISTOGRAM_BUCKETS", "STORAGE_TELEMETRY", "STORAGE_TELEMETRY_WORDS", "histogram_bucket",
           "cdb_length", "inquiry_data", "vpd_page", "read_capacity_10", "read_capacity_16",
           "sense_data", "report_luns", "parse_sense", "parse_capacity_16", "parse_telemetry",
           "INQUIRY_REVISION", "UNIT_SERIAL", "MAX_TRANSFER_BLOCKS", "OPTIMAL_TRANSFER_BLOCKS",
           "OPTIMAL_TRANSFER_GRANULARITY"]


class Op(enum.IntEnum):
    """Operation codes answered (SPC-4, SBC-3); any other gets ILLEGAL REQUEST."""

    TEST_UNIT_READY = 0x00
    REQUEST_SENSE = 0x03
    INQUIRY = 0x12
    MODE_SENSE_6 = 0x1A
    START_STOP_UNIT = 0x1B
    PREVENT_ALLOW_MEDIUM_REMOVAL = 0x1E
    READ_CAPACITY_10 = 0x25
    READ_10 = 0x28
    WRITE_10 = 0x2A
    SYNCHRONIZE_CACHE_10 = 0x35
    MODE_SENSE_10 = 0x5A
    READ_16 = 0x88
    WRITE_16 = 0x8A
    SYNCHRONIZE_CACHE_16 = 0x91
    #: SERVICE ACTION IN(16); service action :data:`READ_CAPACITY_16_ACTION` is READ CAPACITY(16).
    SERVICE_ACTION_IN_16 = 0x9E
    REPORT_LUNS = 0xA0


READ_CAPACITY_16_ACTION = 0x10


class SenseKey(enum.IntEnum):
    NO_SENSE = 0x0
    ILLEGAL_REQUEST = 0x5


class Asc(enum.IntEnum):
    """Additional sense codes (ASCQ 0 for all of them)."""

    NONE = 0x00
    INVALID_COMMAND_OPERATION_CODE = 0x20
    LBA_OUT_OF_RANGE = 0x21
    INVALID_FIELD_IN_CDB = 0x24
    LOGICAL_UNIT_NOT_SUPPORTED = 0x25
    #: MODE SENSE asked for saved values (page control 3): no page of this disk is saveable.
    SAVING_PARAMETERS_NOT_SUPPORTED = 0x39


class CheckCondition(ValueError):
    """A command the disk ends with CHECK CONDITION, ILLEGAL REQUEST and ``asc``: what an answer
    function of this contract raises where SPC says the command fails.

    Attributes
    ----------
    asc: Asc
        The additional sense code the next REQUEST SENSE returns.
    """

    def __init__(self, asc: Asc, why: str):
        super().__init__(f"{asc.name}: {why}")
        self.asc = asc


#: The sense conditions the disk reports, in the order the gateware numbers them.
SENSE_CONDITIONS = (Asc.NONE, Asc.INVALID_COMMAND_OPERATION_CODE, Asc.LBA_OUT_OF_RANGE,
                    Asc.INVALID_FIELD_IN_CDB, Asc.LOGICAL_UNIT_NOT_SUPPORTED,
                    Asc.SAVING_PARAMETERS_NOT_SUPPORTED)
#: Fixed-format sense data length (SPC-4 §4.5.3: additional length 10).
SENSE_SIZE = 18
INQUIRY_REVISION = b"0001"
#: VPD page 0x80's serial number (ASCII).
UNIT_SERIAL = b"BUSPROBE-NULL-0001"
#: Vendor VPD page holding :data:`STORAGE_TELEMETRY`.
VPD_TELEMETRY = 0xC0
#: VPD pages INQUIRY answers with EVPD set (page 0x00 lists them).
VPD_PAGES = (0x00, 0x80, 0x83, 0xB0, VPD_TELEMETRY)
#: Blocks per command the block limits page allows (what Linux then caps commands at, with the
#: host's own limit: usb-storage's 240 sectors at high speed): READ(10)'s 16-bit length.
MAX_TRANSFER_BLOCKS = 0xFFFF
#: The block limits page's optimal transfer length: 1 MiB, the longest command Linux's
#: usb-storage sends at SuperSpeed (2048 sectors, ``drivers/usb/storage/scsiglue.c``), where the
#: 44 bytes of CBW and CSW are 0.004 % of it; Linux makes it the disk's optimal I/O size
#: (``io_opt``). As large as MAX_TRANSFER_BLOCKS it made that 32 MiB, more than any host sends.
OPTIMAL_TRANSFER_BLOCKS = 2048
#: The block limits page's optimal transfer length granularity: 4 KiB, a memory page (Linux's
#: ``io_min``); the null disk has no alignment of its own.
OPTIMAL_TRANSFER_GRANULARITY = 8

#: Histogram buckets per direction: bucket ``b`` counts commands of ``2**b <= blocks <
#: 2**(b+1)`` blocks; the last one everything longer (:func:`histogram_bucket`).
HISTOGRAM_BUCKETS = 16
#: The storage telemetry's 32-bit little-endian words, in VPD page order after its 4-byte header.
STORAGE_TELEMETRY = (
    "commands", "reads", "writes", "check_conditions", "phase_errors", "write_mismatches",
    "read_blocks_max", "write_blocks_max", "gap_cycles", "gap_cycles_max",
    *(f"read_hist_{b}" for b in range(HISTOGRAM_BUCKETS)),
    *(f"write_hist_{b}" for b in range(HISTOGRAM_BUCKETS)),
    # Cycles of TELEMETRY_CLOCK_HZ since the last clear (wraps after 71 s): commands per second.
    "cycles",
    # UAS: the most commands outstanding at once as the device saw them (in its task set,
    # queued or executing: how many tags the driver kept outstanding, up to TASK_SET_DEPTH).
    "uas_tags_max",
    # UAS task set: commands answered TASK SET FULL (no slot free), COMMAND IUs refused for a
    # tag already outstanding (OVERLAPPED TAG ATTEMPTED), ABORT TASKs and LOGICAL UNIT RESETs
    # that removed queued commands.
    "uas_task_set_full", "uas_overlapped_tags", "uas_aborted_tasks",
    # UAS with bulk streams: IUs dropped for a tag that names no stream (0, past MaxStreams).
    "uas_bad_tags",
)
STORAGE_TELEMETRY_WORDS = len(STORAGE_TELEMETRY)
#: Clock of the gap counts (the usb2-storage disk's usb domain; the usb3-storage disk counts its
#: ss domain, :data:`busprobe.protocol.usb3.CLOCK_HZ`).
TELEMETRY_CLOCK_HZ = 60_000_000

#: CDB length by group code (operation code bits 7..5; SPC-4 §4.2.5.1); reserved groups: None.
_GROUP_LENGTHS = {0: 6, 1: 10, 2: 10, 4: 16, 5: 12}


def cdb_length(opcode: int) -> int | None:
    """Bytes of the CDB that starts with ``opcode`` (``None``: a vendor or reserved group)."""
    return _GROUP_LENGTHS.get(opcode >> 5)


def histogram_bucket(blocks: int) -> int:
    """The histogram bucket of a command of ``blocks`` (> 0) blocks."""
    return min(blocks.bit_length() - 1, HISTOGRAM_BUCKETS - 1)


def _vpd(page: int, body: bytes) -> bytes:
    return struct.pack(">BBH", 0x00, page, len(body)) + body


def inquiry_data() -> bytes:
    """Standard INQUIRY data (36 bytes): a direct-access block device, SPC-4, removable
    medium off, the busprobe identity."""
    return (struct.pack(">BBBBBBBB", 0x00, 0x00, 0x06, 0x02, 31, 0x00, 0x00, 0x00)
            + INQUIRY_VENDOR + INQUIRY_PRODUCT + INQUIRY_REVISION)


def vpd_page(page: int, capacity_blocks: int = DEFAULT_CAPACITY_BLOCKS) -> bytes:
    """VPD page ``page`` (one of :data:`VPD_PAGES` but the telemetry page, which the gateware
    fills: its header alone here)."""
    if page == 0x00:
        return _vpd(0x00, bytes(VPD_PAGES))
    if page == 0x80:
        return _vpd(0x80, UNIT_SERIAL)
    if page == 0x83:
        # One designator: T10 vendor ID based (type 1, ASCII), vendor + product + serial.
        designator = INQUIRY_VENDOR + INQUIRY_PRODUCT + UNIT_SERIAL
        return _vpd(0x83, struct.pack(">BBBB", 0x02, 0x01, 0x00, len(designator)) + designator)
    if page == 0xB0:
        # Block limits (SBC-3 §6.5.3, page length 0x3C): the optimal transfer length's
        # granularity (page bytes 6-7), the maximum (8-11) and the optimal (12-15) length.
        body = bytearray(0x3C)
        struct.pack_into(">H", body, 2, OPTIMAL_TRANSFER_GRANULARITY)
        struct.pack_into(">I", body, 4, MAX_TRANSFER_BLOCKS)
        struct.pack_into(">I", body, 8, OPTIMAL_TRANSFER_BLOCKS)
        return _vpd(0xB0, bytes(body))
    if page == VPD_TELEMETRY:
        return struct.pack(">BBH", 0x00, VPD_TELEMETRY, 4 * STORAGE_TELEMETRY_WORDS)
    raise ValueError(f"no VPD page {page:#x}")


def read_capacity_10(capacity_blocks: int) -> bytes:
    """READ CAPACITY(10) data: last LBA (0xFFFFFFFF past 2**32 blocks) and block length."""
    return struct.pack(">II", min(capacity_blocks - 1, 0xFFFF_FFFF), BLOCK_SIZE)


def read_capacity_16(capacity_blocks: int) -> bytes:
    """READ CAPACITY(16) data (32 bytes): last LBA, block length, no protection, 1 block per
    physical block."""
    return struct.pack(">QI", capacity_blocks - 1, BLOCK_SIZE) + bytes(20)


def parse_capacity_16(data: bytes) -> tuple[int, int]:
    """``(blocks, block_length)`` from READ CAPACITY(16) data."""
    last, length = struct.unpack_from(">QI", data)
    return last + 1, length


def sense_data(asc: Asc) -> bytes:
    """Fixed-format sense data of condition ``asc`` (key ILLEGAL REQUEST but for NONE)."""
    key = SenseKey.NO_SENSE if asc == Asc.NONE else SenseKey.ILLEGAL_REQUEST
    return struct.pack(">BBBIBIBBBBBB", 0x70, 0, key, 0, SENSE_SIZE - 8, 0, asc, 0, 0, 0, 0, 0)


def parse_sense(data: bytes) -> tuple[int, int, int]:
    """``(key, asc, ascq)`` of fixed-format sense data."""
    if len(data) < 14 or data[0] & 0x7F not in (0x70, 0x71):
        raise ValueError(f"not fixed-format sense data: {data[:4].hex()}")
    return data[2] & 0x0F, data[12], data[13]


def report_luns() -> bytes:
    """REPORT LUNS: one LUN, 0."""
    return struct.pack(">II", 8, 0) + bytes(8)


def parse_telemetry(page: bytes) -> dict[str, int]:
    """The storage telemetry from VPD page :data:`VPD_TELEMETRY` (header included)."""
    if len(page) < 4 or page[1] != VPD_TELEMETRY:
        raise ValueError("not the storage telemetry page")
    words = struct.unpack_from(f"<{STORAGE_TELEMETRY_WORDS}I", page, 4)
    return dict(zip(STORAGE_TELEMETRY, words, strict=True))
