"""PCIe x1 DMA device contract: identifiers, BAR0 CSR map, descriptor format, telemetry.

The gateware (:mod:`busprobe.gateware.pcie.core`) places its LiteX CSR regions from
:data:`CSR_REGIONS` and builds its own register block from :data:`BUSPROBE_CSRS`. Every register
offset, LiteX's and LitePCIe's included, comes from LiteX's own export of that design
(``pcie_csr_map.json``, written by ``python -m busprobe.gateware.pcie.csr_export``; a test fails
when it is stale), never typed again here: :data:`CSRS`. The host driver, the VFIO backend, the
simulation and the firmware's generated header (:mod:`.c_header`) take the offsets from here.

BAR0 access: 32-bit reads/writes at ``CSRS[name]``. LiteX CSRs wider than 32 bits occupy several
consecutive words, most significant word first (``csr_ordering = "big"``); the only one here is
``pcie_dma0_{writer,reader}_table_value`` (64 bits: word 0 = control/length, word 1 = address LSB).

DMA descriptors (LitePCIe scatter-gather table, "prog" mode = ``loop_prog_n`` 0, "loop" mode = 1):
write ``table_value`` (address LSB + length + :data:`DESC_IRQ_DISABLE`/:data:`DESC_LAST_DISABLE`)
then ``table_we`` (its value is the address MSB; the write queues the descriptor). Rules the core
does not check (LitePCIe): a descriptor's length is a multiple of :data:`DMA_LENGTH_ALIGN` (#97)
and at most :data:`DESC_MAX_LENGTH`; its address is :data:`DMA_ADDRESS_ALIGN`-aligned, because
the splitter cuts requests every MPS/MRRS bytes from the descriptor start without looking at
4 KiB boundaries (aligned starts never cross one).

Link faults (``docs/DESIGN.md`` §3.1): the core checks every TLP the link delivers before
LitePCIe sees it and drops what is malformed, poisoned, unexpected, not successful (UR/CA) or
inconsistent with the read it claims to answer; each class has a :data:`TELEMETRY` counter
(:data:`LINK_ERRORS`). A read that loses data that way, or is not completed within
``busprobe_completion_timeout`` cycles, fails: ``busprobe_rd_status`` shows :data:`RD_FAILED`,
the reader MSI fires, the device's checker stops taking data, and the read path stays stalled
until ``busprobe_read_reset`` (written with both DMA engines disabled; :data:`RD_RESET_PENDING`
until done).

Pattern rules: write ``busprobe_pattern`` (a :class:`~busprobe.protocol.patterns.Pattern`) only
while the DMA writer is disabled (disabling flushes the writer's FIFO); the generator only
advances while the writer is enabled, so a point's data continues across descriptors if the
writer stays enabled through the point.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from .patterns import NO_ERROR_OFFSET

__all__ = [
    "VENDOR_ID", "DEVICE_ID", "BAR0_SIZE", "DATA_WIDTH", "CLOCK_HZ", "READ_TAGS",
    "DMA_ADDRESS_WIDTH", "DMA_TABLE_DEPTH", "DMA_LENGTH_ALIGN", "DMA_ADDRESS_ALIGN",
    "DESC_MAX_LENGTH", "DESC_IRQ_DISABLE", "DESC_LAST_DISABLE", "DESC_LENGTH_MASK",
    "MAX_PAYLOAD_SIZE", "MAX_READ_REQUEST_SIZE", "MSI_READER", "MSI_WRITER",
    "MAGIC", "PROTOCOL_VERSION", "NO_ERROR_OFFSET",
    "CSR_REGION_SIZE", "CSR_REGIONS", "TELEMETRY", "BUSPROBE_CSRS", "CSRS",
    "DMA_ENABLE", "DMA_IDLE", "csr", "COMPLETION_TIMEOUT_S", "RD_FAILED", "RD_RESET_PENDING",
    "LINK_ERRORS", "exported_map", "SOFT_LINK_MAGIC", "SOFT_LINK_CSRS", "SOFT_LINK_COUNTER_BITS",
    "soft_link_csr",
]

#: Xilinx vendor id and the 7-series "x1 Gen2" device id LitePCIe uses by default (0x7021), so
#: LitePCIe tooling recognises the board; the busprobe identity is the ``busprobe_magic`` CSR.
VENDOR_ID = 0x10EE
DEVICE_ID = 0x7021
BAR0_SIZE = 0x1_0000  # 64 KiB: CSR regions only
DATA_WIDTH = 64  # bits per beat of the LitePCIe datapath (S7 x1 Gen2 hard IP: 64 bits)
CLOCK_HZ = 125_000_000  # core clock = S7 user clock for x1 Gen2; 64 b x 125 MHz = 1 GB/s
READ_TAGS = 8  # outstanding DMA read requests (LitePCIe max_pending_requests)
DMA_ADDRESS_WIDTH = 32  # host addresses are 32-bit: 3DW headers (12 bytes) on every TLP
DMA_TABLE_DEPTH = 256  # descriptors per direction
DMA_LENGTH_ALIGN = DATA_WIDTH // 8
DMA_ADDRESS_ALIGN = 512
MAX_PAYLOAD_SIZE = 512  # the core caps negotiated MPS/MRRS at 512 (LitePCIe buffers)
MAX_READ_REQUEST_SIZE = 512

DESC_LENGTH_MASK = (1 << 24) - 1
DESC_MAX_LENGTH = DESC_LENGTH_MASK - (DESC_LENGTH_MASK % DMA_LENGTH_ALIGN)
DESC_IRQ_DISABLE = 1 << 24  # in the length word: no MSI when this descriptor completes
DESC_LAST_DISABLE = 1 << 25  # in the length word: do not end the descriptor on stream ``last``

#: ``*_enable`` register bits: bit 0 enables the engine; bit 1 (read only) = its FSM is idle.
DMA_ENABLE = 1 << 0
DMA_IDLE = 1 << 1

#: MSI vectors (bit in ``pcie_msi_vector``/``enable``/``clear``), LitePCIe's sorted-name order.
MSI_READER = 0
MSI_WRITER = 1

MAGIC = 0x4550_5042  # b"BPPE" little-endian
#: 2: the receive guard's counters, ``rd_status``, ``read_reset``, ``completion_timeout``.
#: 3: the SoC (:mod:`.pcie_soc`): a CPU with its firmware, UART, timer, ``link`` history and
#: ``firmware`` mailbox regions; BAR0 maps onto the CPU's CSR region.
PROTOCOL_VERSION = 3

#: Completion timeout the board starts with (``busprobe_completion_timeout`` after reset). PCIe
#: Base Spec 3.0 §2.8 (and Device Control 2's default range): a request must time out between
#: 50 us and 50 ms, preferably not before 10 ms. The core fails a read 1 to 1.25 times this
#: after it left: 16 to 20 ms. Simulation builds start shorter (``gateware/pcie/sim_top.py``).
COMPLETION_TIMEOUT_S = 16e-3

#: ``busprobe_rd_status`` bits: a read failed since the last read reset; a read reset is waiting
#: for the link to go quiet.
RD_FAILED = 1 << 0
RD_RESET_PENDING = 1 << 1

CSR_REGION_SIZE = 0x800
#: LiteX CSR region number of each module; region base = number * CSR_REGION_SIZE.
CSR_REGIONS: dict[str, int] = {
    "ctrl": 0,
    "pcie_phy": 1,
    "pcie_msi": 2,
    "pcie_dma0": 3,
    "busprobe": 4,
    "pcie_endpoint": 5,
    # The SoC's (busprobe.protocol.pcie_soc): LiteX's UART and timer, the link history, the
    # firmware mailbox.
    "uart": 6,
    "timer0": 7,
    "link": 8,
    "firmware": 9,
}

#: Telemetry counters (name, description), all 32-bit, wrapping; cycles are core clock cycles
#: (:data:`CLOCK_HZ`, also in ``busprobe_clock_hz``). Zeroed by ``busprobe_telemetry_clear``.
#: Taken at the PHY streams, so "TLPs" are what the core handed to / took from the link layer.
TELEMETRY: tuple[tuple[str, str], ...] = (
    ("cycles", "free-running core clock counter (the *_cycle fields sample it)"),
    ("wr_first_cycle", "cycle the first memory-write TLP started towards the link"),
    ("wr_last_cycle", "cycle the last beat of the last memory-write TLP was accepted"),
    ("wr_tlps", "memory-write TLPs sent (DMA writer, device to host)"),
    ("wr_bytes", "payload bytes in memory-write TLPs sent"),
    ("rd_first_cycle", "cycle the first memory-read request started towards the link"),
    ("rd_last_cycle", "cycle the last beat of the last read completion was received"),
    ("rd_requests", "memory-read request TLPs sent (DMA reader)"),
    ("rd_request_bytes", "bytes asked for by memory-read requests"),
    ("rd_completions", "completion-with-data TLPs received"),
    ("rd_bytes", "payload bytes in completions received"),
    ("tx_tlps", "all TLPs sent (writes, read requests, BAR0 completions)"),
    ("rx_tlps", "all TLPs received (completions, BAR0 requests)"),
    ("tx_stall_cycles", "cycles the PHY was not ready while the core had a TLP beat to send "
                        "(link busy / no flow-control credit)"),
    ("rx_stall_cycles", "cycles the core was not ready while the PHY had a received beat "
                        "(device backpressure: should stay near 0)"),
    ("rd_latency_min", "fewest cycles from a read request to its first completion"),
    ("rd_latency_max", "most cycles from a read request to its first completion"),
    ("rd_latency_sum", "sum of request-to-first-completion cycles (mean = sum / count)"),
    ("rd_latency_count", "read requests whose first completion arrived"),
    ("rd_outstanding_max", "most read requests outstanding at once (tag high-water mark)"),
    ("max_payload_size", "Max Payload Size in bytes the core uses (negotiated, capped at 512)"),
    ("max_request_size", "Max Read Request Size in bytes the core uses (capped at 512)"),
    ("pattern_errors", "32-bit words read by the DMA reader that did not match the pattern"),
    ("first_error_offset", "read-stream byte offset of the first mismatch, or NO_ERROR_OFFSET"),
    ("checked_bytes", "bytes the checker compared since the pattern was (re)started"),
    ("generated_bytes", "bytes the generator handed to the DMA writer since the pattern restart"),
    ("rx_malformed", "TLPs dropped because their beats do not match their header (length, "
                     "byte enables, prefix, payload above MPS, no room for a header)"),
    ("rx_poisoned", "TLPs dropped because their EP (poisoned) bit was set"),
    ("rd_cpl_unexpected", "completions dropped because no read in flight matches them (tag, "
                          "requester ID, locked)"),
    ("rd_cpl_status", "completions dropped for a status other than SC (UR, CRS, CA)"),
    ("rd_cpl_mismatch", "completions dropped because byte count, lower address or length do not "
                        "fit the read they answer"),
    ("rd_cpl_timeouts", "reads failed because they were not completed within the completion "
                        "timeout"),
    ("rd_cpl_discarded", "further completions of reads that had already failed, dropped"),
    ("rd_status", "RD_FAILED | RD_RESET_PENDING (not a counter; telemetry_clear leaves it)"),
)

#: Counters of :data:`TELEMETRY` that count a link fault (``rd_cpl_discarded`` counts what a
#: fault already counted made useless).
LINK_ERRORS: tuple[str, ...] = ("rx_malformed", "rx_poisoned", "rd_cpl_unexpected",
                                "rd_cpl_status", "rd_cpl_mismatch", "rd_cpl_timeouts")

#: busprobe's CSR block, in register order (each one 32-bit word from the region base).
BUSPROBE_CSRS: tuple[tuple[str, str], ...] = (
    ("magic", "constant MAGIC: this bitstream speaks this protocol"),
    ("version", "constant PROTOCOL_VERSION"),
    ("clock_hz", "core clock frequency in Hz"),
    ("pattern", "write a Pattern: restarts the generator and the checker at its first word "
                "(zeroes pattern_errors, first_error_offset, checked/generated_bytes)"),
    ("telemetry_clear", "write anything: zero the telemetry counters"),
    ("read_reset", "write anything, with both DMA engines disabled: return the read path (DMA "
                   "reader, completion reordering, reads in flight) to its power-on state and "
                   "clear RD_FAILED"),
    ("completion_timeout", "core cycles a memory read may wait for its completions (0: no "
                           "timeout); it fails 1 to 1.25 times this after it left"),
    *TELEMETRY,
)


#: ``soft_link`` reads this on a PHY with the link registers below (an unmapped CSR reads 0).
SOFT_LINK_MAGIC = 0x4B4E_4C53  # b"SLNK" little-endian
#: Width of each soft-link counter; they count from the link's reset and wrap.
SOFT_LINK_COUNTER_BITS = 16
#: The soft endpoint's own link registers (``SoftPCIEPHY`` only; the hard IP and ``SimPCIEPHY``
#: have none): 32-bit words in the PHY's CSR region right after the six registers every PHY has
#: (``pcie_phy_phy_link_status`` .. ``pcie_phy_phy_max_payload_size``), in this order. The
#: counters are :data:`SOFT_LINK_COUNTER_BITS` wide, from the link's reset, not cleared by
#: ``busprobe_telemetry_clear`` (the host takes differences).
SOFT_LINK_CSRS: tuple[tuple[str, str], ...] = (
    ("soft_link", "constant SOFT_LINK_MAGIC: the link registers below exist"),
    ("status", "the LTSSM's status word (busprobe.protocol.pcie_ltssm.LINK_STATUS_FIELDS: state, "
               "link up, width, speed, link and lane numbers)"),
    ("recoveries", "times the LTSSM went from L0 to Recovery"),
    ("replays", "replay buffer replays (a NAK or a replay timeout)"),
    ("replay_timeouts", "replays because no ACK came within the replay timer"),
    ("naks", "NAKs sent (a received TLP with a bad LCRC or sequence number)"),
    ("duplicates", "received TLPs dropped as duplicates (already acknowledged)"),
    ("protocol_errors", "ACK/NAKs naming a sequence number not sent (Data Link Protocol Errors)"),
    ("credit_blocked", "symbol clocks a TLP waited for the partner's flow-control credits"),
    ("overflows", "received TLPs dropped because the receive store was full"),
    ("unsupported_requests", "requests answered Unsupported Request"),
    ("msi_sent", "MSI memory writes sent"),
    ("msi_dropped", "MSI requests dropped (MSI or Bus Master disabled)"),
)


def exported_map() -> dict[str, Any]:
    """LiteX's export of the design (``pcie_csr_map.json``): ``memories`` (the CPU's regions),
    ``bases`` and ``registers`` (BAR0 offsets)."""
    return json.loads((resources.files(__package__) / "pcie_csr_map.json").read_text())


def _bar0_offsets(exported: dict[str, Any]) -> dict[str, int]:
    """Register name -> BAR0 offset; a register wider than 32 bits takes several consecutive
    words, named ``<name>_word1`` ... after its first (most significant first, as LiteX's
    ``csr_ordering = "big"``)."""
    offsets = {}
    for name, register in exported["registers"].items():
        offsets[name] = register["offset"]
        for word in range(1, register["words"]):
            offsets[f"{name}_word{word}"] = register["offset"] + 4 * word
    return offsets


#: Every BAR0 register: full LiteX name -> byte offset in BAR0 (LiteX's export).
CSRS: dict[str, int] = _bar0_offsets(exported_map())


def soft_link_csr(name: str) -> int:
    """BAR0 offset of the soft endpoint's link register ``name`` (:data:`SOFT_LINK_CSRS`): the
    words after the last register every PHY has, in LiteX's export."""
    names = [register for register, _ in SOFT_LINK_CSRS]
    if name not in names:
        raise ValueError(f"no soft link register named {name!r}")
    return CSRS["pcie_phy_phy_max_payload_size"] + 4 * (1 + names.index(name))


def csr(name: str) -> int:
    """BAR0 offset of register ``name`` (full LiteX name, e.g. ``pcie_dma0_writer_enable``)."""
    try:
        return CSRS[name]
    except KeyError:
        raise ValueError(f"no PCIe CSR named {name!r}") from None
