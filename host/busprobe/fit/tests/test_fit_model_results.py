"""A fit of a result the model itself generated gives the profile back.

The documents come from the model's schedule (``conftest.model_document``), so any error here is
the fit's: the search, the intervals, the start-phase ranges, the tail.
"""

from dataclasses import replace

import pytest
from busprobe.fit.fitted import fit_sweep
from busprobe.fit.report import model_deviations
from busprobe.model.usb2_hosts import builtin_profiles, load_profile

#: The issue's bar: latencies within 10 % ...
LATENCY_SHARE = 0.10
#: ... or, for the ideal host's zero, within a microsecond (under 1 % of a microframe).
LATENCY_FLOOR_US = 1.0


def close(fitted: float, true: float) -> bool:
    return abs(fitted - true) <= max(LATENCY_SHARE * true, LATENCY_FLOOR_US)


@pytest.mark.parametrize("name", builtin_profiles())
def test_fit_of_a_model_generated_ladder_recovers_the_profile(name, model_result):
    true = load_profile(name)
    fitted = fit_sweep(model_result(true))
    values = {key: v.value for key, v in fitted.values.items()}
    assert values["max_bulk_in_per_uframe"] == true.max_bulk_in_per_uframe
    assert fitted.values["max_bulk_in_per_uframe"].determined
    assert values["completion_on_uframe"] is true.completion_on_uframe
    assert close(values["completion_latency_us"], true.completion_latency_us), values
    assert close(values["resubmit_latency_us"], true.resubmit_latency_us), values
    # The true value lies in the interval the fit reports for it.
    for key, coordinate in (("completion_latency_us", "completion_us"),
                            ("resubmit_latency_us", "resubmit_us")):
        interval = fitted.intervals[coordinate]
        assert interval.low - 0.5 <= getattr(true, key) <= interval.high + 0.5, (key, interval)
    # IN only: OUT's packets per microframe is copied and said to be so.
    assert not fitted.values["max_bulk_out_per_uframe"].determined
    assert "--direction out" in fitted.values["max_bulk_out_per_uframe"].why
    # The written profile's model reproduces every point (the data came from the model).
    assert max(abs(d) for _, d in model_deviations(fitted)) < 0.005


def test_an_unusual_host_is_recovered_too(model_result):
    # Nothing like a shipped profile: 7 packets per microframe, a long completion, no resubmit.
    true = replace(load_profile("xhci"), name="odd", max_bulk_in_per_uframe=7,
                   completion_latency_us=90.0, resubmit_latency_us=5.0,
                   inter_transaction_gap_ns=1000.0)
    fitted = fit_sweep(model_result(true))
    values = {key: v.value for key, v in fitted.values.items()}
    assert values["max_bulk_in_per_uframe"] == 7
    assert values["completion_on_uframe"] is False
    assert close(values["completion_latency_us"], 90.0), values
    assert close(values["resubmit_latency_us"], 5.0), values
