"""The busprobe PCIe core has the CSR map of busprobe.protocol.pcie on the board and in sim."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from busprobe.gateware.pcie.csr_export import csr_map_of


def committed_map() -> dict:
    return json.loads((resources.files("busprobe.protocol") / "pcie_csr_map.json").read_text())


def test_artix7_board_target_exports_the_protocol_csr_map(tmp_path):
    pytest.importorskip("litex_boards")
    from busprobe.gateware.boards.pcie_target import build_pcie_target_soc
    from litex.soc.integration.builder import Builder
    from litex_boards.platforms.xilinx_ac701 import Platform

    soc = build_pcie_target_soc(Platform())
    builder = Builder(soc, output_dir=str(tmp_path), csr_json=str(tmp_path / "csr.json"),
                      compile_software=False, compile_gateware=False)
    builder.build(run=False)  # writes Verilog/TCL only; Vivado is not run
    assert csr_map_of(tmp_path / "csr.json") == committed_map()


def test_the_cpus_memory_map_is_the_socs_contract():
    """LiteX placed ROM, SRAM and the CSRs where busprobe.protocol.pcie_soc says (the firmware's
    header takes them from the export)."""
    from busprobe.protocol import pcie_soc

    memories = committed_map()["memories"]
    assert memories["rom"] == {"base": pcie_soc.ROM_BASE, "size": pcie_soc.ROM_SIZE}
    assert memories["sram"] == {"base": pcie_soc.SRAM_BASE, "size": pcie_soc.SRAM_SIZE}
    assert memories["csr"]["base"] == pcie_soc.CSR_BASE
