"""PCI configuration space: the layout busprobe reads, and its decoding. Standard library only.

Every reader of config space imports this module: the VFIO backend and its MPS/MRRS guard
(:mod:`busprobe.backends.pcie`), the topology walk (:mod:`busprobe.topology`), the simulated
PCIe backend and the sysfs fixture trees of the tests. None of them has to import another's
package to decode a register, so decoding a capability never loads VFIO.

What is decoded (PCI Local Bus 3.0 §6.7 capability list; PCIe Base 3.0 §7.8 PCI Express
capability): Device Capabilities (Max_Payload_Size Supported), Device Control (MPS, MRRS),
Link Capabilities and Link Status (speed, width).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "BDF_RE", "LINK_SPEEDS", "PCI_STATUS", "PCI_STATUS_CAP_LIST", "PCI_CAPABILITY_LIST",
    "PCI_CAP_ID_EXP", "UNPRIVILEGED_CONFIG_BYTES", "EXP_DEVCAP", "EXP_DEVCTL", "EXP_LNKCAP",
    "EXP_LNKSTA", "DEVCTL_MPS_SHIFT", "DEVCTL_MRRS_SHIFT", "DEVCTL_MPS_MASK", "DEVCTL_MRRS_MASK",
    "SIZES", "decode_size", "encode_size", "find_capability", "PcieCapability",
]

#: A PCI function address as sysfs spells it: ``DDDD:BB:DD.F``, lower-case hex.
BDF_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")

PCI_STATUS = 0x06
PCI_STATUS_CAP_LIST = 0x10
PCI_CAPABILITY_LIST = 0x34
PCI_CAP_ID_EXP = 0x10
#: Config space a non-root reader sees through sysfs; capabilities usually lie beyond it.
UNPRIVILEGED_CONFIG_BYTES = 64

# Offsets inside the PCI Express capability (PCIe Base 3.0 §7.8).
EXP_DEVCAP = 0x04
EXP_DEVCTL = 0x08
EXP_LNKCAP = 0x0C
EXP_LNKSTA = 0x12
DEVCTL_MPS_SHIFT, DEVCTL_MRRS_SHIFT = 5, 12
DEVCTL_MPS_MASK = 0x7 << DEVCTL_MPS_SHIFT
DEVCTL_MRRS_MASK = 0x7 << DEVCTL_MRRS_SHIFT

#: Link speed code (Link Capabilities / Link Status bits 3:0) -> busprobe's name for it.
LINK_SPEEDS = {1: "gen1", 2: "gen2", 3: "gen3", 4: "gen4", 5: "gen5"}

#: The sizes a 3-bit MPS/MRRS field can hold, in bytes.
SIZES = (128, 256, 512, 1024, 2048, 4096)


def decode_size(code: int) -> int:
    """Payload/request size in bytes of a 3-bit DevCap/DevCtl code (0 -> 128 ... 5 -> 4096)."""
    return 128 << (code & 0x7)


def encode_size(size: int) -> int:
    """The 3-bit code of ``size``; :class:`ValueError` unless it is one of :data:`SIZES`."""
    if size not in SIZES:
        raise ValueError(f"MPS/MRRS must be one of {', '.join(map(str, SIZES))}, not {size}")
    return size.bit_length() - 8


def find_capability(config: bytes, cap_id: int) -> int | None:
    """Offset of capability ``cap_id`` in the classic capability list of ``config``, or None."""
    if len(config) < 0x40 or not config[PCI_STATUS] & PCI_STATUS_CAP_LIST:
        return None
    offset, seen = config[PCI_CAPABILITY_LIST] & 0xFC, set()
    while offset and offset not in seen and offset + 2 <= len(config):
        seen.add(offset)  # a looping list in a broken device must not hang us
        if config[offset] == cap_id:
            return offset
        offset = config[offset + 1] & 0xFC
    return None


@dataclass(frozen=True)
class PcieCapability:
    """The fields of one function's PCI Express capability that busprobe uses.

    Attributes
    ----------
    offset : int
        Where the capability starts in config space.
    devcap, devctl, lnkcap, lnksta : int
        The raw registers.
    """

    offset: int
    devcap: int
    devctl: int
    lnkcap: int
    lnksta: int

    @classmethod
    def parse(cls, config: bytes) -> PcieCapability | None:
        """The capability in ``config`` (bytes from offset 0), or None if it has none."""
        off = find_capability(config, PCI_CAP_ID_EXP)
        if off is None or off + EXP_LNKSTA + 2 > len(config):
            return None

        def reg(at: int, size: int) -> int:
            return int.from_bytes(config[off + at:off + at + size], "little")

        return cls(off, reg(EXP_DEVCAP, 4), reg(EXP_DEVCTL, 2), reg(EXP_LNKCAP, 4),
                   reg(EXP_LNKSTA, 2))

    @property
    def mps_supported(self) -> int:
        return decode_size(self.devcap)

    @property
    def mps(self) -> int:
        return decode_size(self.devctl >> DEVCTL_MPS_SHIFT)

    @property
    def mrrs(self) -> int:
        return decode_size(self.devctl >> DEVCTL_MRRS_SHIFT)

    @property
    def link_speed_cap(self) -> str:
        return LINK_SPEEDS.get(self.lnkcap & 0xF, f"code{self.lnkcap & 0xF}")

    @property
    def link_width_cap(self) -> int:
        return (self.lnkcap >> 4) & 0x3F

    @property
    def link_speed(self) -> str:
        return LINK_SPEEDS.get(self.lnksta & 0xF, f"code{self.lnksta & 0xF}")

    @property
    def link_width(self) -> int:
        return (self.lnksta >> 4) & 0x3F

    @property
    def link_up(self) -> bool:
        """Negotiated width is non-zero (a down link reads x0; DLLLA is optional for endpoints)."""
        return self.link_width > 0

    def to_json(self) -> dict[str, object]:
        return {"mps_supported": self.mps_supported, "mps": self.mps, "mrrs": self.mrrs,
                "link_speed_cap": self.link_speed_cap, "link_width_cap": self.link_width_cap,
                "link_speed": self.link_speed, "link_width": self.link_width}
