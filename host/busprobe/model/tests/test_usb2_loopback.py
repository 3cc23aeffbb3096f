"""The USB 2.0 loopback ceiling: both directions share each microframe."""

from dataclasses import replace

import pytest
from busprobe.model import link_ceiling
from busprobe.model.usb2_hosts import load_profile
from busprobe.model.usb2_loopback import alternating_fit, loopback_ceiling
from busprobe.transport import BusDescription


def test_the_ideal_host_returns_half_of_the_13_transactions_of_a_microframe():
    assert alternating_fit(512, 8) == 13
    ceiling = link_ceiling(BusDescription(kind="usb2-hs", speed="high"), "loopback")
    assert ceiling.throughput == pytest.approx(6.5 * 512 * 8000)   # 26.624 MB/s returned
    assert "each byte crosses the bus twice" in ceiling.formula


def test_a_profile_limit_on_one_direction_binds_what_comes_back():
    profile = replace(load_profile("ideal"), max_bulk_out_per_uframe=3)
    ceiling = loopback_ceiling(profile, 512, length=None, queue_depth=None, uframes_per_s=8000)
    assert ceiling.parts["returned_per_uframe"] == 3
    assert ceiling.throughput == pytest.approx(3 * 512 * 8000)


def test_a_shallow_queue_pays_the_round_trip_turnaround():
    profile = load_profile("ehci")
    deep = loopback_ceiling(profile, 512, length=4096, queue_depth=8, uframes_per_s=8000)
    shallow = loopback_ceiling(profile, 512, length=4096, queue_depth=1, uframes_per_s=8000)
    assert shallow.throughput < deep.throughput <= deep.parts["plateau"]
    period = shallow.parts["period"]
    assert period == pytest.approx(shallow.parts["t_cycle"])   # QD 1: the whole turnaround
