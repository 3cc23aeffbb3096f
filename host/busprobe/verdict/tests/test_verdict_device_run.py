"""The PCIe verdict with the firmware's device-run beside the host-run (docs/DESIGN.md §3.2), on
the recorded fixtures (tests/fixtures/results)."""

import json
from pathlib import Path

import pytest
from busprobe.result_schema import check_document
from busprobe.verdict import assess

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "results"


def load(name):
    return json.loads((FIXTURES / name).read_text())


def with_device_run(doc, factor=1.0, host_factor=1.0):
    """Each point gets a device-run at ``factor`` x its recorded figure, its host-run figures
    scaled by ``host_factor``."""
    for p in doc["points"]:
        p["device_run_throughput"] = p["throughput"] * factor
        for key in ("throughput", "throughput_min", "throughput_max"):
            p[key] *= host_factor
    check_document(doc)
    return doc


def entry(entries, direction="write", mps=128):
    return next(e for e in entries if e["direction"] == direction and e["mps"] == mps)


def test_device_run_at_the_model_with_a_slower_host_run_is_driver_limited():
    e = entry(assess(with_device_run(load("pcie_gen2x1.json"), host_factor=0.5)))
    assert e["verdict"] == "driver-limited"
    assert e["device_run_efficiency"] == pytest.approx(e["efficiency"] * 2, rel=0.01)
    assert "host's software path does not" in e["explanation"]


def test_device_run_as_low_as_the_host_run_is_upstream_limited():
    e = entry(assess(with_device_run(load("pcie_gen2x1_cap290.json"))))
    assert e["verdict"] == "upstream-limited"
    assert e["device_run_plateau"] == pytest.approx(290 * 2**20, rel=0.01)
    assert "held off the device's writes" in e["explanation"]
    assert "chipset or the path upstream of the link is the limit" in e["explanation"]


def test_device_run_leaves_a_link_limited_verdict_and_is_named():
    e = entry(assess(with_device_run(load("pcie_gen2x1.json"))))
    assert e["verdict"] == "link-limited" and "Run by the device itself" in e["explanation"]


def test_without_a_device_run_the_verdict_is_the_host_runs():
    e = entry(assess(load("pcie_gen2x1_cap290.json")))
    assert e["device_run_plateau"] is None and e["verdict"] == "upstream-limited"
    assert "Run by the device" not in e["explanation"]
