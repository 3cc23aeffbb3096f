"""The real PCIe driver over busprobe's soft Gen1 x1 endpoint: ``sim:pcie?phy=ecp5`` (the core
on ``SoftPCIEPHY`` in Verilator, cocotbext-pcie's root complex symbol by symbol, the server's
RPC handler over :class:`~busprobe.sim.pcie.symbol.soc_bench.SoftSocHost`)."""

import pytest
from busprobe.model.pcie import pcie_ceiling
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.targets import open_transport

SOFT = "sim:pcie?phy=ecp5&gen=1&mps=128&mrrs=512"


@pytest.fixture(scope="module")
def soft():
    with open_transport(SOFT) as transport:
        yield transport


def run(transport, direction, length, count):
    """One point of PRBS31 with fresh host streams; (result, host check, telemetry)."""
    transport.set_pattern(Pattern.PRBS31)
    source, expected = PatternStream(Pattern.PRBS31), PatternStream(Pattern.PRBS31)
    seen = {"bytes": 0, "errors": 0}

    def sink(data):
        seen["bytes"] += len(data)
        seen["errors"] += expected.check(data).errors

    transport.clear_telemetry()
    result = transport.stream(direction, length, count, 2, source=source.take, sink=sink)
    return result, seen, transport.read_telemetry()


@pytest.mark.sim
def test_the_host_driver_moves_intact_data_both_ways_over_the_soft_endpoint(soft):
    length, count = 8192, 3
    result, seen, tel = run(soft, "write", length, count)
    assert result.bytes == length * count
    assert (seen["bytes"], seen["errors"]) == (length * count, 0)
    assert tel.raw["wr_tlps"] == length * count // 128
    result, _, tel = run(soft, "read", length, count)
    assert result.bytes == length * count
    assert tel.errors["read"] == 0 and tel.raw["checked_bytes"] == length * count
    # Gen1 x1 moves 250 MB/s of symbols; more than 200 MB/s of data is past the headers.
    assert tel.device_throughput("read") > 200e6
    bus = soft.bus
    assert (bus.speed, bus.width, bus.mps, bus.mrrs) == ("gen1", 1, 128, 512)


@pytest.mark.sim
def test_configure_changes_mps_on_the_soft_endpoints_configuration_space(soft):
    try:
        soft.configure(mps=256)
        _, seen, tel = run(soft, "write", 8192, 1)
        assert tel.raw["max_payload_size"] == 256 and tel.raw["wr_tlps"] == 8192 // 256
        assert seen["errors"] == 0
    finally:
        soft.configure(mps=128)


@pytest.mark.sim
def test_host_timed_64_kib_writes_come_within_half_a_percent_of_the_gen1_model(soft):
    # The driver's MSI wait must not poll BAR0 while a transfer runs: every poll is a
    # completion, an ACK and an UpdateFC-NP on the lane the writes take (at the sweep's old
    # 20 µs slice, 40 of every 5000 symbol times: 99.0 % of this model, 99.7 % without).
    length, count = 65536, 2
    result, seen, tel = run(soft, "write", length, count)
    assert seen["errors"] == 0 and tel.raw["wr_tlps"] == length * count // 128
    model = pcie_ceiling(soft.bus, "write", length=length, queue_depth=2, transfers=count)
    assert result.bytes / result.seconds >= 0.995 * model.throughput, \
        (result.bytes / result.seconds, model.throughput)
