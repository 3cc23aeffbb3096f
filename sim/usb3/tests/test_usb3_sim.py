"""USB3 simulation tests: the cocotb suite (usb3_cocotb.py, usb3_duplex_cocotb.py) against the
Verilator model.

The model is built once per run (session fixture); the cocotb suite runs in one simulator
process and each of its tests is reported here as its own pytest case.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from busprobe.sim.cocotb_suite import run_cocotb_suite

HERE = Path(__file__).resolve().parent
#: The cocotb modules, run in one simulator process: single streams and the link, then both
#: lanes busy (IN and OUT at once, loopback).
COCOTB_MODULES = ["usb3_cocotb", "usb3_duplex_cocotb"]
COCOTB_TESTS = [
    "device_trains_to_u0",
    "enumeration_reads_superspeed_descriptors_and_info",
    "bulk_in_1mib_ideal_host_at_the_model_ceiling_every_byte_checked",
    "bulk_out_1mib_ideal_host_at_the_model_ceiling_every_byte_checked",
    "lengths_not_multiples_of_1024_and_exact_multiples_both_ways",
    "zero_length_out_packet_is_acknowledged_once_and_the_next_transfer_flows",
    "burst_window_of_one_packet_runs_at_the_round_trip_bound",
    "corrupted_header_crc_is_lbad_then_retried_no_data_lost",
    "device_ack_tp_corrupted_on_the_wire_is_lbad_then_resent_no_data_lost",
    "corrupted_out_payload_crc_is_retried_no_data_lost_or_duplicated",
    "slow_header_credit_return_stalls_the_device_and_loses_nothing",
    "link_commands_and_blocks_queued_by_two_coroutines_in_one_cycle_all_go_out",
    "vl805_in_streams_with_telemetry_requests_between_stay_in_u0_every_byte_checked",
    "chapter9_requests_answered_as_usb_3_2_requires_in_every_state",
    "halted_superspeed_endpoints_stall_and_clear_feature_restarts_the_sequence",
    "in_and_out_at_once_each_direction_at_the_dual_simplex_bound",
    "loopback_1mib_ideal_host_at_the_model_ceiling_every_byte_checked_both_ways",
    "loopback_odd_lengths_every_queue_depth_and_set_data_mode_flushes_both_ways",
]
#: Too long for the normal suite: 100 ms of Warm Reset LFPS is 12.5 M cycles (~50 s); every
#: shipped host profile both ways. The two 1 MiB streams run again here for their printed
#: figures (MB/s, wall time, simulated cycles per second).
BENCH_TESTS = [
    "warm_reset_mid_transfer_then_training_enumeration_and_a_clean_transfer",
    "host_profiles_shape_the_throughput",
    "bulk_in_1mib_ideal_host_at_the_model_ceiling_every_byte_checked",
    "bulk_out_1mib_ideal_host_at_the_model_ceiling_every_byte_checked",
]


def run_cocotb(model: Path, out: Path, testcases: list[str] | None = None
               ) -> tuple[dict[str, str | None], list[dict]]:
    """Run tests of :data:`COCOTB_MODULES` in one simulator process: ``({test: failure or
    None}, [figures recorded])``."""
    figures = out / "figures.jsonl"
    outcome = run_cocotb_suite(model, out, module=COCOTB_MODULES, module_dir=HERE,
                               toplevel="usb3_sim_top", testcases=testcases,
                               env={"BUSPROBE_USB3_FIGURES": str(figures)},
                               log_file=str(out / "sim.log"))
    recorded = [json.loads(line) for line in figures.read_text().splitlines()] \
        if figures.exists() else []
    return outcome, recorded


@pytest.fixture(scope="session")
def cocotb_results(usb3_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The cocotb suite (without :data:`BENCH_TESTS`), run once."""
    return run_cocotb(usb3_model, tmp_path_factory.mktemp("usb3_cocotb"), COCOTB_TESTS)[0]


@pytest.mark.sim
@pytest.mark.parametrize("name", COCOTB_TESTS)
def test_cocotb(cocotb_results: dict, name: str) -> None:
    assert name in cocotb_results, f"{name} did not run (simulator crashed?)"
    assert cocotb_results[name] is None, cocotb_results[name]


@pytest.mark.bench
@pytest.mark.parametrize("name", BENCH_TESTS)
def test_cocotb_bench(usb3_model: Path, tmp_path: Path, name: str) -> None:
    outcome, figures = run_cocotb(usb3_model, tmp_path, [name])
    print(figures)
    assert outcome.get(name, "did not run") is None, outcome.get(name, "did not run")
