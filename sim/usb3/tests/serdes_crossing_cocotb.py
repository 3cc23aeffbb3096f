"""cocotb tests of the SerDes crossing: a million symbols each way between clocks that differ.

The testbench (sim/hdl/serdes_crossing_tb.sv) does the per-symbol work; each test here sets the
SerDes clock's offset and spread, runs, and checks the counts: every data symbol arrived once
and in order both ways, the crossing never recentred, and it removed or added SKPs at the rate
the clocks' difference asks for. Figures go to ``$BUSPROBE_CROSSING_FIGURES`` (JSON lines).
"""

from __future__ import annotations

import json
import os
import time

import cocotb
from cocotb.triggers import RisingEdge, Timer

SYMBOLS = 1_048_576
#: SSC: USB 3.0 modulates at 30-33 kHz (§6.5.4); a triangle of 31.5 kHz.
SPREAD_PERIOD_NS = 31_746
#: Per direction, how far the symbols the crossing removed (net of those it added) may be from
#: what the clocks' mean difference predicts: the fill wanders within its band, and the receive
#: side's SKPs come two (or four) at a time.
SLACK_SYMBOLS = 48
COUNTERS = ("rx_sent", "rx_received", "rx_errors", "rx_skp_sent", "rx_skp_received",
            "tx_sent", "tx_received", "tx_errors", "tx_skp_sent", "tx_skp_received",
            "rx_added", "rx_removed", "rx_recentred", "tx_added", "tx_removed", "tx_recentred",
            "rx_fill_min", "rx_fill_max", "tx_fill_min", "tx_fill_max", "ss_cycles")


async def run_crossing(dut, *, offset_ppm: float, spread_ppm: int = 0) -> dict:
    """Reset the testbench, push :data:`SYMBOLS` data symbols each way, return its counters."""
    dut.reset.value = 1
    dut.symbols.value = SYMBOLS
    dut.offset_ppb.value = round(offset_ppm * 1000)
    dut.spread_ppm.value = spread_ppm
    dut.spread_period_ns.value = SPREAD_PERIOD_NS
    # Both directions at 4 symbols per 8 ns, plus the start; a run twice that long has stalled.
    dut.timeout_cycles.value = 2 * (SYMBOLS // 4 + 1000)
    await Timer(200, unit="ns")
    start = time.monotonic()
    dut.reset.value = 0
    await RisingEdge(dut.done)
    figures = {name: int(getattr(dut, name).value) for name in COUNTERS}
    figures.update(offset_ppm=offset_ppm, spread_ppm=spread_ppm,
                   wall_seconds=round(time.monotonic() - start, 2))
    path = os.environ.get("BUSPROBE_CROSSING_FIGURES")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(figures) + "\n")
    return figures


def check_every_symbol_once(figures: dict) -> None:
    for way in ("rx", "tx"):
        assert figures[f"{way}_errors"] == 0, figures
        assert figures[f"{way}_received"] == SYMBOLS == figures[f"{way}_sent"], figures
        assert figures[f"{way}_recentred"] == 0, figures


def check_skp_rate(figures: dict, mean_ppm: float) -> None:
    """The SKP symbols removed on receive and added on transmit, net, match the clocks: a SerDes
    clock faster than twice ss brings ``mean_ppm`` more symbols per million in than go out."""
    seconds = figures["ss_cycles"] * 8e-9
    excess = mean_ppm * 1e-6 * 500e6 * seconds
    removed_rx = 2 * (figures["rx_removed"] - figures["rx_added"])
    added_tx = 4 * (figures["tx_added"] - figures["tx_removed"])
    assert abs(removed_rx - excess) <= SLACK_SYMBOLS, (excess, figures)
    assert abs(added_tx - excess) <= SLACK_SYMBOLS, (excess, figures)


@cocotb.test()
async def serdes_clock_300ppm_fast_every_symbol_once_skps_removed_on_receive_added_on_transmit(
        dut):
    figures = await run_crossing(dut, offset_ppm=300)
    check_every_symbol_once(figures)
    assert figures["rx_removed"] > 0 and figures["tx_added"] > 0, figures
    check_skp_rate(figures, 300)


@cocotb.test()
async def serdes_clock_300ppm_slow_every_symbol_once_skps_added_on_receive_removed_on_transmit(
        dut):
    figures = await run_crossing(dut, offset_ppm=-300)
    check_every_symbol_once(figures)
    assert figures["rx_added"] > 0 and figures["tx_removed"] > 0, figures
    check_skp_rate(figures, -300)


@cocotb.test()
async def serdes_clock_5000ppm_down_spread_every_symbol_once_skps_follow_the_modulation(dut):
    # A down-spread of 5000 ppm averages 2500 ppm slow; with 300 ppm slow on top the SerDes
    # clock reaches 5300 ppm below nominal at the bottom of each sweep.
    figures = await run_crossing(dut, offset_ppm=-300, spread_ppm=5000)
    check_every_symbol_once(figures)
    check_skp_rate(figures, -300 - 2500)


@cocotb.test()
async def locked_clocks_as_on_the_board_settle_once_and_never_move_a_skp(dut):
    figures = await run_crossing(dut, offset_ppm=0)
    check_every_symbol_once(figures)
    for event in ("rx_added", "rx_removed", "tx_added", "tx_removed"):
        assert figures[event] == 0, figures
