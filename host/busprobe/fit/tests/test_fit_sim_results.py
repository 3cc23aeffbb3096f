"""A fit of real ``sim:usb2`` sweeps (recorded fixtures) recovers the profile each was swept with.

``tests/fixtures/results/sim_usb2_fit_{ideal,ehci,xhci}.json`` are sweeps of the simulated gateware
behind each shipped host profile (IN, lengths 512 B..64 KiB at queue depths 1 and 4;
``make_fit_fixtures.sh`` beside them says how they were made). Unlike the model-generated
documents, these carry everything the model leaves out: bit stuffing, the device's response time,
the simulated controller's own start phases.
"""

from pathlib import Path

import pytest
from busprobe.fit.fitted import fit_sweep
from busprobe.fit.report import model_deviations
from busprobe.model.usb2_hosts import builtin_profiles, load_profile

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "results"
#: The issue's bars: latencies within 10 % (or a microsecond, for the ideal host's zeros) ...
LATENCY_SHARE, LATENCY_FLOOR_US = 0.10, 1.0
#: ... and the fitted profile reproduces the measured curve within 2 %.
CURVE_SHARE = 0.02


@pytest.fixture(scope="module", params=builtin_profiles())
def fitted(request):
    name = request.param
    return name, fit_sweep(FIXTURES / f"sim_usb2_fit_{name}.json")


def test_the_fixture_is_a_sweep_of_that_profile(fitted):
    name, fit = fitted
    assert fit.data.device == f"sim:usb2?host={name}"
    assert len(fit.data.points) >= 9


def test_packets_per_microframe_and_granularity_are_exact(fitted):
    name, fit = fitted
    true = load_profile(name)
    assert fit.values["max_bulk_in_per_uframe"].value == true.max_bulk_in_per_uframe
    assert fit.values["max_bulk_in_per_uframe"].determined
    assert fit.values["completion_on_uframe"].value is true.completion_on_uframe
    assert fit.values["completion_on_uframe"].determined


def test_latencies_within_ten_percent(fitted):
    name, fit = fitted
    true = load_profile(name)
    for key in ("completion_latency_us", "resubmit_latency_us"):
        value, expected = fit.values[key].value, getattr(true, key)
        assert abs(value - expected) <= max(LATENCY_SHARE * expected, LATENCY_FLOOR_US), \
            (key, value, expected)


def test_the_fitted_profiles_model_reproduces_every_point(fitted):
    _, fit = fitted
    worst = max(abs(d) for _, d in model_deviations(fit))
    assert worst < CURVE_SHARE, model_deviations(fit)
