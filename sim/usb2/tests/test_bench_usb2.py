"""USB2 simulation benchmark (`make bench`): simulation speed, an ideal-host sweep, vs stock LUNA.

Prints simulated cycles per second, the wall time of a sweep through the real CLI (IN and OUT,
8 lengths), each point as % of its host profile's ceiling, and the stock LUNA design side by side.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from busprobe.build_cache import build_root
from busprobe.model.usb2 import usb2_ceiling
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.targets import open_transport

LENGTHS = "512..64K"  # the ideal-host ladder; multiples of 512: stock sends no short packet


def _sweep(selector: str, out: Path) -> tuple[float, dict]:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "busprobe", "sweep", "--device", selector,
                    "--direction", "both", "--lengths", LENGTHS, "--pattern", "counter",
                    "--no-progress", "--json", str(out)], check=True)
    return time.perf_counter() - started, json.loads(out.read_text())


@pytest.mark.bench
def test_bench_usb2_cycles_per_second_and_demo_sweep_busprobe_vs_stock():
    from busprobe.sim.usb2.simulator_build import build_usb2_simulator

    for design in ("busprobe", "stock"):
        started = time.perf_counter()
        build_usb2_simulator(design)
        print(f"model {design}: ready in {time.perf_counter() - started:.1f} s")

    with open_transport("sim:usb2") as transport:
        transport.set_pattern(Pattern.COUNTER)
        expected = PatternStream(Pattern.COUNTER)
        before = transport.platform.counters()
        result = transport.stream("in", 1 << 20, 2, 2, sink=expected.check)
        after = transport.platform.counters()
        cycles = after["cycle"] - before["cycle"]
        wall = after["busy_wall_s"] - before["busy_wall_s"]
        rate = cycles / wall
        print(f"\n2 x 1 MiB IN: {result.bytes / result.seconds / 1e6:.3f} MB/s simulated, "
              f"{cycles} cycles in {wall:.1f} s wall "
              f"= {rate / 1e3:.0f} k cycles/s ({rate / 60e6 * 1e3:.2f} ms of USB per s)")

    out_dir = build_root() / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    sweeps = {}
    for design in ("busprobe", "stock"):
        wall, results = _sweep(f"sim:usb2?design={design}", out_dir / f"usb2-{design}.json")
        sweeps[design] = results
        print(f"sweep {design}: {len(results['points'])} points in {wall:.1f} s wall")

    bus = open_transport("sim:usb2").bus
    print(f"\n{'dir':4} {'length':>7} {'busprobe MB/s':>14} {'% ceiling':>10} {'stock MB/s':>11}")
    stock = {(p["direction"], p["length"]): p for p in sweeps["stock"]["points"]}
    for point in sweeps["busprobe"]["points"]:
        key = (point["direction"], point["length"])
        ceiling = usb2_ceiling(bus, point["direction"], length=point["length"],
                               queue_depth=point["queue_depth"]).throughput
        other = stock.get(key, {}).get("throughput", float("nan"))
        print(f"{key[0]:4} {key[1]:>7} {point['throughput'] / 1e6:>14.3f} "
              f"{100 * point['throughput'] / ceiling:>9.1f}% {other / 1e6:>11.3f}")
        assert point["errors"] == 0
