"""Gate-level benchmark (`make bench`): every ECP5 design's netlist sweeps 1 MiB beside its RTL.

Each selector runs the sweep engine (what ``busprobe sweep`` runs) over IN and OUT at 1 MiB,
queue depth 4, at ``level=rtl`` and ``level=netlist``; the table gives each point's throughput
at both levels and the simulation speed of each. The netlist is the same design cycle by cycle,
so its throughput must equal the RTL's within 0.1 %, with no data error.

For the USB 2.0 designs the board is built first (from the cache after ``make bench``'s build
benchmark), so the netlist simulated is the one its bitstream was packed from; where the cache
held a netlist synthesized alone (``make test``), its SHA-256 must equal the board build's. The
usb3 netlist is yosys' alone (a board build takes ~5 minutes and meets ``ss`` only by a
placement's margin, docs/DESIGN.md §3.3), cut at the 125 MHz side of the SerDes crossing.
"""

from __future__ import annotations

import statistics
import time

import pytest
from busprobe.bitstream.designs import get_design
from busprobe.bitstream.ecp5 import build_ecp5, ecp5_netlist
from busprobe.build_cache import build_root
from busprobe.gateware.boards import get_board
from busprobe.sweep import Sweep, SweepPlan
from busprobe.targets import open_transport

LENGTH = 1 << 20
#: Selector (without ``level``) -> (board, board design whose netlist it runs).
SELECTORS = {
    "sim:usb2": ("cynthion-r1.4", "usb2"),
    "sim:usb2?design=full": ("cynthion-r1.4", "usb2-full"),
    "sim:usb2?design=stock": ("cynthion-r1.4", "usb2-stock"),
    "sim:usb3": ("ecpix5-85", "usb3"),
}


def _with_level(selector: str, level: str) -> str:
    return f"{selector}{'&' if '?' in selector else '?'}level={level}"


def _sweep(selector: str) -> tuple[dict[str, tuple[float, int]], float, float]:
    """``({direction: (throughput, errors)}, k cycles/s, seconds to open)`` of a 1 MiB sweep
    of ``selector``; the throughput is the median of the repeats, as the result JSON has it."""
    started = time.monotonic()
    with open_transport(selector) as transport:
        opened = time.monotonic() - started

        before = transport.platform.counters()
        sweep = Sweep(transport, SweepPlan(directions=("in", "out"), lengths=(LENGTH,),
                                           queue_depths=(4,)))
        points = {p.spec.direction: (statistics.median(p.samples), p.errors)
                  for p in sweep.run()}
        after = transport.platform.counters()
        cycles = after["cycle"] - before["cycle"]
        wall = after["busy_wall_s"] - before["busy_wall_s"]
    return points, cycles / wall / 1e3, opened


@pytest.mark.bench
@pytest.mark.parametrize("selector", list(SELECTORS))
def test_bench_netlist_1mib_sweep_equals_the_rtl_within_0_1_percent(selector: str):
    board, design = get_board(SELECTORS[selector][0]), get_design(SELECTORS[selector][1])
    before = ecp5_netlist(board, design, root=build_root())
    if design.bus == "usb2":
        build_ecp5(board, design, root=build_root())
        after = ecp5_netlist(board, design, root=build_root())
        print(f"\n{design.name}: netlist {after.sha256[:12]} from the board build; synthesized "
              f"alone before: {before.sha256[:12] if before.source == 'synthesis' else '-'}")
        if before.source == "synthesis":
            assert after.sha256 == before.sha256, "yosys alone wrote another netlist"
    rtl, rtl_rate, rtl_open = _sweep(_with_level(selector, "rtl"))
    netlist, net_rate, net_open = _sweep(_with_level(selector, "netlist"))
    print(f"\n{selector} ({design.name}): RTL {rtl_rate:.0f} k cycles/s (opened in "
          f"{rtl_open:.0f} s), netlist {net_rate:.0f} k cycles/s (built and opened in "
          f"{net_open:.0f} s)")
    print(f"{'dir':4} {'RTL MB/s':>10} {'netlist MB/s':>13} {'difference':>11}")
    for direction, (rate, errors) in rtl.items():
        net_rate, net_errors = netlist[direction]
        difference = net_rate / rate - 1
        print(f"{direction:4} {rate / 1e6:>10.3f} {net_rate / 1e6:>13.3f} "
              f"{100 * difference:>10.3f}%")
        assert errors == 0 and net_errors == 0
        assert abs(difference) <= 0.001, f"{direction}: netlist {100 * difference:+.3f} %"
