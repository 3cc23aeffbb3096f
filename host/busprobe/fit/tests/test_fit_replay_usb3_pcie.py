"""Sweep a known host on ``sim:usb3`` and ``sim:pcie``, fit it, replay the fitted profile, compare.

As for USB 2.0 (``test_fit_replay_sim.py``): ``busprobe sweep`` behind a known host, ``busprobe
fit`` of the result, and the same plan swept again behind what the fit wrote, which must
reproduce every point within 2 % (``make bench``; it prints the figures). SuperSpeed behind the
shipped ``vl805`` profile (no OUT bursting, 2 µs turnaround, 20 µs re-token, 20 / 30 µs
completion / resubmit latency); PCIe behind a root whose memory answers reads after 12 µs (so
that the device's 8 reads in flight no longer cover it) and moves at most 380 MB/s.
"""

import time

import pytest
from busprobe.cli import main
from busprobe.fit.pcie_fit import fit_pcie
from busprobe.model.usb3_hosts import load_usb3_profile
from busprobe.results import load_results

from .test_fit_replay_sim import CURVE_SHARE, deviations, sweep

PCIE_ROOT = "sim:pcie?latency_ns=12000&cap=380000000"


def _print(capsys, title, seconds, off, rows, report):
    worst = max(off, key=lambda k: abs(off[k]))
    with capsys.disabled():
        print(f"\n== {title} ({len(off)} points): sweep {seconds[0]:.0f} s, fit "
              f"{seconds[1]:.1f} s, replay {seconds[2]:.0f} s")
        for key, true, fitted in rows:
            print(f"  {key:26s} true {true!s:>10}  fitted {fitted!s:>10}")
        print(f"  replay vs measured: worst {100 * off[worst]:+.2f} % at {worst}")
        print(report)
    return worst


@pytest.mark.bench
def test_fit_recovers_the_vl805_profile_on_usb3_and_replays_it(tmp_path, capsys):
    plan = ["--direction", "in,out", "--lengths", "4K,16K,64K,256K", "--queue-depth", "1,2"]
    started = time.monotonic()
    measured = sweep("sim:usb3?host=vl805", plan, tmp_path / "usb3.json", capsys)
    swept = time.monotonic()
    profile = tmp_path / "vl805_fitted.toml"
    assert main(["fit", str(tmp_path / "usb3.json"), "-o", str(profile)]) == 0
    report, _ = capsys.readouterr()
    fitted_at = time.monotonic()
    replayed = sweep(f"sim:usb3?host={profile}", plan, tmp_path / "replay.json", capsys)
    seconds = (swept - started, fitted_at - swept, time.monotonic() - fitted_at)
    true, fitted = load_usb3_profile("vl805"), load_usb3_profile(str(profile))
    keys = ("max_burst_in", "max_burst_out", "turnaround_ns", "retoken_delay_us",
            "completion_latency_us", "resubmit_latency_us")
    off = deviations(measured, replayed)
    worst = _print(capsys, "fit of a sim:usb3 sweep behind vl805", seconds, off,
                   [(k, getattr(true, k), getattr(fitted, k)) for k in keys], report)
    assert (fitted.max_burst_in, fitted.max_burst_out) == (16, 1)
    for key in keys[2:]:
        assert getattr(fitted, key) == pytest.approx(getattr(true, key), rel=0.05), key
    assert abs(off[worst]) <= CURVE_SHARE, off


@pytest.mark.bench
def test_fit_finds_the_roots_latency_and_cap_on_pcie_and_replays_them(tmp_path, capsys):
    plan = ["--direction", "write,read", "--lengths", "16K,64K", "--queue-depth", "2,4"]
    started = time.monotonic()
    measured = sweep(PCIE_ROOT, plan, tmp_path / "pcie.json", capsys)
    swept = time.monotonic()
    profile = tmp_path / "root.toml"
    assert main(["fit", str(tmp_path / "pcie.json"), "-o", str(profile)]) == 0
    report, _ = capsys.readouterr()
    fitted = fit_pcie(tmp_path / "pcie.json")
    fitted_at = time.monotonic()
    replayed = sweep(fitted.replay_selector(), plan, tmp_path / "replay.json", capsys)
    seconds = (swept - started, fitted_at - swept, time.monotonic() - fitted_at)
    values = {key: s.value for key, s in fitted.settings.items()}
    off = deviations(measured, replayed)
    worst = _print(capsys, f"fit of a sim:pcie sweep behind {PCIE_ROOT}", seconds, off,
                   [("completion_latency_ns", 12000, values["completion_latency_ns"]),
                    ("upstream_cap", 380e6, values["upstream_cap"]),
                    ("read_completion_boundary", "64 (not split)",
                     values["read_completion_boundary"])], report)
    assert fitted.settings["upstream_cap"].determined
    assert values["upstream_cap"] == pytest.approx(380e6, rel=0.03)
    assert fitted.settings["completion_latency_ns"].determined
    assert abs(off[worst]) <= CURVE_SHARE, off
    assert load_results(tmp_path / "replay.json")["errors"] == 0
