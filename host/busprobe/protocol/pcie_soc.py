"""The PCIe board's SoC: the soft CPU's memory map, the link history and the firmware mailbox.

The PCIe design carries a small RISC-V CPU (LiteX's VexRiscv, ``minimal`` build: RV32I, no
caches) with a ROM for the firmware (``firmware/``), an SRAM, a UART, a timer and two CSR blocks
of its own, besides the DMA core of :mod:`.pcie`:

``link`` (:data:`LINK_CSRS`)
    The link's history: every change of the state word (:data:`LINK_FIELDS`: LTSSM state as the
    7-series hard IP encodes it, :data:`LTSSM_7SERIES`; link up; rate; width; MPS and MRRS from
    the Device Control register) with the core cycle it happened at. The last
    :data:`LINK_HISTORY_DEPTH` changes are kept; ``link_count`` counts them all.
``firmware`` (:data:`FIRMWARE_CSRS`)
    The mailbox between the host tool and the firmware. The firmware writes ``magic`` /
    ``version`` when it runs. The host publishes a DMA buffer it allocated and pinned
    (``buffer``, ``buffer_size``), and asks for a device-run DMA (``direction``, ``length``,
    ``count``, ``pattern``, then ``command`` = ``sequence << 8 | Command``); the firmware runs it
    with no host software in the loop, writes the results and then ``status`` = ``sequence << 8 |
    Status``, and raises MSI :data:`MSI_FIRMWARE` (writes ``irq``).

Both the host (BAR0, :mod:`.pcie`'s offsets) and the CPU (at :data:`CSR_BASE` + the same offset)
reach every CSR: the CPU is a second bus master and BAR0 maps onto the CSR region.
"""

from __future__ import annotations

import enum

__all__ = [
    "CPU_TYPE", "CPU_VARIANT", "ROM_BASE", "ROM_SIZE", "SRAM_BASE", "SRAM_SIZE", "CSR_BASE",
    "UART_BAUD", "LINK_HISTORY_DEPTH", "LINK_FIELDS", "LTSSM_7SERIES", "LTSSM_L0", "LINK_CSRS",
    "FIRMWARE_CSRS", "FIRMWARE_MAGIC", "FIRMWARE_VERSION", "Command", "Status", "Direction",
    "MSI_FIRMWARE", "PROMPT", "BANNER", "link_field", "ltssm_name", "decode_link_state",
]

CPU_TYPE = "vexriscv"
#: RV32I without caches: ~1,000 LUTs on 7-series; the console and the DMA loop need no more.
CPU_VARIANT = "minimal"
ROM_BASE = 0x0000_0000
ROM_SIZE = 0x8000  # 32 KiB of firmware
SRAM_BASE = 0x1000_0000
SRAM_SIZE = 0x2000  # 8 KiB: data, stack
#: Where the CPU sees the CSR region (VexRiscv's I/O region starts at 0x8000_0000); BAR0 offset
#: ``x`` is the CPU's address ``CSR_BASE + x``.
CSR_BASE = 0xF000_0000
#: The board's UART (AC701: the CP2103 USB-UART); simulation uses a byte stream instead.
UART_BAUD = 115200

LINK_HISTORY_DEPTH = 64
#: The link state word: ``(name, lsb, bits, meaning)``. Sizes are codes as in Device Control
#: (bytes = 128 << code); rate is the generation minus one; width is log2 of the lanes.
LINK_FIELDS: tuple[tuple[str, int, int, str], ...] = (
    ("ltssm", 0, 6, "LTSSM state (LTSSM_7SERIES)"),
    ("up", 6, 1, "link up (user_lnk_up)"),
    ("rate", 7, 2, "link speed: 0 = 2.5, 1 = 5.0, 2 = 8.0 GT/s"),
    ("width", 9, 2, "negotiated width: lanes = 1 << width"),
    ("mps", 11, 3, "Max Payload Size in Device Control: bytes = 128 << mps"),
    ("mrrs", 14, 3, "Max Read Request Size in Device Control: bytes = 128 << mrrs"),
)

#: ``pl_ltssm_state`` of the Xilinx 7-series integrated block for PCIe (UG477; LitePCIe's
#: ``litepcie/software/ltssm_tracer.py`` decodes it the same way).
LTSSM_7SERIES: dict[int, str] = {
    0x00: "Detect.Quiet", 0x01: "Detect.Quiet", 0x02: "Detect.Active", 0x03: "Detect.Active",
    0x04: "Polling.Active", 0x05: "Polling.Configuration",
    0x06: "Polling.Compliance.PreSendEIOS", 0x07: "Polling.Compliance.PreTimeout",
    0x08: "Polling.Compliance.SendPattern", 0x09: "Polling.Compliance.PostSendEIOS",
    0x0A: "Polling.Compliance.PostTimeout",
    0x0B: "Configuration.Linkwidth.State0", 0x0C: "Configuration.Linkwidth.State1",
    0x0D: "Configuration.Linkwidth.Accept0", 0x0E: "Configuration.Linkwidth.Accept1",
    0x0F: "Configuration.Lanenum.Wait", 0x10: "Configuration.Lanenum.Accept",
    0x11: "Configuration.Complete.x1", 0x12: "Configuration.Complete.x2",
    0x13: "Configuration.Complete.x4", 0x14: "Configuration.Complete.x8",
    0x15: "Configuration.Idle", 0x16: "L0",
    0x17: "L1.Entry0", 0x18: "L1.Entry1", 0x19: "L1.Entry2", 0x1A: "L1.Idle", 0x1B: "L1.Exit",
    0x1C: "Recovery.RcvrLock", 0x1D: "Recovery.RcvrCfg", 0x1E: "Recovery.Speed0",
    0x1F: "Recovery.Speed1", 0x20: "Recovery.Idle", 0x21: "HotReset",
    0x22: "Disabled.Entry0", 0x23: "Disabled.Entry1", 0x24: "Disabled.Entry2",
    0x25: "Disabled.Idle", 0x2D: "TimeoutToDetect",
    0x2E: "Loopback.Entry0", 0x2F: "Loopback.Entry1", 0x30: "Loopback.Active0",
    0x31: "Loopback.Exit0", 0x32: "Loopback.Exit1", 0x33: "Loopback.MasterEntry0",
}
LTSSM_L0 = 0x16

#: The ``link`` block, in register order: ``(name, bits, description)``.
LINK_CSRS: tuple[tuple[str, int, str], ...] = (
    ("state", 32, "the link state word now (LINK_FIELDS)"),
    ("time", 64, "core cycles since reset (the time stamps' clock)"),
    ("count", 32, "state changes recorded since reset (the last LINK_HISTORY_DEPTH are kept)"),
    ("select", 32, "write a change's number (mod LINK_HISTORY_DEPTH) to read it below"),
    ("entry_time", 64, "core cycle of the selected change"),
    ("entry_state", 32, "link state word the selected change went to"),
)

FIRMWARE_MAGIC = 0x5746_5042  # b"BPFW" little-endian
#: 1: the console (link, counters, telemetry, dma, help) and the mailbox's DMA command.
FIRMWARE_VERSION = 1

#: The ``firmware`` block, in register order (every one 32 bits, read-write by both masters).
FIRMWARE_CSRS: tuple[tuple[str, str], ...] = (
    ("magic", "FIRMWARE_MAGIC once the firmware runs"),
    ("version", "FIRMWARE_VERSION of the running firmware"),
    ("buffer", "bus address of the host buffer the host tool allocated and pinned"),
    ("buffer_size", "its size in bytes (0: no buffer published; address 0 is a valid one)"),
    ("direction", "Direction of the requested DMA"),
    ("length", "bytes per transfer"),
    ("count", "transfers (back to back; their bytes must fit in the buffer)"),
    ("pattern", "Pattern the device streams and checks (restarted at the run's start)"),
    ("command", "sequence << 8 | Command: a new sequence starts the command"),
    ("status", "sequence << 8 | Status of the last command the firmware finished"),
    ("bytes", "payload bytes the run moved (the core's telemetry)"),
    ("span_cycles", "core cycles from the run's first TLP to its last (the core's telemetry)"),
    ("total_cycles", "core cycles from the engine's start to the last descriptor done"),
    ("errors", "pattern errors the device's checker found (read) + link faults counted"),
    ("irq", "written by the firmware: raises MSI_FIRMWARE"),
)


class Command(enum.IntEnum):
    """What the host asks the firmware (low byte of ``firmware_command``)."""

    NONE = 0
    DMA = 1  # a device-run DMA of ``count`` x ``length`` bytes through the host buffer


class Status(enum.IntEnum):
    """How a command ended (low byte of ``firmware_status``)."""

    IDLE = 0
    DONE = 1
    NO_BUFFER = 2  # no host buffer published, or the run does not fit in it
    BAD_REQUEST = 3  # unknown command or direction, length not a multiple of 8, ...
    TIMEOUT = 4  # the engine did not finish in time (link down, bus mastering off)
    READ_FAILED = 5  # the core's read path failed (a lost or bad completion)


class Direction(enum.IntEnum):
    """Device-run directions, named as the host driver's (from the device's DMA engines)."""

    WRITE = 0  # device -> host buffer
    READ = 1  # host buffer -> device's checker


#: MSI vector the firmware raises when a command ends (after the DMA engines' vectors).
MSI_FIRMWARE = 2

#: What the console prints when it waits for a command; the host waits for it after each one.
PROMPT = "busprobe> "
#: First words of the line the firmware prints when it starts.
BANNER = "busprobe firmware"


def link_field(state: int, name: str) -> int:
    """Field ``name`` of a link state word."""
    for field, lsb, bits, _ in LINK_FIELDS:
        if field == name:
            return (state >> lsb) & ((1 << bits) - 1)
    raise KeyError(name)


def ltssm_name(code: int) -> str:
    return LTSSM_7SERIES.get(code, f"reserved({code:#04x})")


def decode_link_state(state: int) -> dict[str, object]:
    """A link state word as named values (sizes in bytes, lanes, GT/s)."""
    return {"ltssm": ltssm_name(link_field(state, "ltssm")), "up": bool(link_field(state, "up")),
            "gts": (2.5, 5.0, 8.0, 16.0)[link_field(state, "rate")],
            "lanes": 1 << link_field(state, "width"),
            "mps": 128 << link_field(state, "mps"), "mrrs": 128 << link_field(state, "mrrs")}
