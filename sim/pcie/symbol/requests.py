"""A root complex's requests to the soft endpoint, built with cocotbext-pcie's ``Tlp`` (a
peer's encoder: its bytes are what the endpoint must parse)."""

from __future__ import annotations

from cocotbext.pcie.core.tlp import Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId

__all__ = ["ROOT", "ENDPOINT", "config_read", "config_write", "memory_read", "memory_write"]

#: The requester: the root complex (bus 0, device 0).
ROOT = PcieId(0, 0, 0)
#: The endpoint behind the first root port: bus 1, device 0.
ENDPOINT = PcieId(1, 0, 0)


def _request(kind: TlpType, tag: int, requester: PcieId = ROOT) -> Tlp:
    tlp = Tlp()
    tlp.fmt_type = kind
    tlp.requester_id = requester
    tlp.tag = tag
    return tlp


def config_read(offset: int, *, tag: int = 0, target: PcieId = ENDPOINT) -> Tlp:
    """CfgRd0 of the dword at byte ``offset``."""
    tlp = _request(TlpType.CFG_READ_0, tag)
    tlp.completer_id = target
    tlp.set_addr_be(offset, 4)
    return tlp


def config_write(offset: int, value: int, *, size: int = 4, tag: int = 0,
                 target: PcieId = ENDPOINT) -> Tlp:
    """CfgWr0 of ``value`` (``size`` bytes, little-endian as the register holds it) at byte
    ``offset``."""
    tlp = _request(TlpType.CFG_WRITE_0, tag)
    tlp.completer_id = target
    tlp.set_addr_be_data(offset, value.to_bytes(size, "little"))
    return tlp


def memory_read(address: int, length: int = 4, *, tag: int = 0,
                requester: PcieId = ROOT) -> Tlp:
    """MRd of ``length`` bytes at ``address`` (a 4 DW header above 4 GiB) from
    ``requester`` (the endpoint's own requests: its ID)."""
    tlp = _request(TlpType.MEM_READ if address < 1 << 32 else TlpType.MEM_READ_64, tag,
                   requester)
    tlp.set_addr_be(address, length)
    return tlp


def memory_write(address: int, data: bytes, *, requester: PcieId = ROOT) -> Tlp:
    """MWr of ``data`` at ``address`` (a 4 DW header above 4 GiB) from ``requester``."""
    tlp = _request(TlpType.MEM_WRITE if address < 1 << 32 else TlpType.MEM_WRITE_64, 0,
                   requester)
    tlp.set_addr_be_data(address, data)
    return tlp
