"""The soft PCIe endpoint's configuration space and the TLPs that reach it. Standard library only.

The one definition of what a root complex reads from the soft endpoint (``docs/DESIGN.md``
§3.10, "Configuration space"): the Type 0 header, the capability chain (Power Management, MSI,
PCI Express), each implemented dword's reset value and which of its bits a configuration write
changes (:data:`CONFIG_SPACE`), and the TLP formats, header byte positions and completion
statuses of configuration requests and their completions. The gateware
(:mod:`busprobe.gateware.pcie.soft.config_space`) builds its register file from this table; the
tests read it back through cocotbext-pcie's TLP encoder and decoder and the host's own decoders
(:mod:`.pci_config`).

Names the host already reads real devices with (status, capability pointer, PCI Express
capability ID and register offsets, the MPS/MRRS codes) are :mod:`.pci_config`'s; the identity
and BAR0 size are those of busprobe's PCIe device (:mod:`.pcie`), so the soft endpoint and the
LitePCIe design answer as the same device. Register names and offsets: PCI Local Bus 3.0 §6,
PCI Power Management 1.2 §3.2, PCIe Base 3.0 §7.5 (Type 0 header in PCIe) and §7.8 (PCI
Express capability).
"""

from __future__ import annotations

import dataclasses
import enum

from .pci_config import (
    DEVCTL_MPS_SHIFT,
    DEVCTL_MRRS_SHIFT,
    EXP_DEVCAP,
    EXP_DEVCTL,
    EXP_LNKCAP,
    EXP_LNKSTA,
    PCI_CAP_ID_EXP,
    PCI_CAPABILITY_LIST,
    PCI_STATUS,
    PCI_STATUS_CAP_LIST,
    SIZES,
    decode_size,
    encode_size,
)
from .pcie import BAR0_SIZE, DEVICE_ID, MAX_PAYLOAD_SIZE, VENDOR_ID
from .pcie_ltssm import LinkSpeed

__all__ = [
    "TlpKind", "CplStatus", "CONFIG_REQUEST_BYTES", "COMPLETION_HEADER_BYTES",
    "REQ_FLAGS", "REQ_LENGTH", "REQ_REQUESTER_ID", "REQ_TAG", "REQ_BYTE_ENABLES",
    "REQ_TARGET_ID", "REQ_REGISTER", "CONFIG_COMPLETION_BYTE_COUNT", "FUNCTION",
    "VENDOR_ID", "DEVICE_ID", "REVISION_ID", "CLASS_CODE", "SUBSYSTEM_VENDOR_ID",
    "SUBSYSTEM_ID", "COMMAND", "PCI_STATUS", "REVISION_CLASS", "CACHE_LINE_SIZE", "BAR0",
    "BAR0_SIZE", "BAR0_WRITABLE", "SUBSYSTEM", "PCI_CAPABILITY_LIST", "INTERRUPT_LINE",
    "COMMAND_MEMORY_SPACE", "COMMAND_BUS_MASTER", "COMMAND_WRITABLE",
    "CAP_ID_PM", "CAP_ID_MSI", "PCI_CAP_ID_EXP", "PM_OFFSET", "MSI_OFFSET", "EXP_OFFSET",
    "PM_PMCSR", "PMCSR_POWER_STATES", "PMCSR_NO_SOFT_RESET",
    "MSI_CONTROL", "MSI_ADDRESS_LO", "MSI_ADDRESS_HI", "MSI_DATA", "MSI_ENABLE", "MSI_64BIT",
    "EXP_DEVCAP", "EXP_DEVCTL", "EXP_DEVSTA", "EXP_LNKCAP", "EXP_LNKCTL", "EXP_LNKSTA",
    "EXP_LNKCAP2", "EXP_LNKCTL2", "EXP_VERSION", "DEVCAP_MPS_SUPPORTED", "DEVCTL_MPS_SHIFT",
    "DEVCTL_MRRS_SHIFT", "DEVCTL_RESET_MPS", "DEVCTL_RESET_MRRS", "DEVSTA_UR_DETECTED",
    "LNKCAP_MAX_SPEED", "LNKCAP_MAX_WIDTH", "LNKSTA_SPEED_SHIFT", "LNKSTA_WIDTH_SHIFT",
    "LINK_STATUS_DWORD", "ConfigDword", "CONFIG_SPACE", "payload_size_in_force",
    "request_size_in_force", "FMT_WITH_DATA", "FMT_4DW", "TYPE_MASK", "TlpType5",
    "MSG_TYPE_MASK", "MSG_TYPE", "REQ_ADDRESS", "CPL_REQUESTER_ID",
]


# TLPs -------------------------------------------------------------------------------------------

class TlpKind(enum.IntEnum):
    """Byte 0 of a TLP header, Fmt[2:0] Type[4:0], for the TLPs configuration space handles."""

    CFG_RD0 = 0x04
    CFG_WR0 = 0x44
    CFG_RD1 = 0x05
    CFG_WR1 = 0x45
    CPL = 0x0A
    CPL_D = 0x4A


#: Byte 0's Fmt bits (7:5): bit 6 the TLP carries data, bit 5 its header is 4 DW.
FMT_WITH_DATA = 1 << 6
FMT_4DW = 1 << 5
TYPE_MASK = 0x1F


class TlpType5(enum.IntEnum):
    """Byte 0's Type[4:0], whatever the Fmt, for the TLPs the router tells apart (§2.2.1)."""

    MEM = 0x00  # MRd (no data) / MWr (data); posted only with data
    MEM_LOCKED = 0x01  # MRdLk: an endpoint does not support locked requests
    IO = 0x02
    CPL = 0x0A  # Cpl / CplD
    CPL_LOCKED = 0x0B


#: Messages are Type 10rrr (r: routing), always posted.
MSG_TYPE_MASK = 0x18
MSG_TYPE = 0x10
#: A memory request's address: bytes 8..11 (3 DW header) or 8..15 (4 DW), big-endian.
REQ_ADDRESS = 8
#: A completion's Requester ID, bytes 8..9: whose read it answers.
CPL_REQUESTER_ID = 8


class CplStatus(enum.IntEnum):
    """Completion Status (byte 6 bits 7:5 of a completion)."""

    SC = 0  # Successful Completion
    UR = 1  # Unsupported Request
    CRS = 2  # Configuration Request Retry Status
    CA = 4  # Completer Abort


#: A configuration request's header is 3 DW; a write carries one more DW of data.
CONFIG_REQUEST_BYTES = 12
COMPLETION_HEADER_BYTES = 12
# Byte positions in a configuration request header (fields big-endian, as on the wire).
REQ_FLAGS = 2  # TD bit 7, EP (poisoned) bit 6, Attr[1:0] bits 5:4, Length[9:8] bits 1:0
REQ_LENGTH = 3  # Length[7:0]: 1 for every configuration request
REQ_REQUESTER_ID = 4  # 2 bytes: bus, device[4:0] function[2:0]
REQ_TAG = 6
REQ_BYTE_ENABLES = 7  # Last DW BE bits 7:4 (must be 0), First DW BE bits 3:0
REQ_TARGET_ID = 8  # 2 bytes: the bus/device/function addressed
REQ_REGISTER = 10  # 2 bytes: Extended Register Number byte 10 bits 3:0, Register Number 11 7:2
#: Byte Count of a configuration completion (§2.2.9 as remembered: 4 for every completion but
#: a memory read's; not checked against the spec text in this session). Lower Address is 0.
CONFIG_COMPLETION_BYTE_COUNT = 4
#: The endpoint's one function; a configuration request to another gets UR.
FUNCTION = 0


# The Type 0 header ------------------------------------------------------------------------------

REVISION_ID = 0x00
#: Memory controller, other (05h/80h/00h), and subsystem 10EEh:0007h: the 7-series hard IP's
#: defaults, which LitePCIe leaves in place (litepcie's UltraScale wrappers set the same
#: subsystem pair; the class code is from memory of the Xilinx IP, not checked here).
CLASS_CODE = 0x05_80_00
SUBSYSTEM_VENDOR_ID = 0x10EE
SUBSYSTEM_ID = 0x0007

COMMAND = 0x04  # Command (15:0) and Status (31:16, PCI_STATUS) share this dword
REVISION_CLASS = 0x08
CACHE_LINE_SIZE = 0x0C  # with Latency Timer, Header Type (0: Type 0, one function), BIST
BAR0 = 0x10
SUBSYSTEM = 0x2C
INTERRUPT_LINE = 0x3C  # Interrupt Pin (0x3D) 0: no INTx

COMMAND_MEMORY_SPACE = 1 << 1
COMMAND_BUS_MASTER = 1 << 2
#: Command bits a PCIe function has as RW (§7.5.1.1): Memory Space, Bus Master, Parity Error
#: Response, SERR# Enable, Interrupt Disable. I/O Space stays 0: there is no I/O BAR.
COMMAND_WRITABLE = COMMAND_MEMORY_SPACE | COMMAND_BUS_MASTER | 1 << 6 | 1 << 8 | 1 << 10
#: BAR0: 32-bit, non-prefetchable memory (flag bits 3:0 all 0), as the LitePCIe design's;
#: the bits below its size read 0 whatever is written, which is how software sizes it.
BAR0_WRITABLE = ~(BAR0_SIZE - 1) & 0xFFFF_FFFF


# Capabilities -----------------------------------------------------------------------------------

CAP_ID_PM = 0x01
CAP_ID_MSI = 0x05
# Where each capability starts (the order of the chain, from PCI_CAPABILITY_LIST).
PM_OFFSET = 0x40
MSI_OFFSET = 0x48
EXP_OFFSET = 0x60

#: PMC: version 3 (PCI PM 1.2); no D1/D2, no PME, no auxiliary current.
PM_VERSION = 3
PM_PMCSR = 0x04  # PMCSR, from the capability's start
#: PowerState values the function has (D0, D3hot); a write of another is ignored (PCI PM 1.2
#: §3.2.4: the write completes, nothing changes).
PMCSR_POWER_STATES = (0, 3)
#: No_Soft_Reset: D3hot -> D0 keeps the function's configuration (nothing here resets on it).
PMCSR_NO_SOFT_RESET = 1 << 3

# MSI, 64-bit address capable, one vector, no per-vector masking (PCI Local Bus 3.0 §6.8.1).
MSI_CONTROL = 0x02  # Message Control (16 bits), from the capability's start
MSI_ADDRESS_LO = 0x04
MSI_ADDRESS_HI = 0x08
MSI_DATA = 0x0C
MSI_ENABLE = 1 << 0
MSI_64BIT = 1 << 7
_MSI_MULTIPLE_MESSAGE_ENABLE = 0x7 << 4  # RW by the spec; with one vector capable, stays 0

# PCI Express capability, version 2, Endpoint (PCIe Base 3.0 §7.8), offsets from its start.
EXP_VERSION = 2
_EXP_TYPE_ENDPOINT = 0x0
EXP_DEVSTA = 0x0A
EXP_LNKCTL = 0x10
EXP_LNKCAP2 = 0x2C
EXP_LNKCTL2 = 0x30
_EXP_END = 0x3C  # through Slot Status 2: a version 2 capability has all of these

#: Max_Payload_Size Supported: what the data link layer's receive and replay buffers take.
DEVCAP_MPS_SUPPORTED = MAX_PAYLOAD_SIZE
_DEVCAP_ROLE_BASED_ERRORS = 1 << 15  # must be 1 for a 1.1-and-later function
#: Device Control at reset: MPS 128, MRRS 512 (the spec's defaults), Relaxed Ordering and No
#: Snoop enabled (default 1 in the spec; this endpoint sets neither attribute itself).
DEVCTL_RESET_MPS = 128
DEVCTL_RESET_MRRS = 512
_DEVCTL_RESET = (encode_size(DEVCTL_RESET_MPS) << DEVCTL_MPS_SHIFT
                 | encode_size(DEVCTL_RESET_MRRS) << DEVCTL_MRRS_SHIFT | 1 << 4 | 1 << 11)
#: RW: the four error reporting enables, Relaxed Ordering, MPS, No Snoop, MRRS. Extended Tag,
#: Phantom Functions, Aux Power PM and Initiate FLR are 0: none of them is supported.
_DEVCTL_WRITABLE = 0x0F | 1 << 4 | 0x7 << DEVCTL_MPS_SHIFT | 1 << 11 | 0x7 << DEVCTL_MRRS_SHIFT
#: Device Status: Unsupported Request Detected (RW1C), set by every UR completion sent.
DEVSTA_UR_DETECTED = 1 << 3

LNKCAP_MAX_SPEED = LinkSpeed.GEN1  # 2.5 GT/s
LNKCAP_MAX_WIDTH = 1
#: No ASPM (support field 0), and ASPM Optionality Compliance set, as every function must.
_LNKCAP = LNKCAP_MAX_SPEED | LNKCAP_MAX_WIDTH << 4 | 1 << 22
#: Link Control RW bits of an Endpoint: ASPM Control, Read Completion Boundary, Common Clock
#: Configuration, Extended Synch. Clock PM and HW Autonomous Width Disable are 0 (unsupported).
_LNKCTL_WRITABLE = 0x3 | 1 << 3 | 1 << 6 | 1 << 7
# Link Status: Current Link Speed bits 3:0, Negotiated Link Width bits 9:4, from the LTSSM's
# status word (:mod:`.pcie_ltssm`); Slot Clock Configuration 0 (no board known yet).
LNKSTA_SPEED_SHIFT = 0
LNKSTA_WIDTH_SHIFT = 4
#: The dword holding Link Control and, in its upper half, the live Link Status.
LINK_STATUS_DWORD = EXP_OFFSET + EXP_LNKCTL
assert EXP_LNKSTA == EXP_LNKCTL + 2
#: Supported Link Speeds Vector: bit 1, 2.5 GT/s only.
_LNKCAP2 = 1 << LinkSpeed.GEN1
#: Target Link Speed 2.5 GT/s, held there (no other speed to aim at).
_LNKCTL2 = LinkSpeed.GEN1


@dataclasses.dataclass(frozen=True)
class ConfigDword:
    """One implemented dword of configuration space.

    Attributes
    ----------
    reset : int
        Its value after reset.
    writable : int
        Bits a configuration write sets to the written value (RW); every other bit is read-only.
    clear_on_write : int
        Bits a write of 1 clears (RW1C); the endpoint sets them.
    """

    reset: int
    writable: int = 0
    clear_on_write: int = 0


#: Every implemented dword by its byte offset; any other offset (0..0xFFF) reads 0 and ignores
#: writes, as the spec has it for registers a function does not implement (so 0x100, the first
#: extended capability, reads 0: there is none).
CONFIG_SPACE: dict[int, ConfigDword] = {
    0x00: ConfigDword(DEVICE_ID << 16 | VENDOR_ID),
    COMMAND: ConfigDword(PCI_STATUS_CAP_LIST << 16, writable=COMMAND_WRITABLE),
    REVISION_CLASS: ConfigDword(CLASS_CODE << 8 | REVISION_ID),
    CACHE_LINE_SIZE: ConfigDword(0, writable=0xFF),
    BAR0: ConfigDword(0, writable=BAR0_WRITABLE),
    SUBSYSTEM: ConfigDword(SUBSYSTEM_ID << 16 | SUBSYSTEM_VENDOR_ID),
    PCI_CAPABILITY_LIST: ConfigDword(PM_OFFSET),
    INTERRUPT_LINE: ConfigDword(0, writable=0xFF),
    PM_OFFSET: ConfigDword(PM_VERSION << 16 | MSI_OFFSET << 8 | CAP_ID_PM),
    PM_OFFSET + PM_PMCSR: ConfigDword(PMCSR_NO_SOFT_RESET, writable=0x3),
    MSI_OFFSET: ConfigDword(MSI_64BIT << 16 | EXP_OFFSET << 8 | CAP_ID_MSI,
                            writable=(MSI_ENABLE | _MSI_MULTIPLE_MESSAGE_ENABLE) << 16),
    MSI_OFFSET + MSI_ADDRESS_LO: ConfigDword(0, writable=0xFFFF_FFFC),
    MSI_OFFSET + MSI_ADDRESS_HI: ConfigDword(0, writable=0xFFFF_FFFF),
    MSI_OFFSET + MSI_DATA: ConfigDword(0, writable=0xFFFF),
    EXP_OFFSET: ConfigDword((_EXP_TYPE_ENDPOINT << 4 | EXP_VERSION) << 16 | PCI_CAP_ID_EXP),
    EXP_OFFSET + EXP_DEVCAP: ConfigDword(encode_size(DEVCAP_MPS_SUPPORTED)
                                         | _DEVCAP_ROLE_BASED_ERRORS),
    EXP_OFFSET + EXP_DEVCTL: ConfigDword(_DEVCTL_RESET, writable=_DEVCTL_WRITABLE,
                                         clear_on_write=DEVSTA_UR_DETECTED << 16),
    EXP_OFFSET + EXP_LNKCAP: ConfigDword(_LNKCAP),
    LINK_STATUS_DWORD: ConfigDword(0, writable=_LNKCTL_WRITABLE),
    EXP_OFFSET + EXP_LNKCAP2: ConfigDword(_LNKCAP2),
    EXP_OFFSET + EXP_LNKCTL2: ConfigDword(_LNKCTL2),
}
assert PCI_STATUS == COMMAND + 2
assert EXP_DEVSTA == EXP_DEVCTL + 2
assert max(CONFIG_SPACE) < EXP_OFFSET + _EXP_END


def payload_size_in_force(code: int) -> int:
    """The Max_Payload_Size the endpoint keeps to for DevCtl's MPS field ``code`` (0..7).

    The field is RW and reads back what was written; software must not write more than
    :data:`DEVCAP_MPS_SUPPORTED`, and if it does the endpoint still keeps to that (its buffers
    hold no more), as LitePCIe's 7-series PHY clamps the same field.
    """
    return min(decode_size(code), DEVCAP_MPS_SUPPORTED)


def request_size_in_force(code: int) -> int:
    """The Max_Read_Request_Size DevCtl's MRRS field ``code`` (0..7) allows: as written; the
    reserved codes 6 and 7 as the largest defined size, 4096."""
    return min(decode_size(code), SIZES[-1])
