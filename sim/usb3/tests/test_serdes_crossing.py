"""The SerDes crossing the ECPIX-5 build places, under clocks that differ (cocotb module:
serdes_crossing_cocotb.py).

One simulator process runs the four cocotb tests (a million symbols each way apiece); each is
reported here as its own case, and the figures (counts, fills, wall time) are printed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from busprobe.sim.cocotb_suite import run_cocotb_suite

HERE = Path(__file__).resolve().parent
COCOTB_TESTS = [
    "serdes_clock_300ppm_fast_every_symbol_once_skps_removed_on_receive_added_on_transmit",
    "serdes_clock_300ppm_slow_every_symbol_once_skps_added_on_receive_removed_on_transmit",
    "serdes_clock_5000ppm_down_spread_every_symbol_once_skps_follow_the_modulation",
    "locked_clocks_as_on_the_board_settle_once_and_never_move_a_skp",
]


@pytest.fixture(scope="module")
def crossing_results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from busprobe.sim.usb3.crossing_build import TOPLEVEL, build_crossing_simulator

    model = build_crossing_simulator()
    out = tmp_path_factory.mktemp("serdes_crossing")
    return run_cocotb_suite(model, out, module="serdes_crossing_cocotb", module_dir=HERE,
                            toplevel=TOPLEVEL, testcases=COCOTB_TESTS,
                            figures_env="BUSPROBE_CROSSING_FIGURES",
                            log_file=str(out / "sim.log"))


@pytest.mark.sim
@pytest.mark.parametrize("name", COCOTB_TESTS)
def test_crossing(crossing_results: dict, name: str) -> None:
    assert name in crossing_results, f"{name} did not run (simulator crashed?)"
    assert crossing_results[name] is None, crossing_results[name]
