"""The real PCIe driver behind a hostile simulated root complex (issue 13, host side).

The simulator's root complex is made hostile over the RPC (``faults``: each real completion
becomes a fault, or gets a stray next to it, at a rate). A read that loses data must raise
:class:`ReadPathFailed` naming the fault, after which the device reads and writes clean again;
strays must show in the point: in its errors and in its telemetry's ``link_errors``.
"""

import pytest
from busprobe.backends.pcie.driver import ReadPathFailed
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sweep import Sweep, SweepPlan
from busprobe.targets import open_transport

GEN2 = "sim:pcie?gen=2&width=1&mps=256&mrrs=512"


@pytest.fixture(scope="module")
def pcie():
    with open_transport(GEN2) as transport:
        yield transport


def faults(transport, fault_rate=0.0, stray_rate=0.0, fatal=None, stray=None, seed=7):
    transport.platform.server.call("faults", seed, fault_rate, stray_rate, fatal, stray)


def clean_point(transport, direction, length=8192, count=3):
    """A point of fresh streams with a well-behaved root: (host errors, device telemetry)."""
    faults(transport)
    transport.set_pattern(Pattern.PRBS31)
    source, expected = PatternStream(Pattern.PRBS31), PatternStream(Pattern.PRBS31)
    errors = []
    transport.clear_telemetry()
    result = transport.stream(direction, length, count, 2, source=source.take,
                              sink=lambda data: errors.append(expected.check(data).errors))
    assert result.bytes == length * count
    return sum(errors), transport.read_telemetry()


def raises_read_failure(transport, direction, named):
    return pytest.raises(ReadPathFailed, match=rf"read failed on {direction} transfer .*\d+ "
                                               rf"{named}.*read path reset")


@pytest.mark.sim
@pytest.mark.parametrize(("fault", "named"), [
    ("poisoned", "poisoned TLP"), ("status_ca", "UR/CA completion"),
    ("byte_count", "inconsistent completion"), ("truncated", "malformed TLP"),
    ("dropped", "completion timeout"),
])
def test_a_read_that_loses_data_raises_and_the_device_recovers(pcie, fault, named):
    # At MPS 512 each read is one completion: a dropped one can only time out (at MPS 256 the
    # second half's byte count would give the first half's loss away first).
    pcie.configure(mps=512 if fault == "dropped" else 256)
    try:
        pcie.set_pattern(Pattern.PRBS31)
        faults(pcie, fault_rate=0.2, fatal=[fault])
        with raises_read_failure(pcie, "read", named):
            pcie.stream("read", 16384, 4, 2, source=PatternStream(Pattern.PRBS31).take)
    finally:
        pcie.configure(mps=256)
    host_errors, tel = clean_point(pcie, "read")
    assert host_errors == 0 and tel.errors["read"] == 0 and tel.raw["link_errors"] == {}


@pytest.mark.sim
def test_a_loopback_that_loses_data_raises_and_both_directions_recover(pcie):
    pcie.set_pattern(Pattern.PRBS31)
    faults(pcie, fault_rate=0.2, fatal=["overlong"])
    with raises_read_failure(pcie, "loopback", "malformed TLP"):
        pcie.stream("loopback", 16384, 4, 2, source=PatternStream(Pattern.PRBS31).take,
                    sink=lambda data: None)
    for direction in ("loopback", "write"):
        host_errors, tel = clean_point(pcie, direction)
        assert host_errors == 0 and tel.errors[direction] == 0


@pytest.mark.sim
def test_strays_harm_no_data_but_are_the_points_errors(pcie):
    faults(pcie, stray_rate=0.5, seed=3)
    injected = pcie.platform.server.call("faults_injected")
    pcie.set_pattern(Pattern.COUNTER)
    pcie.clear_telemetry()
    result = pcie.stream("read", 8192, 3, 2, source=PatternStream(Pattern.COUNTER).take)
    tel = pcie.read_telemetry()
    now = pcie.platform.server.call("faults_injected")
    strays = sum(now.values()) - sum(injected.values())
    assert result.bytes == 8192 * 3 and tel.raw["checked_bytes"] == 8192 * 3
    assert strays > 5 and sum(tel.raw["link_errors"].values()) == strays
    assert tel.errors["read"] == strays and tel.raw["pattern_errors"] == 0
    clean_point(pcie, "read")


@pytest.mark.sim
def test_a_swept_point_with_strays_is_flagged_with_its_counts(pcie):
    faults(pcie, stray_rate=0.3, stray=["unknown_tag", "fragment"], seed=5)
    sweep = Sweep(pcie, SweepPlan(directions=("read",), lengths=(4096,), queue_depths=(2,)))
    (point,) = sweep.run()
    doc = point.to_json()
    counts = doc["telemetry"]["link_errors"]
    assert set(counts) <= {"rd_cpl_unexpected", "rx_malformed"} and counts
    assert doc["errors"] >= sum(counts.values()) > 0
    assert doc["error_detail"]["mismatched_words"] == doc["error_detail"]["lost_bytes"] == 0
    clean_point(pcie, "read")
