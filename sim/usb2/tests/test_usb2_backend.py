"""sim:usb2 plumbing: selector errors and the PHY stall mask (a simulator that dies or stops:
sim/tests/test_simulator_watchdog.py)."""

from __future__ import annotations

import pytest
from busprobe.model import usb2_wire as wire
from busprobe.sim.usb2.phy import stall_mask
from busprobe.targets import open_transport
from busprobe.transport import InvalidRequest


@pytest.mark.parametrize(("selector", "message"), [
    ("sim:usb2?host=nosuch", "unknown host profile 'nosuch'"),
    ("sim:usb2?design=other", "design must be busprobe or stock"),
    ("sim:usb2?speed=full", "unknown option(s) speed"),
])
def test_bad_selector_options_are_one_line_errors(selector, message):
    with pytest.raises(InvalidRequest) as info:
        open_transport(selector)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_stall_mask_costs_one_cycle_per_eight_stuffed_bits():
    assert stall_mask(wire.token_bytes(wire.Pid.IN, 7, 1)) == 0
    packet = wire.data_bytes(wire.Pid.DATA0, b"\xff" * 64)  # 512 ones: 85 stuffed bits
    mask = stall_mask(packet)
    assert bin(mask).count("1") == wire.stuff_bits(packet) // 8
    assert mask & 1 == 0  # never before the PID
