"""The gate-level netlist of the Versa's PCIe SoC build (``busprobe build --board versa-ecp5-5g
--design pcie``: LitePCIe's DMA engine, busprobe's CSRs, VexRiscv and its firmware around the
soft endpoint), cut at its DCU channel, trains against cocotbext-pcie's root complex, is
enumerated with MPS 256 / MRRS 512, and moves 64 KiB each way through the DMA engine with the
data checked end to end (Verilator simulation of yosys' netlist with the ECP5 cell models;
cocotb module pcie_soc_netlist_cocotb.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from busprobe.sim.cocotb_suite import run_cocotb_suite

HERE = Path(__file__).resolve().parent
TEST = "the_soc_netlist_moves_64_kib_each_way_through_its_dma_engine"


@pytest.mark.bench
def test_the_versa_socs_netlist_moves_64_kib_each_way_by_dma(tmp_path):
    from busprobe.sim.netlist.pcie import CUTS, build_pcie_netlist_simulator

    model = build_pcie_netlist_simulator("pcie")
    results = run_cocotb_suite(model, tmp_path, module="pcie_soc_netlist_cocotb",
                               module_dir=HERE, toplevel=CUTS["pcie"].module, testcases=[TEST],
                               figures_env="BUSPROBE_NETLIST_PCIE_SOC_FIGURES",
                               log_file=str(tmp_path / "sim.log"))
    assert TEST in results, f"{TEST} did not run (simulator crashed?)"
    assert results[TEST] is None, results[TEST]
