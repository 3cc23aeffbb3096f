"""cocotbext-pcie's root complex trains, enumerates and configures busprobe's soft PCIe
endpoint at the symbol level, and writes into its BAR0 (Verilator simulation; cocotb module:
soft_endpoint_cocotb.py).

One simulator process runs the five cocotb tests, each from reset; each is reported here as
its own case, and the figures (symbol times, requests, wall time) are printed. The endpoint's
link moves four symbols a clock, a word each way every 62.5 MHz clock (DESIGN §3.10).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from busprobe.sim.cocotb_suite import run_cocotb_suite

HERE = Path(__file__).resolve().parent
COCOTB_TESTS = [
    "root_complex_enumerates_the_soft_endpoint_sizes_bar0_enables_msi_sets_mps_mrrs",
    "config_writes_of_all_ones_to_read_only_dwords_leave_them_unchanged",
    "config_requests_to_another_function_get_unsupported_request",
    "a_completion_with_a_bad_lcrc_is_naked_by_the_root_port_and_replayed",
    "bar0_writes_reach_the_application_and_other_reads_get_unsupported_request",
]


@pytest.fixture(scope="module")
def enumeration_results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from busprobe.sim.pcie.symbol.endpoint_model import TOPLEVEL, build_soft_endpoint_simulator

    model = build_soft_endpoint_simulator()
    out = tmp_path_factory.mktemp("soft_endpoint")
    return run_cocotb_suite(model, out, module="soft_endpoint_cocotb", module_dir=HERE,
                            toplevel=TOPLEVEL, testcases=COCOTB_TESTS,
                            figures_env="BUSPROBE_SOFT_ENDPOINT_FIGURES",
                            log_file=str(out / "sim.log"))


@pytest.mark.sim
@pytest.mark.parametrize("name", COCOTB_TESTS)
def test_root_complex_on_the_soft_endpoint(enumeration_results: dict, name: str) -> None:
    assert name in enumeration_results, f"{name} did not run (simulator crashed?)"
    assert enumeration_results[name] is None, enumeration_results[name]
