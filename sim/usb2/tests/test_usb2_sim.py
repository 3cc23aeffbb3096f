"""USB2 simulation tests: the cocotb suite (usb2_cocotb.py) and the sim:usb2 Transport.

Each model is built once per run (session fixtures): the lean default design runs the core
tests, the full design (BOT, packet-shape and receive-drop counters) the tests of its counters.
Each suite runs in one simulator process and each of its tests is reported here as its own
pytest case.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from busprobe.model.usb2 import usb2_ceiling
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.cocotb_suite import run_cocotb_suite
from busprobe.targets import open_transport
from busprobe.targets.sim_usb2 import DESIGN_FEATURES

HERE = Path(__file__).resolve().parent
COCOTB_MODULE = "usb2_cocotb"
#: Both builds: what GET_INFO says, BOT and the counters it names.
FEATURES_TEST = "get_info_names_the_builds_features_and_bot_needs_the_framer"
#: Both builds: the chapter 9 request matrix (one EP0 handler, different replies) and
#: SET_DATA_MODE discarding buffered data (different data paths).
CHAPTER9_TESTS = [
    "chapter9_requests_answered_as_the_specification_requires_in_every_state",
    "set_data_mode_discards_what_is_buffered_in_both_directions",
]
#: On the lean default design: everything the core does.
COCOTB_TESTS = [
    FEATURES_TEST,
    *CHAPTER9_TESTS,
    "halted_bulk_endpoints_stall_every_token_until_cleared_then_restart_at_data0",
    "mod63_mode_sends_usbtests_pattern_and_takes_out_data",
    "enumeration_reports_busprobe_descriptors",
    "in_data_equals_counter_pattern_across_transfers",
    "in_data_equals_prbs31_pattern_across_transfers",
    "out_pattern_accepted_and_one_corrupt_word_counted_once",
    "data_toggles_alternate_across_transfers",
    "ideal_host_sees_no_naks_over_128_back_to_back_packets",
    "loopback_returns_every_byte_and_packet_boundary_the_host_sent",
    "bus_reset_mid_transfer_then_reenumeration_and_clean_transfer",
    "control_read_with_bulk_acks_between_its_stages_returns_every_byte",
    "descriptor_read_with_bulk_acks_between_its_stages_returns_every_byte",
]
#: On the full design: the packet-shape counters (how each transfer ended) and the drop
#: counters under a hostile bus.
FULL_COCOTB_TESTS = [
    FEATURES_TEST,
    *CHAPTER9_TESTS,
    "in_short_packet_ends_transfer_not_multiple_of_512",
    "in_zlp_ends_transfer_multiple_of_512",
    "out_short_packet_ends_transfer_not_multiple_of_512",
    "out_zlp_ends_transfer_multiple_of_512",
    "hostile_bus_packets_dropped_counted_and_device_recovers",
]


def run_cocotb(model: Path, out: Path, design: str, testcases: list[str],
               env: dict[str, str] | None = None) -> dict[str, str | None]:
    """Run ``testcases`` of ``usb2_cocotb`` on the model of sim ``design`` in one simulator
    process; ``{test name: failure text or None}``."""
    features = {"BUSPROBE_USB2_FEATURES": str(int(DESIGN_FEATURES[design]))}
    return run_cocotb_suite(model, out, module=COCOTB_MODULE, module_dir=HERE,
                            toplevel="usb2_sim_top", testcases=testcases,
                            env={**features, **(env or {})})


@pytest.fixture(scope="session")
def cocotb_results(usb2_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The lean design's suite, run once."""
    return run_cocotb(usb2_model, tmp_path_factory.mktemp("usb2_cocotb"), "busprobe",
                      COCOTB_TESTS)


@pytest.fixture(scope="session")
def full_cocotb_results(usb2_full_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The full design's suite, run once."""
    return run_cocotb(usb2_full_model, tmp_path_factory.mktemp("usb2_full_cocotb"), "full",
                      FULL_COCOTB_TESTS)


def _passed(results: dict, name: str) -> None:
    assert name in results, f"{name} did not run (simulator crashed?)"
    assert results[name] is None, results[name]


@pytest.mark.sim
@pytest.mark.parametrize("name", COCOTB_TESTS)
def test_cocotb(cocotb_results: dict, name: str) -> None:
    _passed(cocotb_results, name)


@pytest.mark.sim
@pytest.mark.parametrize("name", FULL_COCOTB_TESTS)
def test_cocotb_full(full_cocotb_results: dict, name: str) -> None:
    _passed(full_cocotb_results, name)


@pytest.mark.bench
def test_hostile_bus_100k_corrupted_packets_dropped_counted_and_recovered(usb2_full_model: Path,
                                                                         tmp_path: Path):
    """The hostile-bus test of the suite (10,000 faults) at ten times the budget, another seed;
    the fault and drop counts are in the simulator's log."""
    name = "hostile_bus_packets_dropped_counted_and_device_recovers"
    outcome = run_cocotb(usb2_full_model, tmp_path, "full", [name],
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
