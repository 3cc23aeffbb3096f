"""The gate-level netlist of the Versa's soft PCIe endpoint build (the netlist its bitstream is
packed from), cut at its DCU channel, trains against cocotbext-pcie's root complex, is
enumerated and configured, takes BAR0 writes and answers a stray read with UR (Verilator
simulation of yosys' netlist with the ECP5 cell models; cocotb module pcie_netlist_cocotb.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from busprobe.sim.cocotb_suite import run_cocotb_suite

HERE = Path(__file__).resolve().parent
TEST = "the_root_complex_trains_enumerates_and_writes_bar0_of_the_netlist"


@pytest.mark.sim
def test_the_versa_endpoints_netlist_trains_enumerates_and_takes_bar0_writes(tmp_path):
    from busprobe.sim.netlist.pcie import MODULE, build_pcie_netlist_simulator

    model = build_pcie_netlist_simulator()
    results = run_cocotb_suite(model, tmp_path, module="pcie_netlist_cocotb", module_dir=HERE,
                               toplevel=MODULE, testcases=[TEST],
                               figures_env="BUSPROBE_NETLIST_PCIE_FIGURES",
                               log_file=str(tmp_path / "sim.log"))
    assert TEST in results, f"{TEST} did not run (simulator crashed?)"
    assert results[TEST] is None, results[TEST]
