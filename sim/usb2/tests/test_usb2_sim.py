"""USB2 simulation tests: the cocotb suite (usb2_cocotb.py) and the sim:usb2 Transport.

The model is built once per run (session fixture); the cocotb suite runs in one simulator
process and each of its tests is reported here as its own pytest case.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from busprobe.model.usb2 import usb2_ceiling
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.cocotb_suite import run_cocotb_suite
from busprobe.targets import open_transport

HERE = Path(__file__).resolve().parent
COCOTB_MODULE = "usb2_cocotb"
COCOTB_TESTS = [
    "enumeration_reports_busprobe_descriptors",
    "in_data_equals_counter_pattern_across_transfers",
    "in_data_equals_prbs31_pattern_across_transfers",
    "out_pattern_accepted_and_one_corrupt_word_counted_once",
    "data_toggles_alternate_across_transfers",
    "in_short_packet_ends_transfer_not_multiple_of_512",
    "in_zlp_ends_transfer_multiple_of_512",
    "out_short_packet_ends_transfer_not_multiple_of_512",
    "out_zlp_ends_transfer_multiple_of_512",
    "ideal_host_sees_no_naks_over_128_back_to_back_packets",
    "loopback_returns_every_byte_and_packet_boundary_the_host_sent",
    "bus_reset_mid_transfer_then_reenumeration_and_clean_transfer",
    "hostile_bus_packets_dropped_counted_and_device_recovers",
    "control_read_with_bulk_acks_between_its_stages_returns_every_byte",
    "descriptor_read_with_bulk_acks_between_its_stages_returns_every_byte",
]


def run_cocotb(model: Path, out: Path, testcases: list[str] | None = None,
               env: dict[str, str] | None = None) -> dict[str, str | None]:
    """Run cocotb tests of ``usb2_cocotb`` (all, or ``testcases``) in one simulator process;
    ``{test name: failure text or None}``."""
    return run_cocotb_suite(model, out, module=COCOTB_MODULE, module_dir=HERE,
                            toplevel="usb2_sim_top", testcases=testcases, env=env)


@pytest.fixture(scope="session")
def cocotb_results(usb2_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The whole cocotb suite, run once."""
    return run_cocotb(usb2_model, tmp_path_factory.mktemp("usb2_cocotb"))


@pytest.mark.sim
@pytest.mark.parametrize("name", COCOTB_TESTS)
def test_cocotb(cocotb_results: dict, name: str) -> None:
    assert name in cocotb_results, f"{name} did not run (simulator crashed?)"
    assert cocotb_results[name] is None, cocotb_results[name]


@pytest.mark.bench
def test_hostile_bus_100k_corrupted_packets_dropped_counted_and_recovered(usb2_model: Path,
                                                                         tmp_path: Path):
    """The hostile-bus test of the suite (10,000 faults) at ten times the budget, another seed;
    the fault and drop counts are in the simulator's log."""
    name = "hostile_bus_packets_dropped_counted_and_device_recovers"
    outcome = run_cocotb(usb2_model, tmp_path, [name],
                         {"BUSPROBE_HOSTILE_PACKETS": "100000", "BUSPROBE_HOSTILE_SEED": "1313"})
    assert outcome.get(name, "did not run") is None, outcome.get(name, "did not run")


def _measure(selector: str, length: int, count: int, queue_depth: int) -> tuple[float, int]:
    with open_transport(selector) as transport:
        transport.set_pattern(Pattern.PRBS31)
        expected = PatternStream(Pattern.PRBS31)
        errors = []
        result = transport.stream("in", length, count, queue_depth,
                                  sink=lambda data: errors.append(expected.check(data).errors))
        telemetry = transport.read_telemetry()
        assert result.bytes == length * count == telemetry.device_bytes["in"]
        return result.bytes / result.seconds, sum(errors)


@pytest.mark.sim
def test_sim_transport_1mib_in_ideal_reaches_99_5_percent_of_53_248_mb_s(usb2_model: Path):
    throughput, errors = _measure("sim:usb2", 1 << 20, 2, 2)
    assert errors == 0
    assert throughput >= 0.995 * 53.248e6, f"{throughput / 1e6:.3f} MB/s"


@pytest.mark.sim
def test_sim_transport_ehci_plateau_equals_profile_ceiling(usb2_model: Path):
    throughput, errors = _measure("sim:usb2?host=ehci", 1 << 20, 2, 2)
    bus = open_transport("sim:usb2?host=ehci").bus  # not opened: no second simulator
    ceiling = usb2_ceiling(bus, "in", length=1 << 20, queue_depth=2).throughput
    assert errors == 0
    assert abs(throughput - ceiling) <= 0.01 * ceiling, \
        f"{throughput / 1e6:.3f} MB/s vs ceiling {ceiling / 1e6:.3f}"
