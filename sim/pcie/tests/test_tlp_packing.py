"""The TLP bridge's packing (``tlp_stream._packed``/``_unpacked``) is the beat format of
``tlp_to_beats``/``beats_to_tlp``: whole TLPs go in and out of ``sim/hdl/tlp_bridge.sv`` as one
vector of 64-bit beats and one of byte enables, and must carry exactly the same bytes."""

from __future__ import annotations

import pytest
from busprobe.sim.pcie.tlp_stream import _packed, _unpacked, beats_to_tlp, tlp_to_beats
from cocotbext.pcie.core.tlp import Tlp, TlpType
from cocotbext.pcie.core.utils import PcieId


def _write(address: int, length: int) -> Tlp:
    tlp = Tlp()
    tlp.fmt_type = TlpType.MEM_WRITE if address < 1 << 32 else TlpType.MEM_WRITE_64
    tlp.requester_id = PcieId(1, 0, 0)
    tlp.set_addr_be_data(address, bytes((i * 7 + 3) & 0xFF for i in range(length)))
    return tlp


def _vectors(beats: list[tuple[int, int]]) -> tuple[int, int, int]:
    return (sum(d << (64 * k) for k, (d, _) in enumerate(beats)),
            sum(b << (8 * k) for k, (_, b) in enumerate(beats)), len(beats))


# 3-DW headers (32-bit addresses) and 4-DW ones, odd and even DW counts, up to MPS 512.
@pytest.mark.parametrize(("address", "length"), [(0x1000, 4), (0x1000, 8), (0x2004, 256),
                                                 (0x3000, 512), (0x1_0000_0000, 4),
                                                 (0x1_0000_0000, 508)])
def test_packed_tlp_is_the_beats_of_the_stream_format_and_unpacks_to_the_same_tlp(address,
                                                                                  length):
    tlp = _write(address, length)
    assert _packed(tlp) == _vectors(tlp_to_beats(tlp))
    dat, be, beats = _packed(tlp)
    stale = (1 << (64 * 72)) - (1 << (64 * beats))  # a longer TLP's beats left in the bridge
    back = _unpacked(dat | stale, be | (0xFF << (8 * beats)), beats)
    assert back.pack() == tlp.pack()


def test_dws_whose_bytes_are_not_enabled_are_left_out_as_beats_to_tlp_does():
    tlp = _write(0x1000, 16)  # 3 + 4 DWs: the last beat holds one
    beats = tlp_to_beats(tlp)
    holed = [beats[0], (0xDEAD_BEEF_0BAD_F00D, 0x00), *beats[1:]]
    assert beats_to_tlp(holed).pack() == tlp.pack()
    assert _unpacked(*_vectors(holed)).pack() == tlp.pack()
