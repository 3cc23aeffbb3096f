"""Gate-level benchmark (`make bench`): every ECP5 design's netlist sweeps 1 MiB beside its RTL.

Each selector runs the sweep engine (what ``busprobe sweep`` runs) over IN and OUT at 1 MiB,
queue depth 4, at ``level=rtl`` and ``level=netlist``; the table gives each point's throughput
at both levels and the simulation speed of each. The netlist is the same design cycle by cycle,
so its throughput must equal the RTL's within 0.1 %, with no data error.
"""

from __future__ import annotations

import statistics
import time

import pytest
from busprobe.sweep import Sweep, SweepPlan
from busprobe.targets import open_transport

LENGTH = 1 << 20
#: Selector (without ``level``) -> the board design whose netlist it runs.
SELECTORS = {
    "sim:usb2": "usb2",
    "sim:usb2?design=full": "usb2-full",
    "sim:usb2?design=stock": "usb2-stock",
    "sim:usb3": "usb3",
}


def _with_level(selector: str, level: str) -> str:
    return f"{selector}{'&' if '?' in selector else '?'}level={level}"


def _sweep(selector: str) -> tuple[dict[str, tuple[float, int]], float, float]:
    """``({direction: (throughput, errors)}, k cycles/s, seconds to open)`` of a 1 MiB sweep
    of ``selector``; the throughput is the median of the repeats, as the result JSON has it."""
    cycles = wall = 0.0
    started = time.monotonic()
    with open_transport(selector) as transport:
        opened = time.monotonic() - started

        def count(spec, repeat) -> None:
            nonlocal cycles, wall
            cycles += transport.platform.last_stream["sim_cycles"]
            wall += transport.platform.last_stream["wall_seconds"]

        sweep = Sweep(transport, SweepPlan(directions=("in", "out"), lengths=(LENGTH,),
                                           queue_depths=(4,)), on_repeat=count)
        points = {p.spec.direction: (statistics.median(p.samples), p.errors)
                  for p in sweep.run()}
    return points, cycles / wall / 1e3, opened


@pytest.mark.bench
@pytest.mark.parametrize("selector", list(SELECTORS))
def test_bench_netlist_1mib_sweep_equals_the_rtl_within_0_1_percent(selector: str):
    rtl, rtl_rate, rtl_open = _sweep(_with_level(selector, "rtl"))
    netlist, net_rate, net_open = _sweep(_with_level(selector, "netlist"))
    print(f"\n{selector} ({SELECTORS[selector]}): RTL {rtl_rate:.0f} k cycles/s (opened in "
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
