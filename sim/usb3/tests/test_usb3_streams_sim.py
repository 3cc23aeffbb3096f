"""Bulk streams on the SuperSpeed probe (``design=streams``): the cocotb suite
(usb3_streams_cocotb.py) against its Verilator model, in one simulator process."""

from __future__ import annotations

from pathlib import Path

import pytest
from busprobe.sim.cocotb_suite import run_cocotb_suite

HERE = Path(__file__).resolve().parent
COCOTB_TESTS = [
    "streams_advertised_and_data_moves_on_four_streams_each_way_every_byte_checked",
    "in_stream_ids_zero_or_past_max_streams_get_nrdy_are_counted_and_data_moves_on",
    "out_data_on_stream_zero_or_past_max_streams_gets_nrdy_is_counted_and_data_moves_on",
]


@pytest.fixture(scope="session")
def usb3_streams_model() -> Path:
    from busprobe.sim.usb3.simulator_build import build_usb3_simulator

    return build_usb3_simulator("streams")


@pytest.fixture(scope="session")
def streams_results(usb3_streams_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("usb3_streams_cocotb")
    return run_cocotb_suite(usb3_streams_model, out, module="usb3_streams_cocotb",
                            module_dir=HERE, toplevel="usb3_sim_top", testcases=COCOTB_TESTS,
                            log_file=str(out / "sim.log"))


@pytest.mark.sim
@pytest.mark.parametrize("name", COCOTB_TESTS)
def test_cocotb(streams_results: dict, name: str) -> None:
    assert name in streams_results, f"{name} did not run (simulator crashed?)"
    assert streams_results[name] is None, streams_results[name]
