"""``busprobe fit`` of SuperSpeed and PCIe sweeps, on recorded simulations.

``sim_usb3_vl805_odd.json`` is ``sim:usb3?host=vl805`` (IN and OUT, 1, 1025, 5000, 100003 B at
queue depth 1 and 2): the profile it was swept behind is known (``model/hosts/usb3/vl805.toml``:
window 16 IN, 1 OUT, turnaround 2000 ns, re-token 20 µs, completion 20 µs, resubmit 30 µs), so
the fit must find it. ``sim_pcie_reads_mps.json`` is ``sim:pcie`` with no root latency or cap:
nothing about the root shows, and the fit must say so rather than invent it.
"""

from pathlib import Path

import pytest
from busprobe.cli import main
from busprobe.fit.pcie_fit import fit_pcie
from busprobe.fit.usb3_fit import fit_usb3
from busprobe.model.pcie_hosts import load_pcie_profile
from busprobe.model.usb3_hosts import load_usb3_profile

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "results"


@pytest.fixture(scope="module")
def vl805():
    return fit_usb3(FIXTURES / "sim_usb3_vl805_odd.json")


def test_the_burst_windows_are_read_off_the_telemetry_exactly(vl805):
    assert (vl805.settings["max_burst_in"].value, vl805.settings["max_burst_out"].value) == \
        (16, 1)
    assert vl805.settings["max_burst_in"].determined and vl805.settings["max_burst_out"].determined


@pytest.mark.parametrize(("key", "true"), [("turnaround_ns", 2000.0), ("retoken_delay_us", 20.0),
                                           ("completion_latency_us", 20.0),
                                           ("resubmit_latency_us", 30.0)])
def test_the_latencies_of_the_profile_swept_behind_are_found_within_1_percent(vl805, key, true):
    setting, interval = vl805.settings[key], vl805.fit.intervals[key]
    assert setting.determined
    assert setting.value == pytest.approx(true, rel=0.01)
    assert interval.low - 0.01 * true <= true <= interval.high + 0.01 * true


def test_what_the_sweep_cannot_show_is_left_open_with_its_evidence(vl805):
    credit = vl805.settings["credit_return_ns"]
    assert not credit.determined and "header credit" in credit.text


def test_the_fitted_model_reproduces_every_point_it_was_fitted_to_within_1_percent(vl805):
    assert vl805.fit.worst < 0.01


def test_fit_writes_a_usb3_profile_the_simulator_reads_and_says_how_to_replay_it(tmp_path,
                                                                                  capsys):
    out = tmp_path / "vl805-fitted.toml"
    assert main(["fit", str(FIXTURES / "sim_usb3_vl805_odd.json"), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    profile = load_usb3_profile(str(out))
    assert profile.max_burst_out == 1 and profile.turnaround_ns == pytest.approx(2000, rel=0.01)
    assert "fitted from" in profile.sources["turnaround_ns"]
    assert f'sim:usb3?host={out}' in printed and "credit_return_ns" in printed


def test_a_pcie_sweep_with_nothing_of_the_root_in_it_leaves_every_parameter_open(tmp_path):
    fitted = fit_pcie(FIXTURES / "sim_pcie_reads_mps.json")
    assert not any(s.determined for s in fitted.settings.values())
    assert "never held by latency" in fitted.settings["completion_latency_ns"].text
    assert "as large as MPS" in fitted.settings["read_completion_boundary"].text
    assert fitted.fit.worst < 0.01
    out = tmp_path / "root.toml"
    assert main(["fit", str(FIXTURES / "sim_pcie_reads_mps.json"), "-o", str(out)]) == 0
    assert load_pcie_profile(str(out)).upstream_cap == 0.0
    assert fitted.replay_selector().startswith("sim:pcie?gen=2&latency_ns=")


def test_a_result_without_transfers_per_repeat_is_refused_in_one_line(tmp_path):
    import json

    doc = json.loads((FIXTURES / "sim_pcie_reads_mps.json").read_text())
    for point in doc["points"]:
        del point["transfers"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="without their transfers per repeat"):
        fit_pcie(path)


def test_a_capped_root_gives_its_cap_and_hides_its_latency():
    """``sim_pcie_capped.json``: ``sim:pcie?latency_ns=800&cap=304087040`` (writes and reads of
    4..64 KiB at queue depth 1 and 4): the cap shows where the link backpressured the device;
    reads all sat at the cap, which hides an 800 ns latency, and the fit must not invent one."""
    fitted = fit_pcie(FIXTURES / "sim_pcie_capped.json")
    cap = fitted.settings["upstream_cap"]
    assert cap.determined and cap.value == pytest.approx(304087040, rel=0.01)
    latency = fitted.settings["completion_latency_ns"]
    assert not latency.determined and "sat at the upstream cap" in latency.text
    assert "cap=30" in fitted.replay_selector() and "e+" not in fitted.replay_selector()
