"""Verdicts on recorded result fixtures (tests/fixtures/results, see make_results.py there)."""

import copy
import json
from pathlib import Path

import pytest
from busprobe.verdict import assess

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "results"


def load(name):
    return json.loads((FIXTURES / name).read_text())


def by_direction(entries, direction, mps=None):
    return next(e for e in entries if e["direction"] == direction and e["mps"] == mps)


@pytest.mark.parametrize("direction", ["in", "out"])
def test_usb2_ideal_host_is_link_limited(direction):
    entry = by_direction(assess(load("usb2_ideal.json")), direction)
    assert entry["verdict"] == "link-limited"
    assert entry["model"] == 53_248_000 and entry["efficiency"] >= 0.95


def test_usb2_ehci_is_host_limited_with_packets_per_microframe_as_reason():
    entry = by_direction(assess(load("usb2_ehci.json")), "in")
    assert entry["verdict"] == "host-limited"
    assert "at most 10 packets per microframe where the bus allows 13" in entry["explanation"]
    assert entry["model"] == 53_248_000
    assert entry["profile"] == "ehci" and entry["profile_ceiling"] == 40_960_000
    # The simulated host obeys its profile: 100 % of the profile, 77 % of the link.
    assert entry["profile_efficiency"] == pytest.approx(1.0, abs=0.01)
    assert entry["efficiency"] == pytest.approx(0.77, abs=0.01)


def test_usb2_xhci_twelve_packets_is_host_limited_at_92_percent():
    entry = by_direction(assess(load("usb2_xhci.json")), "out")
    assert entry["verdict"] == "host-limited" and "at most 12 packets" in entry["explanation"]


def test_naking_device_is_named_device_limited_loudly():
    entry = by_direction(assess(load("usb2_naking_device.json")), "in")
    assert entry["verdict"] == "device-limited"
    assert entry["explanation"].startswith("DEVICE-LIMITED — must never happen")


def test_usb2_gaps_between_transfers_are_host_limited():
    doc = load("usb2_ideal.json")
    for p in doc["points"]:
        p["throughput"] *= 0.6
        t = p["telemetry"]
        t["data_uframes"] = int(t["data_uframes"] * 0.6)
    entry = by_direction(assess(doc), "in")
    assert entry["verdict"] == "host-limited" and "left gaps" in entry["explanation"]


@pytest.mark.parametrize("mps", [128, 256])
def test_uncapped_gen2_x1_write_sweep_is_link_limited(mps):
    entry = by_direction(assess(load("pcie_gen2x1.json")), "write", mps)
    assert entry["verdict"] == "link-limited"
    assert entry["model_name"] == f"pcie gen2 x1 write MPS {mps}"


def test_capped_gen2_x1_is_upstream_limited_with_stall_figure():
    entries = assess(load("pcie_gen2x1_cap290.json"))
    entry = by_direction(entries, "write", 128)
    assert entry["verdict"] == "upstream-limited"
    assert entry["plateau"] == pytest.approx(290 * 2**20, rel=0.01)
    assert "held off the device's writes for 30 % of cycles" in entry["explanation"]
    assert {e["verdict"] for e in entries} == {"upstream-limited"}


def test_slow_read_completions_are_upstream_limited_by_latency():
    entry = by_direction(assess(load("pcie_gen2x1_slow_reads.json")), "read", 128)
    assert entry["verdict"] == "upstream-limited"
    assert "took 4000 ns on average" in entry["explanation"]
    assert "2 requests of 512 B in flight" in entry["explanation"]


def test_pcie_device_that_leaves_a_ready_link_idle_is_device_limited():
    doc = load("pcie_gen2x1.json")
    for p in doc["points"]:
        p["throughput"] *= 0.5
    entry = by_direction(assess(doc), "write", 128)
    assert entry["verdict"] == "device-limited" and "link was ready" in entry["explanation"]


def test_without_telemetry_the_verdict_says_it_cannot_confirm():
    doc = load("usb2_ehci.json")
    for p in doc["points"]:
        p["telemetry"] = {}
    entry = by_direction(assess(doc), "in")
    assert entry["verdict"] == "host-limited"
    assert "No device telemetry to confirm" in entry["explanation"]


def test_queue_depth_effect_is_reported_between_qd1_and_deepest():
    entry = by_direction(assess(load("pcie_gen2x1.json")), "write", 128)
    effect = entry["qd_effect"]
    assert effect["queue_depths"] == [1, 4]
    assert effect["low_at_length"] < effect["plateau_high"]


def test_points_with_data_errors_are_left_out_and_said_so():
    doc = copy.deepcopy(load("usb2_ideal.json"))
    bad = next(p for p in doc["points"] if p["direction"] == "in" and p["queue_depth"] == 4)
    bad["errors"] = 3
    bad["throughput"] = 1.0
    entry = by_direction(assess(doc), "in")
    assert entry["verdict"] == "link-limited"
    assert "data errors were left out" in entry["explanation"]


def test_short_sweep_that_never_flattens_says_so():
    doc = load("usb2_ehci.json")
    doc["points"] = [p for p in doc["points"] if p["length"] <= 8192 and p["queue_depth"] == 1]
    entry = by_direction(assess(doc), "in")
    assert "still rising" in entry["explanation"]


def test_entries_follow_the_design_contract():
    for entry in assess(load("pcie_gen2x1.json")):
        for key in ("direction", "mps", "model", "plateau", "plateau_spread", "efficiency",
                    "verdict", "explanation", "qd_effect"):
            assert key in entry
        json.dumps(entry)


@pytest.mark.parametrize("direction", ["in", "out"])
def test_simulated_ehci_run_is_host_limited_and_matches_its_profile(direction):
    # Recorded from the real simulation: busprobe sweep --device sim:usb2?host=ehci.
    entry = by_direction(assess(load("sim_usb2_ehci.json")), direction)
    assert entry["verdict"] == "host-limited"
    assert "at most 10 packets per microframe where the bus allows 13" in entry["explanation"]
    # The device times the bus itself: the simulated controller obeys its profile within 1 %.
    assert entry["device_profile_efficiency"] == pytest.approx(1.0, abs=0.01)
    # Host-timed, QD 4 still rises 1.9 % from 64K to 256K (start-up amortised): no plateau,
    # so the verdict stands on 256K's figure and says the sweep should go longer.
    assert not entry["plateau_reached"] and entry["plateau_why"] == "rising"
    assert "Plateau not reached" in entry["explanation"] and "lower bound" in entry["explanation"]
    assert entry["qd_effect"]["at_length"] == 4096
    assert entry["qd_effect"]["low_at_length"] < 0.5 * entry["plateau"]


def test_simulated_capped_gen2_x1_is_upstream_limited_both_ways():
    # Recorded from the real simulation: sim:pcie?gen=2&width=1&cap=304087040 (290 MiB/s).
    entries = assess(load("sim_pcie_gen2x1_cap290.json"))
    write = by_direction(entries, "write", None)
    assert write["verdict"] == "upstream-limited"
    assert "held off the device's writes" in write["explanation"]
    assert write["plateau"] == pytest.approx(290 * 2**20, rel=0.03)
    read = by_direction(entries, "read", None)
    assert read["verdict"] == "upstream-limited"
    assert "Read completions took" in read["explanation"]


def test_simulated_uncapped_gen2_x1_write_is_link_limited_within_1_percent_of_the_model():
    # Recorded from the real simulation: sim:pcie?gen=2&width=1 (cocotbext-pcie link, MPS 256).
    entries = assess(load("sim_pcie_gen2x1.json"))
    write = by_direction(entries, "write", None)
    assert write["verdict"] == "link-limited"
    assert write["efficiency"] == pytest.approx(1.0, abs=0.01)
    read = by_direction(entries, "read", None)
    assert read["verdict"] == "link-limited" and read["efficiency"] > 0.95


def test_a_host_timed_plateau_above_the_link_comes_with_the_devices_reading():
    doc = copy.deepcopy(load("usb2_ideal.json"))
    for point in doc["points"]:
        if point["direction"] == "in":  # the host's window reads 0.1 % above the physics
            point["throughput"] = point["throughput_min"] = point["throughput_max"] = 53_301_248
            point["device_throughput"] = 53_248_000
    entry = by_direction(assess(doc), "in")
    assert entry["efficiency"] > 1
    assert "Timed by the device the plateau is 53.25 MB/s (100.0 % of the link model)" in \
        entry["explanation"]
    assert "leaves out the idle end of its last bus interval" in entry["explanation"]
