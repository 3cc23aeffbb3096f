"""The SuperSpeed verdict names the limit from the device's counters and the host profile."""

import pytest
from busprobe.model import link_ceiling
from busprobe.protocol import usb3
from busprobe.transport import BusDescription
from busprobe.verdict import assess


def result(direction: str, fraction: float, burst: int = 16, **counters: int) -> dict:
    """One 1 MiB point at ``fraction`` of the link model, with SuperSpeed telemetry."""
    bus = BusDescription("usb3-ss", "super", host_profile="ideal", max_packet_size=1024,
                         extra={"max_burst": burst})
    rate = fraction * link_ceiling(bus, direction).throughput
    telemetry = dict(usb3.unpack_telemetry(usb3.pack_telemetry(
        {f"{direction}_bytes": 1 << 20, f"{direction}_packets": 1024, "data_intervals": 18,
         f"{direction}_window_start_interval": 1, f"{direction}_window_end_interval": 17,
         **counters})))
    point = {"direction": direction, "length": 1 << 20, "queue_depth": 2, "throughput": rate,
             "device_throughput": rate, "telemetry": telemetry, "errors": 0}
    return {"bus": bus.to_json(), "points": [point]}


@pytest.mark.parametrize("direction", ["in", "out"])
def test_at_the_link_model_it_is_link_limited(direction):
    [entry] = assess(result(direction, 0.995, in_nump_max=16, out_nump_min=16))
    assert entry["verdict"] == "link-limited" and entry["profile"] == "ideal"


def test_a_one_packet_nump_window_is_the_hosts_with_the_round_trip_as_evidence():
    [entry] = assess(result("in", 0.92, burst=1, in_nump_max=1))
    assert entry["verdict"] == "host-limited"
    assert "at most 1 packet per ACK TP (NumP window) where the device offers 16" in \
        entry["explanation"]
    assert "latency bound" in entry["explanation"] and entry["evidence"]["window_max"] == 1


def test_out_packets_one_at_a_time_while_the_device_has_room_is_the_hosts():
    [entry] = assess(result("out", 0.93, burst=1, out_nump_min=15, out_burst_max=31))
    assert entry["verdict"] == "host-limited"
    assert "room for at least 15 packets" in entry["explanation"]
    assert "sent 1 packet before waiting" in entry["explanation"]


def test_a_device_that_was_not_ready_is_named_loudly():
    [entry] = assess(result("in", 0.8, in_nump_max=16, in_nrdys=40))
    assert entry["verdict"] == "device-limited" and "must never happen" in entry["explanation"]
