"""No measured figure above its point's ceiling: recorded simulations against the run models.

A point's ceiling is that of the runs it made (``point_models.run_ceiling``): so many transfers,
timed by the host from the first submission to the last completion, and by the device over
whole bus intervals. Every repeat of every recorded simulation must read at most that, on
either clock. The recordings are real ``sim:usb2`` sweeps (with the device's whole-microframe
window): the demo's two ladders (OUT, queue depth 1, 512 B..256 KiB, behind xHCI and EHCI),
whose host-timed figures read 100.1-100.6 % of the steady-state model the sweep used to take as
the ceiling, the fit's ladders of each profile, a streamed and a BOT ladder behind xHCI; odd
length ladders (1, 513, 4097, 100003 B; on SuperSpeed 1, 1025, 5000, 100003 B behind the VL805
profile; on PCIe 8, 520, 4104 B) at two queue depths each way, and PCIe reads and writes of
64 KiB at MPS 128, 256 and 512.
"""

import json
from dataclasses import replace
from pathlib import Path

import pytest
from busprobe.model import ceiling_for
from busprobe.model.bus import bus_from_json
from busprobe.model.usb2_hosts import load_profile
from busprobe.model.usb2_run import device_window, run_ceiling
from busprobe.model.usb2_schedule import steady_period
from busprobe.point_models import run_ceiling as point_run_ceiling
from busprobe.protocol import usb2_wire as wire

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "results"
RECORDED = ["sim_usb2_demo_xhci.json", "sim_usb2_demo_ehci.json", "sim_usb2_fit_ideal.json",
            "sim_usb2_fit_ehci.json", "sim_usb2_fit_xhci.json", "sim_usb2_stream_xhci.json",
            "sim_usb2_bot_xhci.json", "sim_usb2_xhci_odd.json", "sim_usb3_vl805_odd.json",
            "sim_pcie_reads_mps.json", "sim_pcie_odd.json"]


@pytest.mark.parametrize("name", RECORDED)
def test_every_recorded_repeat_reads_at_most_its_run_ceiling_on_either_clock(name):
    doc = json.loads((FIXTURES / name).read_text())
    bus = bus_from_json(doc["bus"])
    for point in doc["points"]:
        setting = {k: point[k] for k in ("mps", "mrrs") if point.get(k)}
        ceiling = point_run_ceiling(replace(bus, **setting), point["direction"],
                                    point["length"], point["queue_depth"], point["transfers"])
        label = f"{name} {point['direction']} {point['length']} B qd {point['queue_depth']}"
        assert max(point["samples"]) <= ceiling.throughput, label
        device = [s for s in point.get("device_samples") or [] if s is not None]
        if device:
            assert ceiling.device is not None and max(device) <= ceiling.device, label


def test_the_demo_ladder_read_above_the_steady_state_it_was_compared_with():
    """The fault this model fixes: the steady state left out that a run has one resubmit
    fewer than transfers."""
    doc = json.loads((FIXTURES / "sim_usb2_demo_xhci.json").read_text())
    bus = bus_from_json(doc["bus"])
    above = [p for p in doc["points"]
             if p["throughput"] > ceiling_for(bus, "out", length=p["length"],
                                              queue_depth=1).throughput]
    assert len(above) == len(doc["points"])


def test_a_run_holds_one_resubmit_fewer_than_transfers():
    profile = load_profile("xhci")
    one, two = (run_ceiling(profile, "out", length=512, queue_depth=1, transfers=n).seconds
                for n in (1, 2))
    line = wire.transaction_bits("out", 512).total / wire.BIT_RATE
    # One transfer: its transaction and its completion latency, no resubmit before it ...
    assert one == pytest.approx(line + profile.completion_latency_us * 1e-6, abs=0.2e-6)
    # ... two: one resubmit between them, none after the last; the steady state has one each.
    assert two - 2 * one == pytest.approx(profile.resubmit_latency_us * 1e-6, abs=0.2e-6)
    assert steady_period(profile, "out", packets=1, queue_depth=1) > one + 29e-6


def test_a_short_last_packet_holds_the_line_for_its_own_bytes():
    profile = load_profile("xhci")
    full = run_ceiling(profile, "out", length=1024, queue_depth=1, transfers=40)
    odd = run_ceiling(profile, "out", length=513, queue_depth=1, transfers=40)
    # One byte instead of 511 in the second packet: the run is shorter, not as long.
    assert odd.seconds < full.seconds - 40 * 6e-6


def test_the_device_window_counts_from_the_end_of_the_first_to_the_second_to_last_microframe():
    assert device_window({3: 512, 4: 1024, 6: 2048, 9: 100}) == (1024 + 2048, 6 - 3)
    assert device_window({3: 512, 4: 1024}) is None  # fewer than three microframes with data
