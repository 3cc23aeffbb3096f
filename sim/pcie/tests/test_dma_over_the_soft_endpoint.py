"""busprobe's PCIe SoC on the soft endpoint's LitePCIe PHY (``SoftPCIEPHY``): cocotbext-pcie's
root complex trains and enumerates it symbol by symbol, reads busprobe's identity through BAR0,
and runs 64 KiB DMA writes and reads at MPS 128 and 256 through the core's pattern generator
and checker (Verilator simulation; cocotb module: soft_soc_cocotb.py).

One simulator process runs the three cocotb tests, each from reset; each is reported here as
its own case, and the figures (symbol times, MB/s at 2.5 GT/s, wall time) are printed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from busprobe.sim.cocotb_suite import run_cocotb_suite

HERE = Path(__file__).resolve().parent
COCOTB_TESTS = [
    "busprobe_identity_and_link_csrs_read_through_bar0",
    "dma_write_and_read_of_64_kib_at_mps_128_are_intact_and_signal_msi",
    "dma_write_and_read_of_64_kib_at_mps_256_are_intact_and_signal_msi",
]


@pytest.fixture(scope="module")
def soc_results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from busprobe.sim.pcie.symbol.soc_model import TOPLEVEL, build_soft_soc_simulator

    model = build_soft_soc_simulator()
    out = tmp_path_factory.mktemp("soft_soc")
    return run_cocotb_suite(model, out, module="soft_soc_cocotb", module_dir=HERE,
                            toplevel=TOPLEVEL, testcases=COCOTB_TESTS,
                            figures_env="BUSPROBE_SOFT_SOC_FIGURES",
                            log_file=str(out / "sim.log"))


@pytest.mark.sim
@pytest.mark.parametrize("name", COCOTB_TESTS)
def test_busprobe_soc_on_the_soft_endpoint(soc_results: dict, name: str) -> None:
    assert name in soc_results, f"{name} did not run (simulator crashed?)"
    assert soc_results[name] is None, soc_results[name]
