"""``make bench``: the tool's own ceiling on this machine (busprobe.tool_ceiling), as a table.

Per host path, direction, transfer length and queue depth: completions per second and bytes
per second the real host code sustains against a device that costs nothing (the null libusb,
the instant DMA engine). The native libusb stream must sustain what a SuperSpeed port at 4 KiB
needs (issue 32: 120 k completions/s on one core).
"""

import pytest
from busprobe.tool_ceiling import libusb_figure, vfio_figure

LENGTHS = (512, 4096, 65536)
DEPTHS = (1, 8)


@pytest.mark.bench
def test_the_tools_own_ceiling_per_path_length_and_queue_depth(capsys):
    rows = []
    for direction in ("in", "out"):
        for length in LENGTHS:
            for depth in DEPTHS:
                for native in (True, False):
                    rows.append(libusb_figure(direction, length, depth, native=native))
    for direction in ("write", "read"):
        for length in LENGTHS:
            for depth in DEPTHS:
                rows.append(vfio_figure(direction, length, depth))
    with capsys.disabled():
        print("\n== the tool's own ceiling (no device; see busprobe/tool_ceiling.py)")
        print(f"  {'path':14s} {'dir':5s} {'length':>7s} {'qd':>3s} {'k compl/s':>10s} "
              f"{'MB/s':>10s}")
        for f in rows:
            print(f"  {f.path:14s} {f.direction:5s} {f.length:7d} {f.queue_depth:3d} "
                  f"{f.completions_per_s / 1e3:10.1f} {f.bytes_per_s / 1e6:10.1f}")
    native = next(f for f in rows if f.path == "libusb-native" and f.direction == "in"
                  and f.length == 4096 and f.queue_depth == 8)
    assert native.completions_per_s >= 120e3
