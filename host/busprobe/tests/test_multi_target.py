"""Several targets at once on the in-process loopback (conftest.py): the multi-target engine, its
sums and bad input, through the real argument parser. The simulated PCIe switch
(sim/pcie/tests/test_multi_target.py) tests the shared clock and the shared-limited verdict."""

import json

import pytest
from busprobe.cli import main
from busprobe.sweep import SweepPlan
from busprobe.sweep_multi import MultiSweep, TargetRun, sum_of_repeat
from busprobe.together import StreamRecord
from busprobe.verdict.shared import assess_shared

QUICK = ["--lengths", "2K,8K", "--queue-depth", "4", "--direction", "in", "--no-progress"]


def test_multi_target_loopbacks_alone_and_together_sum_to_the_sum_alone(loopback_device, capsys,
                                                                         tmp_path):
    path = tmp_path / "r.json"
    status = main(["sweep", "--device", "sim:loop", "--device", "sim:loop?second", *QUICK,
                   "--json", str(path)])
    out, err = capsys.readouterr()
    assert status == 0, err
    doc = json.loads(path.read_text())
    assert [t["device"] for t in doc["targets"]] == ["sim:loop", "sim:loop?second"]
    assert doc["errors"] == 0 and doc["complete"]
    for target in doc["targets"]:
        assert [p["length"] for p in target["alone"]] == [2048, 8192]
        assert [p["length"] for p in target["together"]] == [2048, 8192]
        assert all(p["errors"] == 0 and p["repeats"] == 3 for p in target["together"])
    for row in doc["together"]:  # separate clocks: the sum is each one's own rate added up
        assert row["sum_throughput"] == pytest.approx(row["sum_alone"], rel=1e-9)
        assert row["targets_together"] == [0, 1]
    assert [v["verdict"] for v in doc["shared"]] == ["independent"]
    assert "sum together" in out and "verdict independent" in out


def test_multi_target_same_target_twice_is_refused_in_one_line(loopback_device, capsys):
    status = main(["sweep", "--device", "sim:loop", "--device", "sim:loop", *QUICK])
    _, err = capsys.readouterr()
    assert status == 2
    assert len(err.strip().splitlines()) == 1 and "named twice" in err


def test_multi_target_lost_target_keeps_its_points_and_the_others_go_on(loopback_factory):
    transport, faults = loopback_factory
    # 2 lengths x 3 repeats alone = 6 stream calls; then it vanishes in its 2nd repeat together.
    lost = TargetRun("lost", transport("sim:loop?a", faults(gone_at=7)))
    kept = TargetRun("kept", transport("sim:loop?b"))
    plan = SweepPlan(("in",), (2048, 8192), (4,))
    multi = MultiSweep([lost, kept], plan, shared_clock=False)
    for run in (lost, kept):
        run.transport.open()
    multi.run()
    assert "DeviceGone" in lost.error and kept.error is None
    assert len(lost.alone) == 2 and lost.together == []
    assert [p.spec.length for p in kept.together] == [2048, 8192]
    rows = multi.sums()
    assert rows[0]["sum_samples"] and rows[1]["targets_together"] == [1]


def test_shared_sum_is_the_bytes_of_all_over_their_common_window():
    records = [StreamRecord(0.0, 1.0, 100), StreamRecord(0.5, 2.0, 300)]
    assert sum_of_repeat(records, shared_clock=True) == pytest.approx(200.0)
    assert sum_of_repeat(records, shared_clock=False) == pytest.approx(100.0 + 200.0)


SWITCH = [{"kind": "pci-root-port", "name": "0000:00:1c.0"},
          {"kind": "pci-switch-upstream", "name": "0000:01:00.0"}]


def _rows(alone, together, spread=0.0):
    return [{"direction": "write", "length": n, "queue_depth": 4, "sum_alone": alone,
             "alone_spread": spread, "sum_throughput": t, "sum_spread": spread}
            for n, t in zip((8192, 32768, 131072), together, strict=True)]


def test_shared_limited_when_short_of_the_sum_alone_and_flat_names_the_common_hop():
    paths = [SWITCH + [{"kind": "pci-switch-downstream", "name": f"0000:02:0{i}.0"},
                       {"kind": "pci-endpoint", "name": f"0000:0{3 + i}:00.0"}] for i in (1, 2)]
    (entry,) = assess_shared(_rows(900e6, (500e6, 600e6, 601e6)), paths, ["pcie", "pcie"])
    assert entry["verdict"] == "shared-limited"
    assert entry["shared_hop"]["name"] == "0000:01:00.0"
    assert entry["ceiling"] == pytest.approx(600.5e6)
    assert "switch upstream 0000:01:00.0" in entry["explanation"]


USB_PATHS = [[{"kind": "usb-host-controller", "name": "0000:00:14.0"},
              {"kind": "usb-device", "name": f"1-{i}"}] for i in (1, 2)]


def test_shared_verdict_independent_within_the_spread_inconclusive_while_rising_within_reach():
    (same,) = assess_shared(_rows(80e6, (70e6, 78e6, 79e6), spread=0.03), USB_PATHS,
                            ["usb2-hs"] * 2)
    assert same["verdict"] == "independent"
    # 5 % short with the repeats 3 % apart, still rising: within reach of the spread.
    (rising,) = assess_shared(_rows(80e6, (60e6, 70e6, 76e6), spread=0.03), USB_PATHS,
                              ["usb2-hs"] * 2)
    assert rising["verdict"] == "inconclusive" and "rising" in rising["explanation"]


def test_shortfall_far_beyond_the_spread_is_shared_limited_without_a_plateau():
    """Issue 47.5: a third lost together at one length is a verdict, not ``inconclusive``."""
    rows = [{"direction": "write", "length": 65536, "queue_depth": 8, "sum_alone": 900e6,
             "alone_spread": 0.004, "sum_throughput": 600e6, "sum_spread": 0.003}]
    paths = [SWITCH + [{"kind": "pci-switch-downstream", "name": f"0000:02:0{i}.0"},
                       {"kind": "pci-endpoint", "name": f"0000:0{3 + i}:00.0"}] for i in (1, 2)]
    (entry,) = assess_shared(rows, paths, ["pcie", "pcie"])
    assert entry["verdict"] == "shared-limited", entry["explanation"]
    assert entry["shared_hop"]["name"] == "0000:01:00.0"
    assert entry["ceiling"] is None and not entry["plateau_reached"]
    assert "switch upstream 0000:01:00.0" in entry["explanation"]
    assert ("at least this much is lost (300.00 MB/s); sweep longer lengths to measure the "
            "hop's ceiling") in entry["explanation"]
    # Still rising over several lengths, a third short: the same verdict.
    (rising,) = assess_shared(_rows(80e6, (30e6, 40e6, 50e6)), USB_PATHS, ["usb2-hs"] * 2)
    assert rising["verdict"] == "shared-limited" and "rising" in rising["explanation"]


def test_shortfall_of_targets_on_different_buses_stays_inconclusive_without_a_plateau():
    rows = [{"direction": "in", "length": 65536, "queue_depth": 4, "sum_alone": 90e6,
             "alone_spread": 0.0, "sum_throughput": 60e6, "sum_spread": 0.0}]
    (entry,) = assess_shared(rows, USB_PATHS, ["usb2-hs", "usb3-ss"])
    assert entry["verdict"] == "inconclusive"
    assert "different buses" in entry["explanation"]


def test_multi_target_report_and_compare_draw_each_target_alone_together_and_the_sums(
        loopback_device, capsys, tmp_path):
    from busprobe.report.compare import load_runs

    path = tmp_path / "r.json"
    assert main(["sweep", "--device", "sim:loop", "--device", "sim:loop?second", *QUICK,
                 "--json", str(path)]) == 0
    runs = load_runs([str(path)])
    assert [r.doc["device"].split(" (")[0] for r in runs] == [
        "#0 alone", "#0 together", "#1 alone", "#1 together", "sum alone", "sum together"]
    total = runs[-1]
    assert [e["verdict"] for e in total.entries] == ["independent"]
    assert total.entries[0]["plateau"] == pytest.approx(
        runs[-2].entries[0]["plateau"], rel=1e-9)
    status = main(["compare", str(path), "--plot", str(tmp_path / "c.png")])
    out, _ = capsys.readouterr()
    assert status == 0 and "sum alone" in out and "independent" in out
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    assert "sum together" in (tmp_path / "r.html").read_text()
