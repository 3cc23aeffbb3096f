"""The ULPI PHY model's stall mask (selector errors: busprobe.targets' tests; a simulator that
dies or stops: sim/tests/test_simulator_watchdog.py)."""

from __future__ import annotations

from busprobe.protocol import usb2_wire as wire
from busprobe.sim.usb2.phy import stall_mask


def test_stall_mask_costs_one_cycle_per_eight_stuffed_bits():
    assert stall_mask(wire.token_bytes(wire.Pid.IN, 7, 1)) == 0
    packet = wire.data_bytes(wire.Pid.DATA0, b"\xff" * 64)  # 512 ones: 85 stuffed bits
    mask = stall_mask(packet)
    assert bin(mask).count("1") == wire.stuff_bits(packet) // 8
    assert mask & 1 == 0  # never before the PID
