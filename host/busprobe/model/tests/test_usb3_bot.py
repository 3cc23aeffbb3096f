"""The BOT ceiling at SuperSpeed (:mod:`busprobe.model.usb3_bot` through ``usb3_ceiling``):
three transfers per command, each paying the host's turnaround."""

import pytest
from busprobe.model import ceiling_for
from busprobe.model.usb3_hosts import load_usb3_profile
from busprobe.transport import BusDescription

LENGTH = 120 << 10  # what usb-storage sends at most per command (240 sectors)


def _bus(host: str, protocol: str = "bot") -> BusDescription:
    return BusDescription(kind="usb3-ss", speed="super", host_profile=host,
                          max_packet_size=1024, protocol=protocol)


@pytest.mark.parametrize("direction", ["in", "out"])
def test_each_command_pays_the_hosts_turnaround_three_times(direction):
    profile = load_usb3_profile("vl805")
    turnaround = (profile.completion_latency_us + profile.resubmit_latency_us) * 1e-6
    bot = ceiling_for(_bus("vl805"), direction, length=LENGTH, queue_depth=1)
    stages = bot.parts["stage_seconds"]
    assert bot.parts["period"] == pytest.approx(
        stages["CBW"] + stages["data"] + stages["CSW"] + 3 * stages["resubmit"])
    # The wrappers are one short packet each: their stage is little more than the turnaround.
    for wrapper in ("CBW", "CSW"):
        assert 0 < stages[wrapper] - profile.completion_latency_us * 1e-6 < 1e-6
    streamed = ceiling_for(_bus("vl805", "stream"), direction, length=LENGTH, queue_depth=1)
    # The streamed transfer at QD 1 pays one turnaround; BOT two more and its wrappers.
    added = LENGTH / bot.throughput - LENGTH / streamed.throughput
    assert added == pytest.approx(2 * turnaround, rel=0.02)


def test_an_ideal_host_leaves_bot_within_a_fraction_of_a_percent_of_the_link():
    bot = ceiling_for(_bus("ideal"), "in", length=LENGTH, queue_depth=1)
    streamed = ceiling_for(_bus("ideal", "stream"), "in", length=LENGTH, queue_depth=1)
    assert 0.995 < bot.throughput / streamed.throughput < 1.0


def test_a_finite_run_has_no_resubmit_before_its_first_command():
    steady = ceiling_for(_bus("vl805"), "in", length=LENGTH, queue_depth=1)
    run = ceiling_for(_bus("vl805"), "in", length=LENGTH, queue_depth=1, transfers=8)
    resubmit = load_usb3_profile("vl805").resubmit_latency_us * 1e-6
    assert run.parts["run_seconds"] == pytest.approx(8 * steady.parts["period"] - resubmit)
    assert run.throughput > steady.throughput and run.parts["device_ceiling"] is None
    assert "usb3-ss link BOT" == run.model and "measured run: 8 BOT commands" in run.formula
