"""``busprobe sweep`` through the real argument parser, on the loopback device (conftest.py)."""

import csv
import dataclasses
import json

import pytest
from busprobe import buses, targets
from busprobe.cli import main
from busprobe.results import CSV_COLUMNS, load_results

QUICK = ["--lengths", "512,2K", "--queue-depth", "1,4", "--no-progress"]


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_clean_sweep_writes_json_csv_plot_and_prints_a_table(loopback_device, capsys, tmp_path):
    _, instances = loopback_device
    j, c, p = tmp_path / "r.json", tmp_path / "r.csv", tmp_path / "out" / "r.png"
    status, out, err = _run(capsys, "sweep", "--device", "sim:loop", *QUICK,
                            "--json", str(j), "--csv", str(c), "--plot", str(p))
    assert status == 0, err
    assert "host MB/s" in out and "device MB/s" in out and "DATA ERRORS" not in out
    doc = load_results(j)
    assert doc["complete"] is True and doc["error"] is None and doc["errors"] == 0
    assert doc["bus"]["kind"] == "usb2-hs" and doc["device"] == "sim:loop"
    assert doc["plan"]["repeat"] == 3 and doc["plan"]["directions"] == ["in", "out"]
    assert len(doc["points"]) == 2 * 2 * 2
    assert {"throughput", "throughput_min", "throughput_max", "device_throughput", "errors",
            "telemetry", "mps", "mrrs", "repeats"} <= set(doc["points"][0])
    rows = list(csv.DictReader(c.open()))
    assert [h for h, _ in CSV_COLUMNS] == list(rows[0])
    assert len(rows) == 8
    assert float(rows[0]["throughput_Bps"]) == pytest.approx(doc["points"][0]["throughput"])
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert instances[0].closed


def test_default_ladder_comes_from_the_bus_kind_and_the_backends_limit(loopback_device, capsys,
                                                                        tmp_path):
    status, _, err = _run(capsys, "sweep", "--device", "sim:loop", "--direction", "in",
                          "--no-progress", "--json", str(tmp_path / "r.json"))
    assert status == 0, err
    doc = load_results(tmp_path / "r.json")
    assert doc["plan"]["lengths"] == [512, 1024, 2048, 4096, 8192]  # usb2-hs, max 8K
    assert doc["plan"]["queue_depths"] == [4]


def test_json_to_stdout_keeps_stdout_pure_json_and_moves_the_table(loopback_device, capsys):
    status, out, err = _run(capsys, "sweep", "--device", "sim:loop", *QUICK, "--json", "-",
                            "--units", "mib")
    assert status == 0
    assert json.loads(out)["display_units"] == "MiB/s"
    assert "host MiB/s" in err


def test_json_to_stdout_survives_backends_writing_to_file_descriptor_1(loopback_device, capfd):
    faults, _ = loopback_device
    faults.chatter = True
    status = main(["sweep", "--device", "sim:loop", *QUICK, "--json", "-"])
    out, err = capfd.readouterr()
    assert status == 0
    assert len(json.loads(out)["points"]) == 8
    assert "simulator build talking" in err and "simulator noise" in err


@pytest.mark.parametrize("argv, message", [
    (["--lengths", "4X"], "bad size '4X'"),
    (["--lengths", "500..4K"], "not a power of two"),
    (["--queue-depth", "0"], "bad queue depth 0"),
    (["--queue-depth", "two"], "bad queue depth 'two'"),
    (["--repeat", "2"], "--repeat must be at least 3"),
    (["--direction", "write"], "direction 'write' is not one of in, out"),
    (["--pattern", "zeros"], "unknown pattern 'zeros'"),
    (["--units", "gb"], "unknown units 'gb'"),
    (["--allow-config-write"], "--allow-config-write applies to real PCIe devices"),
])
def test_bad_input_is_one_line_exit_2_before_anything_runs(loopback_device, capsys, tmp_path,
                                                          argv, message):
    _, instances = loopback_device
    j = tmp_path / "r.json"
    status, out, err = _run(capsys, "sweep", "--device", "sim:loop", *argv, "--json", str(j))
    assert status == 2
    assert err.startswith("busprobe: error: ") and message in err and err.count("\n") == 1
    assert not j.exists()
    assert all(not t.opened for t in instances)


def test_bad_selector_is_one_line_exit_2(capsys):
    status, _, err = _run(capsys, "sweep", "--device", "usb1209")
    assert status == 2 and "bad device selector 'usb1209'" in err and err.count("\n") == 1


def test_device_gone_mid_sweep_saves_the_points_measured_so_far(loopback_device, capsys,
                                                                tmp_path):
    faults, instances = loopback_device
    faults.gone_at = 7  # 3 repeats per point: points 1 and 2 complete, the third dies
    j, c, p = tmp_path / "r.json", tmp_path / "r.csv", tmp_path / "r.png"
    status, out, err = _run(capsys, "sweep", "--device", "sim:loop", *QUICK,
                            "--json", str(j), "--csv", str(c), "--plot", str(p))
    assert status == 2
    assert err.startswith("sweeping sim:loop (usb2-hs high): in/out, lengths 512,2K")
    assert err.splitlines()[1:] == ["busprobe: error: sim:loop: the device is gone (unplugged)"]
    assert "INCOMPLETE" in out
    doc = load_results(j)
    assert doc["complete"] is False and doc["error"].startswith("DeviceGone: ")
    assert len(doc["points"]) == 2
    assert len(list(csv.DictReader(c.open()))) == 2
    assert p.exists()
    assert instances[0].closed


def test_ctrl_c_saves_partial_results_and_exits_130(loopback_device, capsys, tmp_path):
    faults, _ = loopback_device
    faults.interrupt_at = 3
    j = tmp_path / "r.json"
    status, _, err = _run(capsys, "sweep", "--device", "sim:loop", *QUICK, "--json", str(j))
    assert status == 130 and "interrupted" in err
    doc = load_results(j)
    assert doc["complete"] is False and "Ctrl-C" in doc["error"] and len(doc["points"]) == 1


def test_data_errors_are_kept_flagged_loudly_and_exit_1(loopback_device, capsys, tmp_path):
    faults, _ = loopback_device
    faults.corrupt_in.add(0)
    j = tmp_path / "r.json"
    status, out, _ = _run(capsys, "sweep", "--device", "sim:loop", *QUICK, "--json", str(j))
    assert status == 1
    assert "!! DATA ERRORS: 1 in 1 of 8 points" in out
    doc = load_results(j)
    assert doc["complete"] is True and doc["errors"] == 1
    assert doc["points"][0]["error_detail"]["mismatched_words"] == 1
    assert all(p["errors"] == 0 for p in doc["points"][1:])


def test_mps_on_a_usb_device_is_refused_before_libusb_is_touched(capsys, tmp_path):
    status, _, err = _run(capsys, "sweep", "--device", "usb:1209:0001", "--mps", "128,256")
    assert status == 2
    assert err == "busprobe: error: --mps/--mrrs are PCIe settings; usb:1209:0001 is a USB device\n"


def test_a_setting_the_bus_does_not_have_is_refused_before_the_device_is_opened(
        loopback_device, capsys):
    _, instances = loopback_device
    status, _, err = _run(capsys, "sweep", "--device", "sim:loop", *QUICK, "--mrrs", "512")
    assert status == 2
    assert err == "busprobe: error: --mps/--mrrs are PCIe settings; sim:loop is a USB device\n"
    assert not instances


def test_a_setting_the_device_refuses_fails_after_open_but_before_data_moves(
        loopback_device, capsys, monkeypatch):
    _, instances = loopback_device
    described = targets.describe
    with_settings = dataclasses.replace(buses.USB2_HS, settings=("mps", "mrrs"))
    monkeypatch.setattr(targets, "describe", lambda text, **kw: dataclasses.replace(
        described(text, **kw), spec=with_settings))
    status, _, err = _run(capsys, "sweep", "--device", "sim:loop", *QUICK, "--mrrs", "512")
    assert status == 2 and "cannot set mrrs" in err
    assert instances[0].calls == 0 and instances[0].closed


def test_both_means_the_two_streaming_directions_and_all_means_every_one():
    from busprobe.cli.sweep import expand_directions
    from busprobe.transport import InvalidRequest

    pcie = ("write", "read", "loopback")
    assert expand_directions("both", pcie) == ("write", "read")
    assert expand_directions("all", pcie) == pcie
    assert expand_directions("read,both", pcie) == ("read", "write")
    assert expand_directions("both", ("in", "out")) == ("in", "out")
    with pytest.raises(InvalidRequest, match="direction 'in' is not one of write, read"):
        expand_directions("in", pcie)


def test_an_unwritable_output_fails_before_the_measurement(loopback_device, capsys, tmp_path):
    _, instances = loopback_device
    blocker = tmp_path / "file"
    blocker.write_text("")
    status, _, err = _run(capsys, "sweep", "--device", "sim:loop", *QUICK,
                          "--csv", str(blocker / "r.csv"))
    assert status == 2 and f"cannot write {blocker / 'r.csv'}" in err
    assert not instances or not instances[0].opened


@pytest.mark.parametrize("argv, message", [
    (["--lengths", ""], "bad length list ''"),
    (["--queue-depth", ""], "bad queue depth ''"),
    (["--json", "-", "--csv", "-"], "would both write to stdout"),
])
def test_empty_values_and_two_outputs_on_stdout_are_refused(loopback_device, capsys, argv,
                                                            message):
    _, instances = loopback_device
    status, _, err = _run(capsys, "sweep", "--device", "sim:loop", "--no-progress", *argv)
    assert status == 2 and message in err and err.count("\n") == 1
    assert not instances or not instances[0].opened


def test_an_output_below_a_file_is_refused_before_measuring(loopback_device, capsys, tmp_path):
    (tmp_path / "file").write_text("x")
    status, _, err = _run(capsys, "sweep", "--device", "sim:loop", *QUICK,
                          "--json", str(tmp_path / "file" / "sub" / "r.json"))
    assert status == 2 and "is a file, not a directory" in err and err.count("\n") == 1


def test_a_run_that_measures_nothing_still_writes_what_is_known_with_complete_false(
        loopback_device, capsys, tmp_path):
    """Issue 47, item 7: the error, the target, the plan and no point; a CSV table or a plot
    needs points, so those are not written (nor their folder made)."""
    faults, _ = loopback_device
    faults.gone_at = 0  # the device is gone at the first transfer
    result = tmp_path / "r.json"
    result.write_text('{"an earlier": "result"}')
    new_folder = tmp_path / "new" / "r.csv"
    status, out, err = _run(capsys, "sweep", "--device", "sim:loop", *QUICK,
                            "--json", str(result), "--csv", str(new_folder))
    assert status == 2 and "no point was finished" in out and "CSV: not written" in out
    assert err.splitlines()[-1] == "busprobe: error: sim:loop: the device is gone (unplugged)"
    doc = load_results(result)
    assert doc["complete"] is False and doc["error"].startswith("DeviceGone: ")
    assert doc["points"] == [] and doc["device"] == "sim:loop"
    assert doc["bus"]["kind"] == "usb2-hs" and doc["plan"]["lengths"] == [512, 2048]
    assert not (tmp_path / "new").exists()


def test_verdict_lines_speak_the_units_the_run_is_shown_in(loopback_device, capsys, tmp_path):
    status, out, _ = _run(capsys, "sweep", "--device", "sim:loop", *QUICK, "--units", "mib")
    verdicts = [line for line in out.splitlines() if ": link-limited" in line
                or "-limited:" in line]
    assert status == 0 and verdicts
    assert all("MiB/s" in line and "MB/s" not in line for line in verdicts)


def test_a_queue_deeper_than_the_transfers_of_a_repeat_is_recorded_as_it_was(loopback_device,
                                                                            capsys, tmp_path):
    status, out, _ = _run(capsys, "sweep", "--device", "sim:loop", "--direction", "in",
                          "--lengths", "8K", "--queue-depth", "256", "--no-progress",
                          "--json", str(tmp_path / "r.json"))
    point = load_results(tmp_path / "r.json")["points"][0]
    assert status == 0 and point["queue_depth"] == 256
    # The repeat is as deep as it may be (the loopback's max_transfers), and says so.
    assert point["queue_depth_in_force"] == point["transfers"] == 64
    assert "the queue never filled" in out


@pytest.mark.parametrize("argv, bound", [
    (["--repeat", "100000000"], "--repeat 100000000 is above the bound of 100"),
    (["--queue-depth", "100000"], "--queue-depth 100000 is above the bound of 256"),
    (["--lengths", "128M"], "length 128 MiB is above the bound of 64 MiB"),
    (["--lengths", "64M", "--queue-depth", "8"], "512 MiB of buffers in flight, above the bound "
                                                  "of 256 MiB"),
    (["--min-bytes", "1G"], "would move 3 GiB, above the bound of 256 MiB for a simulated "
                            "point"),
    (["--lengths", ",".join(map(str, range(1, 31))), "--queue-depth",
      ",".join(map(str, range(1, 257))), "--direction", "in,out"],
     "15,360 points (directions × lengths × queue depths × settings) is above the bound of "
     "10,000"),
])
def test_asking_beyond_a_bound_is_one_line_naming_it_before_the_device_opens(
        loopback_device, capsys, argv, bound):
    _, instances = loopback_device
    status, _, err = _run(capsys, "sweep", "--device", "sim:loop", "--no-progress", *argv)
    assert status == 2 and bound in err and err.count("\n") == 1, err
    assert not instances or not instances[0].opened


@pytest.mark.parametrize("argv, message", [
    (["--mps", "4096"], "mps='4096': mps must be 128, 256 or 512"),
    (["--mrrs", "64"], "mrrs='64': mrrs must be 128, 256, 512, 1024, 2048 or 4096"),
    (["--mps", "256,1024"], "mps='1024'"),
])
def test_pcie_settings_beyond_the_spec_or_the_design_are_refused_before_the_model_is_built(
        capsys, monkeypatch, argv, message):
    monkeypatch.setattr(targets, "open_transport",
                        lambda *a, **k: pytest.fail("the model would be built"))
    status, _, err = _run(capsys, "sweep", "--device", "sim:pcie", "--no-progress", *argv)
    assert status == 2 and message in err and err.count("\n") == 1, err
