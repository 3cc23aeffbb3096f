"""``busprobe sweep`` end to end against the simulated SuperSpeed gateware (cocotb + Verilator).

The host tool's real code path: CLI → sweep engine → UsbDeviceTransport (the board's driver,
which recognises the SuperSpeed device by its INFO) over the simulated platform → the xHCI model
→ the PIPE link partner → the gateware. Every byte in both directions is checked against the
pattern (host side for IN, the gateware's checker for OUT).
"""

import time

import pytest
from busprobe.cli import main
from busprobe.model.usb3 import SS_RATE
from busprobe.results import ceilings_of, load_results


@pytest.mark.sim
def test_a_1mib_sweep_both_ways_reaches_the_link_model_with_every_byte_checked(tmp_path,
                                                                               capsys):
    j = tmp_path / "usb3.json"
    status = main(["sweep", "--device", "sim:usb3", "--direction", "both", "--lengths", "1M",
                   "--repeat", "3", "--no-progress", "--json", str(j)])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "DATA ERRORS" not in out
    doc = load_results(j)
    assert doc["complete"] is True and doc["errors"] == 0
    assert doc["bus"]["kind"] == "usb3-ss" and doc["bus"]["speed"] == "super"
    assert doc["bus"]["max_packet_size"] == 1024 and doc["bus"]["host_profile"] == "ideal"
    points = {pt["direction"]: pt for pt in doc["points"]}
    assert sorted(points) == ["in", "out"]
    for direction, pt in points.items():
        # Nothing beats the lane: 5 Gb/s after 8b/10b, before any framing.
        assert pt["throughput_max"] < SS_RATE and pt["device_throughput"] < SS_RATE
        assert pt["telemetry"][f"{direction}_bytes"] == pt["bytes"]
        assert pt["telemetry"]["pattern_errors"] == 0
        # The device is never the bottleneck, and a figure above the model is a bug.
        assert 0.99 <= pt["efficiency"] <= 1.0, pt
    verdicts = {entry["direction"]: entry for entry in ceilings_of(doc)}
    for direction in ("in", "out"):
        assert verdicts[direction]["verdict"] == "link-limited"
        assert 0.99 <= verdicts[direction]["efficiency"] <= 1.0


@pytest.mark.sim
def test_lengths_that_are_not_multiples_of_1024_and_one_that_is_move_every_byte(tmp_path,
                                                                                capsys):
    j = tmp_path / "odd.json"
    status = main(["sweep", "--device", "sim:usb3", "--direction", "both",
                   "--lengths", "1000,4096,5000", "--min-bytes", "64K", "--repeat", "3",
                   "--no-progress", "--json", str(j)])
    out, err = capsys.readouterr()
    assert status == 0, err
    doc = load_results(j)
    assert doc["errors"] == 0
    points = {(pt["direction"], pt["length"]): pt for pt in doc["points"]}
    assert sorted(points) == [(d, n) for d in ("in", "out") for n in (1000, 4096, 5000)]
    for (direction, length), pt in points.items():
        assert pt["errors"] == 0 and pt["short_transfers"] == 0
        assert not (pt["error_detail"] or {}).get("lost_bytes")
        assert pt["telemetry"][f"{direction}_bytes"] == pt["bytes"]
        # One short packet ends every transfer that is not a multiple of 1024, none other.
        assert pt["telemetry"][f"{direction}_short"] == (pt["transfers"] if length % 1024
                                                         else 0)
        assert pt["efficiency"] <= 1.0, pt


@pytest.mark.sim
def test_loopback_between_streamed_directions_returns_every_byte_at_the_dual_simplex_ceiling(
        tmp_path, capsys):
    """in -> loopback -> out through the host tool: SET_DATA_MODE switches the gateware into
    LOOPBACK and back (both ends restart their pattern), odd and whole lengths come back byte
    for byte, and the 1 MiB point reaches the loopback model (each lane carries its DP and the
    other direction's handshakes: 459 MB/s returned, not half the streamed rate)."""
    j = tmp_path / "loop.json"
    status = main(["sweep", "--device", "sim:usb3", "--direction", "in,loopback,out",
                   "--lengths", "4097,1M", "--min-bytes", "64K", "--min-transfers", "1",
                   "--repeat", "3",
                   "--no-progress", "--json", str(j)])
    out, err = capsys.readouterr()
    assert status == 0, err
    doc = load_results(j)
    assert doc["complete"] is True and doc["errors"] == 0
    points = {(pt["direction"], pt["length"]): pt for pt in doc["points"]}
    assert [d for d, _ in points] == ["in", "in", "loopback", "loopback", "out", "out"]
    for (direction, length), pt in points.items():
        assert pt["errors"] == 0 and pt["short_transfers"] == 0, pt
        if direction == "loopback":
            telemetry = pt["telemetry"]
            assert telemetry["in_bytes"] == telemetry["out_bytes"] == pt["bytes"]
            assert telemetry["pattern_errors"] == 0
            # Each IN transfer ends with the short packet its OUT transfer ended with.
            assert telemetry["in_short"] == telemetry["out_short"] == (
                pt["transfers"] if length % 1024 else 0)
    loop = points[("loopback", 1 << 20)]
    assert loop["ceiling"] == pytest.approx(459.4e6, rel=1e-3)
    assert 0.99 <= loop["efficiency"] <= 1.0, loop  # 99.3-99.4 % measured: DESIGN §3.6
    assert "loopback: link-limited" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["--device", "sim:usb3?burst=17"],
     "sim:usb3 option burst='17': burst must be a whole number of packets, 1..16"),
    (["--device", "sim:usb3?host=nope"], "sim:usb3 option host='nope': unknown USB3 host"),
    (["--device", "sim:usb3", "--protocol", "bot"], "has no BOT framing"),
])
def test_what_the_superspeed_target_cannot_do_is_one_line_before_a_simulator_starts(
        argv, message, capsys, monkeypatch):
    from busprobe.sim.simulator import SimServer

    def refuse(*args, **kwargs):
        raise AssertionError("a simulator was started")

    monkeypatch.setattr(SimServer, "__init__", refuse)
    status = main(["sweep", *argv, "--lengths", "1K", "--no-progress"])
    out, err = capsys.readouterr()
    assert status == 2, (out, err)
    assert message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.bench
@pytest.mark.parametrize("selector", ["sim:usb3", "sim:usb3?burst=1"])
def test_1mib_points_reach_their_bound_and_their_wall_time_is_printed(
        tmp_path, capsys, selector):
    """Benchmark: 1 MiB both ways behind the ideal host with the full window (link-limited)
    and with a one-packet window (host-limited at the model's round-trip bound, within 3 %);
    prints the wall time (the simulation's cycles per second are the cocotb bench's)."""
    j = tmp_path / "usb3.json"
    wall = time.monotonic()
    status = main(["sweep", "--device", selector, "--direction", "both",
                   "--lengths", "1M", "--no-progress", "--json", str(j)])
    wall = time.monotonic() - wall
    out, err = capsys.readouterr()
    assert status == 0, err
    doc = load_results(j)
    assert doc["errors"] == 0
    burst_1 = selector.endswith("burst=1")
    for entry in ceilings_of(doc):
        expected = "host-limited" if burst_1 else "link-limited"
        assert entry["verdict"] == expected, entry["explanation"]
        assert 0.97 <= entry["profile_efficiency"] <= 1.0, entry
        if burst_1:
            assert "latency bound" in entry["explanation"]
    if burst_1:
        evidence = {entry["direction"]: entry["evidence"] for entry in ceilings_of(doc)}
        assert evidence["in"]["window_max"] == 1 and evidence["out"]["room_min"] >= 1
    with capsys.disabled():
        print(f"\n{selector}: " + ", ".join(
            f"{pt['direction']} {pt['throughput'] / 1e6:.1f} MB/s" for pt in doc["points"])
            + f"; {wall:.1f} s wall for the 2 points, training included")
