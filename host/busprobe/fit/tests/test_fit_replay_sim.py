"""Sweep a shipped host profile on ``sim:usb2``, fit it, replay the fitted profile, compare.

The round trip the issue asks for: ``busprobe sweep`` of the simulated gateware behind a shipped
profile, ``busprobe fit`` of that result, and a second sweep of the same plan behind the fitted
profile (``sim:usb2?host=fitted.toml``), which must reproduce the first at every point within 2 %.
The ``sim`` test does it for one profile with a short ladder; the ``bench`` one (``make bench``)
for every shipped profile with the full ladder in both directions, printing the figures.
"""

import time

import pytest
from busprobe.cli import main
from busprobe.model.usb2_hosts import builtin_profiles, load_profile
from busprobe.results import load_results

#: The issue's bars.
CURVE_SHARE = 0.02
LATENCY_SHARE, LATENCY_FLOOR_US = 0.10, 1.0


def sweep(device, plan, path, capsys):
    status = main(["sweep", "--device", device, *plan, "--no-progress", "--json", str(path)])
    out, err = capsys.readouterr()
    assert status == 0, err
    return load_results(path)


def round_trip(name, plan, tmp_path, capsys):
    """Measured and replayed documents, the fitted profile, and the seconds each step took."""
    started = time.monotonic()
    measured = sweep(f"sim:usb2?host={name}", plan, tmp_path / f"{name}.json", capsys)
    swept = time.monotonic()
    profile_path = tmp_path / f"{name}_fitted.toml"
    assert main(["fit", str(tmp_path / f"{name}.json"), "-o", str(profile_path)]) == 0
    report, _ = capsys.readouterr()
    fitted_at = time.monotonic()
    replayed = sweep(f"sim:usb2?host={profile_path}", plan, tmp_path / f"{name}_replay.json",
                     capsys)
    seconds = (swept - started, fitted_at - swept, time.monotonic() - fitted_at)
    return measured, replayed, load_profile(str(profile_path)), report, seconds


def deviations(measured, replayed):
    """Per point (direction, length, queue depth): replayed / measured - 1, host-timed."""
    key = lambda p: (p["direction"], p["length"], p["queue_depth"])  # noqa: E731
    replay = {key(p): p["throughput"] for p in replayed["points"]}
    return {key(p): replay[key(p)] / p["throughput"] - 1 for p in measured["points"]}


@pytest.mark.sim
def test_a_fitted_profile_replays_a_short_simulated_sweep_within_two_percent(tmp_path, capsys):
    plan = ["--direction", "in", "--lengths", "1K,4K,16K", "--queue-depth", "1,4",
            "--min-bytes", "64K"]
    measured, replayed, fitted, report, _ = round_trip("xhci", plan, tmp_path, capsys)
    true = load_profile("xhci")
    assert fitted.max_bulk_in_per_uframe == true.max_bulk_in_per_uframe
    assert fitted.completion_on_uframe is true.completion_on_uframe
    assert "fitted from" in fitted.sources["completion_latency_us"]
    off = deviations(measured, replayed)
    assert len(off) == 6 and max(abs(d) for d in off.values()) <= CURVE_SHARE, off


@pytest.mark.bench
@pytest.mark.parametrize("name", builtin_profiles())
def test_fit_recovers_every_shipped_profile_and_replays_it(name, tmp_path, capsys):
    plan = ["--direction", "in,out", "--lengths", "512..256K", "--queue-depth", "1,4"]
    measured, replayed, fitted, report, seconds = round_trip(name, plan, tmp_path, capsys)
    true = load_profile(name)
    off = deviations(measured, replayed)
    worst = max(off, key=lambda k: abs(off[k]))
    with capsys.disabled():
        print(f"\n== fit of a sim:usb2 sweep of {name} ({len(off)} points): sweep "
              f"{seconds[0]:.0f} s, fit {seconds[1]:.1f} s, replay {seconds[2]:.0f} s")
        for key in ("max_bulk_in_per_uframe", "max_bulk_out_per_uframe",
                    "inter_transaction_gap_ns", "completion_latency_us", "resubmit_latency_us",
                    "completion_on_uframe"):
            print(f"  {key:26s} true {getattr(true, key)!s:>7}  fitted "
                  f"{getattr(fitted, key)!s:>7}")
        print(f"  replay vs measured: worst {100 * off[worst]:+.2f} % at {worst}")
        print(report)
    assert fitted.max_bulk_in_per_uframe == true.max_bulk_in_per_uframe
    assert fitted.max_bulk_out_per_uframe == true.max_bulk_out_per_uframe
    assert fitted.completion_on_uframe is true.completion_on_uframe
    for key in ("completion_latency_us", "resubmit_latency_us"):
        value, expected = getattr(fitted, key), getattr(true, key)
        assert abs(value - expected) <= max(LATENCY_SHARE * expected, LATENCY_FLOOR_US), key
    assert abs(off[worst]) <= CURVE_SHARE, off
