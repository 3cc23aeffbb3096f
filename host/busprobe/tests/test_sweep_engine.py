"""The sweep engine against the in-process loopback device (conftest.py)."""

import pytest
from busprobe.protocol.patterns import Pattern
from busprobe.sweep import Sweep, SweepPlan
from busprobe.transport import DeviceGone, InvalidRequest


def _plan(**kw):
    base = dict(directions=("in", "out"), lengths=(512, 4096), queue_depths=(1, 4), repeat=3)
    base.update(kw)
    return SweepPlan(**base)


def test_clean_sweep_measures_every_point_with_the_devices_throughput(loopback_factory,
                                                                      loopback_throughput):
    expected_throughput = loopback_throughput
    Loopback, _ = loopback_factory
    transport = Loopback()
    points = Sweep(transport, _plan()).run()
    assert [(p.spec.direction, p.spec.queue_depth, p.spec.length) for p in points] == [
        (d, q, n) for d in ("in", "out") for q in (1, 4) for n in (512, 4096)]
    for p in points:
        j = p.to_json()
        assert j["errors"] == 0 and j["repeats"] == 3
        assert j["throughput"] == pytest.approx(expected_throughput(p.spec.length,
                                                                    p.spec.queue_depth))
        assert j["device_throughput"] == pytest.approx(40e6)
        # max(min_transfers, min_bytes / length) transfers per repeat
        assert j["transfers"] == max(2, (16 << 10) // p.spec.length)
        assert j["bytes"] == j["transfers"] * p.spec.length
    assert points[0].to_json()["throughput"] < points[2].to_json()["throughput"]  # qd hides cost


def test_telemetry_is_cleared_before_and_read_after_every_repeat(loopback_factory):
    Loopback, _ = loopback_factory
    transport = Loopback()
    Sweep(transport, _plan(directions=("in",), lengths=(512,), queue_depths=(1,))).run()
    assert transport.log[0] == "set_pattern COUNTER"
    body = [e for e in transport.log[1:]]
    assert body == ["clear", "stream in 512x32 qd1", "read"] * 3


def test_pattern_continues_across_points_on_both_ends(loopback_factory):
    Loopback, _ = loopback_factory
    transport = Loopback()
    points = Sweep(transport, _plan(pattern=Pattern.PRBS31, lengths=(100, 512, 1001))).run()
    # One set_pattern for the whole run, odd lengths, no errors: both ends carried the stream
    # through every transfer and point, and the device's checker saw every byte sent.
    assert transport.log.count("set_pattern PRBS31") == 1
    assert all(p.errors == 0 for p in points)
    sent = sum(3 * p.bytes_per_repeat for p in points if p.spec.direction == "out")
    assert transport._checker.offset == sent
    assert transport._source.offset == sent  # same ladder in both directions


@pytest.mark.parametrize("fault, detail", [
    ("corrupt_in", "mismatched_words"), ("drop_in", "lost_bytes"),
    ("duplicate_in", "lost_bytes"), ("corrupt_out", "device_errors"),
    ("device_overcount", "device_byte_mismatch"),
])
def test_faults_are_counted_flagged_and_do_not_spill_into_later_points(loopback_factory,
                                                                        fault, detail):
    Loopback, Faults = loopback_factory
    faults = Faults()
    # stream call 1 = second repeat of the first point of its direction
    getattr(faults, fault).add(1 if fault != "corrupt_out" else 3 * 3 + 1)  # 9 IN calls first
    transport = Loopback(faults=faults)
    points = Sweep(transport, _plan(queue_depths=(1,), lengths=(512, 4096, 8192))).run()
    bad = [p for p in points if p.errors]
    assert len(bad) == 1, [p.to_json()["error_detail"] for p in points]
    j = bad[0].to_json()
    assert j["error_detail"][detail] > 0
    if detail in ("mismatched_words", "device_errors"):
        assert j["error_detail"]["first_error_offset"] is not None
    if detail == "device_byte_mismatch":
        assert j["errors"] == j["error_detail"]["device_byte_mismatch"] == 100
    assert transport.log.count("set_pattern COUNTER") == 2  # restarted after the bad point


def test_single_flipped_byte_counts_one_word_at_its_offset(loopback_factory):
    Loopback, Faults = loopback_factory
    faults = Faults(corrupt_in={0})
    points = Sweep(Loopback(faults=faults), _plan(directions=("in",), lengths=(512,),
                                                  queue_depths=(1,))).run()
    detail = points[0].to_json()["error_detail"]
    assert detail["mismatched_words"] == 1 and detail["lost_bytes"] == 0
    assert detail["first_error_offset"] == 256


def test_points_survive_the_device_going_away(loopback_factory):
    Loopback, Faults = loopback_factory
    sweep = Sweep(Loopback(faults=Faults(gone_at=7)), _plan(queue_depths=(1,)))
    with pytest.raises(DeviceGone):
        sweep.run()
    assert len(sweep.points) == 2  # 3 repeats per point: calls 0-5 finished two points


def test_fewer_than_three_repeats_or_an_empty_plan_is_refused():
    with pytest.raises(ValueError, match="at least 3"):
        _plan(repeat=2)
    with pytest.raises(ValueError, match="no lengths"):
        _plan(lengths=())


def test_plan_is_validated_by_the_transport_before_anything_runs(loopback_factory):
    Loopback, _ = loopback_factory
    transport = Loopback()
    with pytest.raises(InvalidRequest, match="direction 'write'"):
        _plan(directions=("in", "write")).validate(transport)
    assert transport.calls == 0


def test_settings_are_applied_per_value_through_configure(loopback_factory):
    Loopback, _ = loopback_factory
    sweep = Sweep(Loopback(), _plan(settings=({"mps": 128},)))
    with pytest.raises(InvalidRequest, match="cannot set mps"):
        sweep.run()


def test_tiny_transfers_are_capped_by_count_not_run_to_the_byte_volume(loopback_factory):
    Loopback, _ = loopback_factory
    transport = Loopback()
    transport.max_transfers = 100
    point = Sweep(transport, _plan(directions=("in",), lengths=(1,), queue_depths=(4,))).run()[0]
    j = point.to_json()
    assert (j["transfers"], j["bytes"], j["sized_by"]) == (100, 100, "transfers")
    assert j["errors"] == 0


def test_a_point_is_capped_by_the_bus_time_the_ceiling_model_expects(loopback_factory):
    from busprobe.sweep import model_ceiling

    Loopback, _ = loopback_factory
    transport = Loopback()
    transport.max_bus_seconds = 50e-6
    rate, _ = model_ceiling(transport.bus, "in", 512, 1)
    expected = int(50e-6 * rate / 512)
    assert transport.min_transfers < expected < (16 << 10) // 512
    j = Sweep(transport, _plan(directions=("in",), lengths=(512,), queue_depths=(1,))).run()[0] \
        .to_json()
    assert (j["transfers"], j["sized_by"]) == (expected, "bus time")


def test_the_minimum_count_and_the_queue_depth_win_over_the_volume_caps(loopback_factory):
    Loopback, _ = loopback_factory
    transport = Loopback()
    transport.max_bus_seconds = 1e-9  # the bus-time cap alone would allow no transfer at all
    j = Sweep(transport, _plan(directions=("in",), lengths=(4096,), queue_depths=(1, 8))).run()
    assert [(p.transfers, p.sized_by) for p in j] == [(transport.min_transfers, "transfers"),
                                                      (8, "queue depth")]
    assert [p.to_json()["queue_depth_in_force"] for p in j] == [1, 8]
    transport.max_transfers = 5  # ...but nothing exceeds the absolute cap
    j = Sweep(transport, _plan(directions=("in",), lengths=(4096,), queue_depths=(8,))).run()
    assert (j[0].transfers, j[0].to_json()["queue_depth_in_force"]) == (5, 5)


def test_a_point_moves_at_least_the_bus_time_the_transport_asks_for(loopback_factory):
    from busprobe.sweep import model_ceiling

    Loopback, _ = loopback_factory
    transport = Loopback()
    transport.min_bus_seconds = 1e-3
    transport.max_transfers = 1 << 20
    rate, _ = model_ceiling(transport.bus, "in", 512, 1)
    expected = -(-1e-3 * rate // 512)
    assert expected > (16 << 10) // 512  # more than the byte volume alone would move
    j = Sweep(transport, _plan(directions=("in",), lengths=(512,), queue_depths=(1,))).run()[0]
    assert (j.transfers, j.sized_by) == (int(expected), "bus time")


def test_a_repeat_that_lost_data_flags_its_point_and_the_sweep_goes_on(loopback_factory):
    Loopback, Faults = loopback_factory
    transport = Loopback(faults=Faults(lose_repeat={1}))
    plan = _plan(directions=("in",), lengths=(512, 4096), queue_depths=(1,))
    points = Sweep(transport, plan).run()
    bad, good = points
    assert len(bad.samples) == 2 and bad.failed_repeats == [
        "sim:loop: a read lost data on the link (1 completion timeout); the read path was reset"]
    assert bad.lost_bytes == bad.bytes_per_repeat and bad.errors == bad.bytes_per_repeat
    assert bad.to_json()["error_detail"]["failed_repeats"] == bad.failed_repeats
    # The repeat after the failure and the next point start from a restarted pattern: clean.
    assert bad.mismatched_words == 0 and good.errors == 0
    assert transport.log.count("set_pattern COUNTER") == 3  # start, the failure, after the point


def test_a_point_whose_every_repeat_lost_data_ends_the_sweep(loopback_factory):
    from busprobe.transport import RepeatFailed

    Loopback, Faults = loopback_factory
    transport = Loopback(faults=Faults(lose_repeat={0, 1, 2}))
    sweep = Sweep(transport, _plan(directions=("in",), lengths=(512,), queue_depths=(1,)))
    with pytest.raises(RepeatFailed, match="lost data"):
        sweep.run()
    assert sweep.points == []


def test_the_device_run_is_measured_once_per_direction_and_length_beside_the_host_run(
        loopback_factory):
    """Where the device can run a direction by itself, each length is run that way once (the
    queue depth is the host's), the pattern restarts after it on both ends, and a device-run
    that fails leaves the host-run's figure standing."""
    from busprobe.transport import DeviceRunFailed, DeviceRunResult

    Loopback, _ = loopback_factory

    class SelfRunning(Loopback):
        device_run_bytes = 1 << 20

        def device_run_directions(self):
            return ("in",)

        def device_run(self, direction, length, count, pattern):
            self.log.append(f"device_run {direction} {length}x{count}")
            if length == 4096:
                raise DeviceRunFailed("device-run in 4096 B: the engine did not finish")
            return DeviceRunResult(direction, length * count, length * count / 50e6, 0.0, 0)

    transport = SelfRunning()
    points = Sweep(transport, _plan()).run()
    runs = [e for e in transport.log if e.startswith("device_run")]
    assert runs == ["device_run in 512x32", "device_run in 512x32", "device_run in 512x32",
                    "device_run in 4096x4"]  # three repeats at 512 B; 4096 B failed at once
    by_point = {(p.spec.direction, p.spec.queue_depth, p.spec.length): p.to_json()
                for p in points}
    assert by_point[("in", 1, 512)]["device_run_throughput"] == pytest.approx(50e6)
    assert by_point[("in", 4, 512)]["device_run_throughput"] == pytest.approx(50e6)
    assert "device_run_throughput" not in by_point[("in", 1, 4096)]
    assert "device_run_throughput" not in by_point[("out", 1, 512)]
    assert all(p.errors == 0 for p in points)
    # After each device-run the pattern starts over on both ends.
    assert transport.log.count("set_pattern COUNTER") == 1 + 2
