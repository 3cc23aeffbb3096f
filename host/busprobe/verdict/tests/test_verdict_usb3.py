"""The SuperSpeed verdict names the limit from the device's counters and the host profile."""

import pytest
from busprobe.model import ceiling_for, link_ceiling
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


def uas_result(direction: str, length: int, queue_depth: int, of_engine: float) -> dict:
    """One UAS point (``sweep --protocol uas``) behind the ideal host at ``of_engine`` of the
    bound with busprobe's UAS engine."""
    bus = BusDescription("usb3-ss", "super", host_profile="ideal", max_packet_size=1024,
                         protocol="uas")
    engine = ceiling_for(bus, direction, length=length,
                         queue_depth=queue_depth).parts["busprobe_device"]
    rate = of_engine * engine
    telemetry = dict(usb3.unpack_telemetry(usb3.pack_telemetry(
        {f"{direction}_bytes": 1 << 20, f"{direction}_packets": 1024, "data_intervals": 18,
         f"{direction}_window_start_interval": 1, f"{direction}_window_end_interval": 17,
         "in_nump_max": min(16, -(-length // 1024)), "out_nump_min": 16})))
    point = {"direction": direction, "length": length, "queue_depth": queue_depth,
             "throughput": rate, "device_throughput": rate, "telemetry": telemetry,
             "errors": 0}
    return {"bus": bus.to_json(), "points": [point]}


def test_short_uas_reads_one_at_a_time_name_busprobes_own_engine_not_the_host():
    [entry] = assess(uas_result("in", 1024, 1, 0.99))
    assert entry["verdict"] == "device-limited"
    assert "busprobe's UAS engine allows" in entry["explanation"]
    assert "fills each stream's first data packet" in entry["explanation"]
    assert "set by the driver turnaround" in entry["explanation"]


def test_long_uas_commands_are_not_the_engines():
    [entry] = assess(uas_result("in", 262144, 4, 0.99))
    assert entry["verdict"] != "device-limited"


def test_a_one_packet_transfer_is_not_a_one_packet_window_of_the_hosts():
    """A 1 KiB transfer is one packet: NumP 1 is all any host could grant it."""
    bus = BusDescription("usb3-ss", "super", host_profile="ideal", max_packet_size=1024)
    doc = result("in", 0.5, in_nump_max=1)
    doc["bus"] = bus.to_json()
    doc["points"][0]["length"] = 1024
    [entry] = assess(doc)
    assert "at most 1 packet per ACK TP" not in entry["explanation"]


def test_the_bot_note_weighs_a_short_run_against_that_runs_ceiling():
    """Four 256 KiB commands a repeat: the first pays no resubmit, so the run may beat the
    steady state; the note compares it with its own run's ceiling, never reading above 100 %."""
    bus = BusDescription("usb3-ss", "super", host_profile="vl805", max_packet_size=1024,
                         protocol="bot")
    run = ceiling_for(bus, "in", length=262144, queue_depth=1, transfers=4).throughput
    steady = ceiling_for(bus, "in", length=262144, queue_depth=1).throughput
    assert run > steady
    point = {"direction": "in", "length": 262144, "queue_depth": 1, "transfers": 4,
             "throughput": 0.999 * run, "errors": 0}
    [entry] = assess({"bus": bus.to_json(), "points": [point]})
    assert "allows" in entry["explanation"] and "for a run of 4 commands" in entry["explanation"]
    assert "(the plateau is 99.9 % of it)" in entry["explanation"]
