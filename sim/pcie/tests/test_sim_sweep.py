"""``busprobe sweep`` on ``sim:pcie`` end to end: CLI -> sweep engine -> real driver -> simulated
gateware, and the figures against the closed-form ceiling model (busprobe.model).

The small versions run in ``make test``; the full ones (1 MiB transfers, reads, a chipset cap)
are ``bench``.
"""

import json

import pytest
from busprobe.cli import main
from busprobe.model.ceiling import ceiling_for
from busprobe.results import ceilings_of
from busprobe.transport import BusDescription

MiB = 1 << 20


def sweep(capfd, device, *args):
    """Run the CLI with ``--json -``; stdout must be nothing but the JSON document."""
    status = main(["sweep", "--device", device, "--no-progress", "--json", "-", *args])
    out, err = capfd.readouterr()
    assert status == 0, err
    return json.loads(out)


def model(result, point, direction):
    bus = BusDescription(**{**result["bus"], "mps": point["mps"] or result["bus"]["mps"],
                            "mrrs": point["mrrs"] or result["bus"]["mrrs"]})
    return ceiling_for(bus, direction).throughput


def by_mps(result, direction):
    return {p["mps"]: p for p in result["points"] if p["direction"] == direction}


def report(capfd, point, expected):
    """One line per point for ``make bench`` (-s) logs."""
    with capfd.disabled():
        print(f"{point['direction']} {point['length']} B mps={point['mps']} mrrs={point['mrrs']}: "
              f"{point['throughput'] / 1e6:.2f} MB/s host-timed, "
              f"{(point['device_throughput'] or 0) / 1e6:.2f} MB/s device-timed, "
              f"reference {expected / 1e6:.2f} MB/s ({point['throughput'] / expected:.2%}), "
              f"errors {point['errors']}, "
              f"backpressure {point['telemetry'].get('backpressure_cycles')}")


def check_write_sweep(capfd, result, tolerance):
    points = by_mps(result, "write")
    assert sorted(points) == [128, 256, 512]
    for mps, point in points.items():
        report(capfd, point, model(result, point, "write"))
        assert point["errors"] == 0
        assert point["telemetry"]["max_payload_size"] == mps
        expected = model(result, point, "write")
        assert point["throughput"] == pytest.approx(expected, rel=tolerance), (mps, expected)
    assert points[256]["throughput"] > points[128]["throughput"]


@pytest.mark.sim
def test_write_sweep_over_mps_follows_the_model(capfd):
    result = sweep(capfd, "sim:pcie?gen=2&width=1", "--direction", "write",
                   "--mps", "128,256,512", "--lengths", "32K")
    check_write_sweep(capfd, result, 0.03)


@pytest.mark.bench
def test_write_sweep_over_mps_1m_follows_the_model(capfd):
    result = sweep(capfd, "sim:pcie?gen=2&width=1", "--direction", "write",
                   "--mps", "128,256,512", "--lengths", "1M")
    check_write_sweep(capfd, result, 0.03)


@pytest.mark.sim
def test_reads_with_mrrs_512_follow_the_model(capfd):
    result = sweep(capfd, "sim:pcie?gen=2&width=1&mps=256", "--direction", "read",
                   "--mrrs", "512", "--lengths", "32K")
    (point,) = result["points"]
    assert point["errors"] == 0 and point["telemetry"]["max_request_size"] == 512
    assert point["throughput"] == pytest.approx(model(result, point, "read"), rel=0.05)


@pytest.mark.bench
def test_reads_with_mrrs_512_1m_follow_the_model(capfd):
    result = sweep(capfd, "sim:pcie?gen=2&width=1&mps=256", "--direction", "read",
                   "--mrrs", "512", "--lengths", "1M")
    (point,) = result["points"]
    report(capfd, point, model(result, point, "read"))
    assert point["errors"] == 0
    assert point["throughput"] == pytest.approx(model(result, point, "read"), rel=0.05)


@pytest.mark.sim
@pytest.mark.parametrize("length", [
    # 256K: the most the simulated SoC's published buffer holds for a device-run.
    "64K", pytest.param("256K", marks=pytest.mark.bench)])
def test_chipset_cap_sets_the_plateau_with_backpressure_run_by_host_and_by_firmware(capfd,
                                                                                    length):
    """Behind a capped chipset the host-run and the device-run (the SoC's firmware queueing
    the descriptors itself) agree: the verdict is upstream-limited, not the driver."""
    cap = 290 * MiB
    result = sweep(capfd, f"sim:pcie?gen=2&width=1&mps=256&cap={cap}", "--direction", "write",
                   "--lengths", length)
    (point,) = result["points"]
    report(capfd, point, cap)
    assert point["errors"] == 0
    assert point["throughput"] == pytest.approx(cap, rel=0.03)
    assert point["telemetry"]["backpressure_cycles"] > 0
    assert point["device_run_throughput"] == pytest.approx(point["throughput"], rel=0.03)
    assert point["device_run"]["errors"] == 0
    (ceiling,) = ceilings_of(result)
    assert ceiling["verdict"] == "upstream-limited", ceiling["explanation"]
    assert "the chipset or the path upstream" in ceiling["explanation"]
    with capfd.disabled():
        print(f"cap {cap / 1e6:.1f} MB/s: host-run {point['throughput'] / 1e6:.1f}, device-run "
              f"{point['device_run_throughput'] / 1e6:.1f} MB/s: {ceiling['verdict']}")
