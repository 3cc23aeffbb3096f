"""``busprobe sweep`` end to end against the simulated USB2 gateware (cocotb + Verilator).

The host tool's real code path: CLI → sweep engine → UsbDeviceTransport (the board's driver)
over the simulated platform → the simulated host controller → the gateware over ULPI. Every byte
in both directions is checked against the pattern (host side for IN, the gateware's checker for
OUT).
"""

import csv

import pytest
from busprobe.cli import main
from busprobe.results import ceilings_of, load_results

#: Nothing can beat the wire: 480 Mb/s is 60 MB/s before any protocol overhead.
WIRE_BYTES_PER_S = 60e6


@pytest.mark.sim
def test_sweep_both_directions_on_the_simulated_device_writes_checked_results(tmp_path, capsys):
    j, c, p = tmp_path / "usb2.json", tmp_path / "usb2.csv", tmp_path / "usb2.png"
    status = main(["sweep", "--device", "sim:usb2", "--direction", "both",
                   "--lengths", "512,64K", "--repeat", "3", "--no-progress",
                   "--json", str(j), "--csv", str(c), "--plot", str(p)])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "host MB/s" in out and "DATA ERRORS" not in out

    doc = load_results(j)
    assert doc["complete"] is True and doc["errors"] == 0
    assert doc["bus"]["kind"] == "usb2-hs" and doc["topology"]
    points = {(pt["direction"], pt["length"]): pt for pt in doc["points"]}
    assert sorted(points) == [("in", 512), ("in", 65536), ("out", 512), ("out", 65536)]
    for (direction, length), pt in points.items():
        assert pt["repeats"] == 3 and len(pt["samples"]) == 3
        assert 0 < pt["throughput_min"] <= pt["throughput"] <= pt["throughput_max"]
        assert pt["throughput_max"] < WIRE_BYTES_PER_S
        assert pt["device_throughput"] is not None and pt["device_throughput"] < WIRE_BYTES_PER_S
        # The device counted exactly what the host moved (last repeat's raw counters).
        assert pt["telemetry"][f"{direction}_bytes"] == pt["bytes"]
        assert pt["telemetry"]["pattern_errors"] == 0
        if pt["ceiling"] is not None:
            # The device is never the bottleneck: long transfers reach the model's ceiling, and
            # no repeat reads above the ceiling of its run.
            assert max(pt["samples"]) <= pt["ceiling"]
            if length == 65536:
                assert pt["efficiency"] > 0.9, pt
    assert {entry.get("direction") for entry in ceilings_of(doc)} == {"in", "out"}

    rows = list(csv.DictReader(c.open()))
    assert len(rows) == 4 and all(row["errors"] == "0" for row in rows)
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.sim
def test_loopback_between_streamed_directions_returns_every_byte_at_its_ceiling(tmp_path,
                                                                               capsys):
    # in -> loopback -> out: entering and leaving loopback restarts the pattern on both ends
    # (the device flushes its IN ring), so every point checks clean.
    j = tmp_path / "loop.json"
    status = main(["sweep", "--device", "sim:usb2", "--direction", "in,loopback,out",
                   "--lengths", "64K", "--repeat", "3", "--no-progress", "--json", str(j)])
    out, err = capsys.readouterr()
    assert status == 0, err
    doc = load_results(j)
    assert doc["complete"] is True and doc["errors"] == 0
    points = {pt["direction"]: pt for pt in doc["points"]}
    assert list(points) == ["in", "loopback", "out"]
    loop = points["loopback"]
    # Both directions share each microframe: 13 / 2 packets come back per microframe; the
    # point's ceiling is that of its runs (a few transfers, first submission to last completion).
    assert "26.624 MB/s" in loop["ceiling_formula"]
    assert loop["ceiling"] == pytest.approx(6.5 * 512 * 8000, rel=0.005)
    assert 0.99 < loop["efficiency"] <= 1.0
    assert max(loop["samples"]) <= loop["ceiling"]
    assert loop["telemetry"]["in_bytes"] == loop["telemetry"]["out_bytes"] == loop["bytes"]
    assert loop["telemetry"]["pattern_errors"] == 0
    assert "loopback: link-limited" in out
