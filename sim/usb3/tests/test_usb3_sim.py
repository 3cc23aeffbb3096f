"""USB3 simulation tests: the cocotb suite (usb3_cocotb.py) against the Verilator model.

The model is built once per run (session fixture); the cocotb suite runs in one simulator
process and each of its tests is reported here as its own pytest case.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
COCOTB_MODULE = "usb3_cocotb"
COCOTB_TESTS = [
    "device_trains_to_u0",
    "enumeration_reads_superspeed_descriptors_and_info",
    "bulk_in_1mib_ideal_host_at_the_model_ceiling_every_byte_checked",
    "bulk_out_1mib_ideal_host_at_the_model_ceiling_every_byte_checked",
    "lengths_not_multiples_of_1024_and_exact_multiples_both_ways",
    "burst_window_of_one_packet_bounds_throughput",
    "corrupted_header_crc_is_lbad_then_retried_no_data_lost",
    "corrupted_out_payload_crc_is_retried_no_data_lost_or_duplicated",
    "slow_header_credit_return_stalls_the_device_and_loses_nothing",
]
#: Too long for the normal suite: 100 ms of Warm Reset LFPS is 12.5 M cycles (~50 s); every
#: shipped host profile both ways.
BENCH_TESTS = [
    "warm_reset_mid_transfer_then_training_enumeration_and_a_clean_transfer",
    "host_profiles_shape_the_throughput",
]


def run_cocotb(model: Path, out: Path, testcases: list[str] | None = None
               ) -> tuple[dict[str, str | None], list[dict]]:
    """Run tests of ``usb3_cocotb`` in one simulator process: ``({test: failure or None},
    [figures recorded])``."""
    from busprobe.sim.toolchain import apply_verilator_env
    from cocotb_tools.runner import get_runner

    apply_verilator_env()
    results = out / "results.xml"
    figures = out / "figures.jsonl"
    # The runner passes this process's sys.path as the simulator's PYTHONPATH.
    sys.path.insert(0, str(HERE))
    try:
        get_runner("verilator").test(
            test_module=COCOTB_MODULE, hdl_toplevel="usb3_sim_top", hdl_toplevel_lang="verilog",
            build_dir=str(model), test_dir=str(out), results_xml=str(results),
            testcase=testcases, log_file=str(out / "sim.log"),
            extra_env={"COCOTB_LOG_LEVEL": "WARNING", "BUSPROBE_USB3_FIGURES": str(figures)})
    except SystemExit:
        pass  # the runner exits when a test failed; the results file says which
    finally:
        sys.path.remove(str(HERE))
    outcome: dict[str, str | None] = {}
    for case in ET.parse(results).getroot().iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        text = None if failure is None else (failure.get("message") or failure.text or "failed")
        outcome[case.get("name", "").rpartition(".")[2]] = text
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
