"""The real PCIe driver against the simulated device, through the ``sim:pcie`` backend.

Every test here runs :class:`busprobe.backends.pcie.driver.PcieDmaDriver` in this process; its
register, memory and MSI operations are carried out by the Verilator model of the gateware behind
cocotbext-pcie's root complex (one simulator process per selector, shared by the tests).
"""

import pytest
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.pcie.backend import SimDmaPlatform, SimPcieTransport, completion_timeout
from busprobe.targets import describe, open_transport
from busprobe.transport import InvalidRequest, TransferTimeout

GEN2 = "sim:pcie?gen=2&width=1&mps=256&mrrs=512"


@pytest.fixture(scope="module")
def pcie():
    with open_transport(GEN2) as transport:
        yield transport


def run(transport, direction, length, count, queue_depth, pattern=Pattern.COUNTER):
    """One point with fresh host streams; returns (result, host check, telemetry)."""
    transport.set_pattern(pattern)
    source, expected = PatternStream(pattern), PatternStream(pattern)
    seen = {"bytes": 0, "errors": 0, "first": None}

    def sink(data):
        check = expected.check(data)
        seen["bytes"] += len(data)
        seen["errors"] += check.errors
        if seen["first"] is None:
            seen["first"] = check.first_error_offset

    transport.clear_telemetry()
    result = transport.stream(direction, length, count, queue_depth, source=source.take,
                              sink=sink)
    return result, seen, transport.read_telemetry()


@pytest.mark.sim
@pytest.mark.parametrize("pattern", [Pattern.COUNTER, Pattern.PRBS31])
@pytest.mark.parametrize("direction", ["write", "read", "loopback"])
def test_data_arrives_intact_in_every_direction(pcie, direction, pattern):
    # 2.5 pages + 8 bytes: three descriptors per transfer, the last one short.
    length, count = 10248, 3
    result, seen, tel = run(pcie, direction, length, count, 2, pattern)
    assert result.bytes == length * count and result.seconds > 0
    if direction in ("write", "loopback"):
        assert (seen["bytes"], seen["errors"]) == (length * count, 0)
    if direction == "read":
        assert tel.errors["read"] == 0 and tel.first_error_offset["read"] is None
        assert tel.raw["checked_bytes"] == length * count
    key = direction
    assert tel.device_bytes[key] == length * count
    assert tel.device_throughput(key) > 100e6


@pytest.mark.sim
def test_write_stream_continues_across_points_and_a_loopback(pcie):
    """The generator runs ahead into the writer FIFO; the driver keeps the host copy in step."""
    pcie.set_pattern(Pattern.PRBS31)
    expected, source = PatternStream(Pattern.PRBS31), PatternStream(Pattern.PRBS31)
    returned = PatternStream(Pattern.PRBS31)
    errors = []
    pcie.stream("write", 4096, 2, 1, sink=lambda d: errors.append(expected.check(d).errors))
    pcie.clear_telemetry()
    pcie.stream("loopback", 8192, 2, 2, source=source.take,
                sink=lambda d: errors.append(returned.check(d).errors))
    # Draining the generator's bytes out of the writer FIFO is not the point's traffic.
    assert pcie.read_telemetry().device_bytes["loopback"] == 8192 * 2
    pcie.stream("write", 8192, 3, 2, sink=lambda d: errors.append(expected.check(d).errors))
    assert errors and not any(errors)
    assert expected.offset == 4096 * 2 + 8192 * 3


@pytest.mark.sim
def test_read_checker_catches_corrupted_host_data(pcie):
    pcie.set_pattern(Pattern.COUNTER)
    stream = PatternStream(Pattern.COUNTER)

    def corrupt(n):
        data = bytearray(stream.take(n))
        data[5000] ^= 0x40
        return bytes(data)

    pcie.clear_telemetry()
    pcie.stream("read", 8192, 1, 1, source=corrupt)
    tel = pcie.read_telemetry()
    assert tel.errors["read"] == 1 and tel.first_error_offset["read"] == 5000


@pytest.mark.sim
def test_length_not_a_multiple_of_the_datapath_is_refused_before_any_dma(pcie):
    pcie.set_pattern(Pattern.COUNTER)
    pcie.clear_telemetry()
    with pytest.raises(InvalidRequest, match=r"1001 is not a positive multiple of 8 bytes"):
        pcie.stream("write", 1001, 2, 1, sink=lambda d: None)
    assert pcie.read_telemetry().raw["wr_tlps"] == 0


@pytest.mark.sim
def test_dma_timeout_aborts_and_is_reported_then_the_device_recovers(pcie):
    driver = pcie.driver
    saved = driver.timeout
    driver.timeout = lambda nbytes: 2e-6  # 2 us simulated for 256 KiB: cannot finish
    try:
        pcie.set_pattern(Pattern.COUNTER)
        with pytest.raises(TransferTimeout, match="timed out .* DMA aborted"):
            pcie.stream("write", 256 << 10, 2, 1, sink=lambda d: None)
    finally:
        driver.timeout = saved
    with pytest.raises(InvalidRequest, match="out of step"):
        pcie.stream("write", 4096, 1, 1, sink=lambda d: None)
    result, seen, _ = run(pcie, "write", 16384, 2, 2)
    assert seen == {"bytes": 32768, "errors": 0, "first": None}


@pytest.mark.sim
def test_telemetry_reports_what_the_core_negotiated(pcie):
    _, _, tel = run(pcie, "read", 16384, 2, 2)
    raw = tel.raw
    assert (raw["max_payload_size"], raw["max_request_size"]) == (256, 512)
    assert raw["rd_requests"] == 2 * 16384 // 512
    assert 1 <= raw["tag_high_water"] <= 8
    lat = raw["rd_latency_ns"]
    assert 0 < lat["min"] <= lat["mean"] <= lat["max"]
    bus = pcie.bus
    assert (bus.kind, bus.speed, bus.width, bus.mps, bus.mrrs) == ("pcie", "gen2", 1, 256, 512)


@pytest.mark.sim
def test_configure_changes_mps_as_the_core_sees_it(pcie):
    try:
        pcie.configure(mps=128)
        _, _, tel = run(pcie, "write", 8192, 1, 1)
        assert tel.raw["max_payload_size"] == 128 and tel.raw["wr_tlps"] == 8192 // 128
        assert pcie.bus.mps == 128
    finally:
        pcie.configure(mps=256)


def test_bad_selector_options_are_one_line_errors():
    with pytest.raises(InvalidRequest, match="gen='4': gen must be 1, 2 or 3"):
        open_transport("sim:pcie?gen=4")
    with pytest.raises(InvalidRequest, match=r"unknown option\(s\) speed"):
        open_transport("sim:pcie?speed=5")


def test_an_unopened_transport_is_its_description_and_configure_keeps_the_selectors_rules():
    target = describe("sim:pcie?gen=1&mrrs=1024&latency_ns=500")
    transport = SimPcieTransport(SimDmaPlatform(target))  # nothing built, nothing started
    assert transport.platform.server is None
    assert transport.bus == target.bus and transport.topology() == target.hops_json()
    with pytest.raises(InvalidRequest, match="sim:pcie option mps='300': mps must be 128, 256 or"):
        transport.configure(mps=300)
    with pytest.raises(InvalidRequest, match="cannot set rcb"):
        transport.configure(rcb=128)
    transport.configure(mps=128, mrrs=4096)
    assert (transport.bus.mps, transport.bus.mrrs) == (128, 4096)
    assert transport.bus.extra == target.bus.extra
    assert (transport.topology()[-1]["mps"], transport.topology()[-1]["mrrs"]) == (128, 4096)
    assert transport.platform.link == {**target.options, "mps": 128, "mrrs": 4096}


def test_a_slow_simulated_root_gets_a_longer_completion_timeout():
    default = describe(GEN2).options
    assert completion_timeout(default) == pytest.approx(4 * 2 * 8 * 512 / 500e6)  # 65.5 us
    assert completion_timeout({**default, "gen": 3}) == 50e-6  # the spec's least
    assert completion_timeout({**default, "latency_ns": 1e6}) > 4e-3
    assert completion_timeout({**default, "cap": 1e6}) == pytest.approx(4 * 2 * 8 * 512 / 1e6)
