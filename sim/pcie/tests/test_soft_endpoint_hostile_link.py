"""The soft PCIe endpoint on a hostile link (Verilator simulation; cocotb module:
soft_link_fuzz_cocotb.py): seeded symbol faults both ways, TLPs and ACKs lost both ways and
TLPs duplicated, while a root port that replays keeps configuration requests, stray reads and
BAR0 writes going; every answer and every write must arrive once, unaltered.

The default suite injects at least 1,000 faults (one seed); ``-m bench`` 10,000 (another).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from busprobe.sim.cocotb_suite import run_cocotb_suite

HERE = Path(__file__).resolve().parent
TEST = "seeded_faults_both_ways_lose_repeat_or_corrupt_no_request_answer_or_write"


def run_fuzz(tmp_path: Path, *, seed: int, faults: int) -> dict:
    from busprobe.sim.pcie.symbol.endpoint_model import TOPLEVEL, build_soft_endpoint_simulator

    model = build_soft_endpoint_simulator()
    return run_cocotb_suite(model, tmp_path, module="soft_link_fuzz_cocotb", module_dir=HERE,
                            toplevel=TOPLEVEL, testcases=[TEST],
                            env={"BUSPROBE_FUZZ_SEED": str(seed),
                                 "BUSPROBE_FUZZ_FAULTS": str(faults)},
                            figures_env="BUSPROBE_SOFT_LINK_FUZZ_FIGURES",
                            log_file=str(tmp_path / "sim.log"))


@pytest.mark.sim
def test_a_thousand_link_faults_lose_no_answer_and_alter_no_write(tmp_path: Path) -> None:
    results = run_fuzz(tmp_path, seed=1, faults=1000)
    assert results == {TEST: None}, results


@pytest.mark.bench
def test_ten_thousand_link_faults_lose_no_answer_and_alter_no_write(tmp_path: Path) -> None:
    results = run_fuzz(tmp_path, seed=2, faults=10_000)
    assert results == {TEST: None}, results
