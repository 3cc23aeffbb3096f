"""The busprobe PCIe core has the CSR map of busprobe.protocol.pcie on the board and in sim."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from busprobe.protocol import pcie as proto


def exported_csrs(csv_path: Path) -> dict[str, int]:
    rows = [r for r in csv.reader(csv_path.read_text().splitlines()) if r]
    return {r[1]: int(r[2], 16) for r in rows if r[0] == "csr_register"}


def protocol_csrs() -> dict[str, int]:
    # The second word of a 64-bit CSR is a name of ours only; LiteX lists the register once.
    return {k: v for k, v in proto.CSRS.items() if not k.endswith("_table_value_word1")}


def test_artix7_board_target_exports_the_protocol_csr_map(tmp_path):
    pytest.importorskip("litex_boards")
    from busprobe.gateware.boards.pcie_target import build_pcie_target_soc
    from litex.soc.integration.builder import Builder
    from litex_boards.platforms.xilinx_ac701 import Platform

    soc = build_pcie_target_soc(Platform())
    builder = Builder(soc, output_dir=str(tmp_path), csr_csv=str(tmp_path / "csr.csv"),
                      compile_software=False, compile_gateware=False)
    builder.build(run=False)  # writes Verilog/TCL only; Vivado is not run
    assert exported_csrs(tmp_path / "csr.csv") == protocol_csrs()
