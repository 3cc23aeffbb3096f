"""``-`` for a result of any command: stdout holds that result alone (parsed here), every human
line goes to stderr. Captured at the file descriptors (``capfd``), so what a child process or a
tool writes to descriptor 1 would show too; and, for every command with ``--json``, through a
real ``busprobe`` process whose stdout is a pipe into a JSON parser, as a shell pipeline would
read it (issue 47, item 6). ``build --json -`` is checked on the cached ECP5 build
(bitstream/tests/test_ecp5_build.py), ``fit -o -`` in fit/tests/test_cli_fit.py."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from busprobe.cli import main

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "results"


def _stdout_only(capfd, argv):
    status = main(argv)
    out, err = capfd.readouterr()
    assert status == 0, err
    return out, err


def test_sweep_json_to_stdout_is_the_document_alone(loopback_device, capfd):
    out, err = _stdout_only(capfd, ["sweep", "--device", "sim:loop", "--lengths", "512",
                                    "--queue-depth", "1", "--no-progress", "--json", "-"])
    assert json.loads(out)["points"] and "host MB/s" in err and "sweeping sim:loop" in err


@pytest.mark.parametrize("path", ["-", "/dev/stdout"])
def test_multi_target_sweep_json_to_stdout_is_the_document_alone(loopback_device, capfd, path):
    out, err = _stdout_only(capfd, ["sweep", "--device", "sim:loop", "--device",
                                    "sim:loop?second", "--lengths", "512", "--queue-depth", "1",
                                    "--no-progress", "--json", path])
    assert len(json.loads(out)["targets"]) == 2 and "sweeping 2 targets" in err


def test_sweep_csv_to_stdout_is_the_table_alone(loopback_device, capfd):
    out, err = _stdout_only(capfd, ["sweep", "--device", "sim:loop", "--lengths", "512",
                                    "--queue-depth", "1", "--no-progress", "--csv", "-"])
    assert out.splitlines()[0].startswith("direction,length,") and len(out.splitlines()) == 3


def test_model_json_to_stdout_with_or_without_a_dash(capfd):
    for argv in (["--json", "-"], ["--json"], ["--formula", "--json", "-"]):
        out, _ = _stdout_only(capfd, ["model", "--device", "sim:pcie", *argv])
        assert json.loads(out)["ceilings"]


def test_model_json_to_a_file_still_prints_the_text(capfd, tmp_path):
    out, _ = _stdout_only(capfd, ["model", "--device", "sim:usb2", "--json",
                                  str(tmp_path / "m.json")])
    assert "MB/s" in out and json.loads((tmp_path / "m.json").read_text())["ceilings"]


def test_topology_json_to_stdout(capfd):
    out, _ = _stdout_only(capfd, ["topology", "--device", "sim:pcie", "--json", "-"])
    assert [hop["kind"] for hop in json.loads(out)] == ["sim-pci-root-port", "sim-pci-endpoint"]


def test_report_to_stdout_is_the_page_alone(capfd):
    out, err = _stdout_only(capfd, ["report", str(FIXTURES / "usb2_ideal.json"), "-o", "-"])
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    assert err.startswith("report: stdout (1 run, MB/s)")


def test_compare_plot_to_stdout_is_the_png_alone(capfdbinary):
    status = main(["compare", str(FIXTURES / "usb2_xhci.json"), str(FIXTURES / "usb2_ehci.json"),
                   "--plot", "-"])
    out, err = capfdbinary.readouterr()
    assert status == 0 and b"What explains the differences" in err
    assert out[:8] == b"\x89PNG\r\n\x1a\n" and out.endswith(b"IEND\xaeB`\x82")


def busprobe_json(*argv: str, timeout: float = 60) -> tuple[object, str]:
    """``busprobe ARGV`` in a child process: its stdout parsed as one JSON document (it fails
    on anything else there, or on nothing), and its stderr."""
    run = subprocess.run([sys.executable, "-m", "busprobe", *argv], capture_output=True,
                         text=True, timeout=timeout, check=False)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout), run.stderr


def test_model_json_dash_in_a_real_process_is_the_document_alone_on_stdout():
    doc, err = busprobe_json("model", "--device", "sim:pcie", "--json", "-")
    assert doc["ceilings"] and err == ""


def test_topology_json_dash_in_a_real_process_is_the_document_alone_on_stdout():
    hops, _ = busprobe_json("topology", "--device", "sim:usb2", "--json", "-")
    assert hops and all("kind" in hop for hop in hops)


@pytest.mark.sim
def test_sweep_json_dash_in_a_real_process_is_the_document_alone_on_stdout():
    """A real simulator (its build's and its own output go to stderr or its log)."""
    doc, err = busprobe_json("sweep", "--device", "sim:usb2", "--direction", "in", "--lengths",
                             "4K", "--queue-depth", "1", "--min-bytes", "16K", "--no-progress",
                             "--json", "-", timeout=600)
    assert doc["complete"] is True and len(doc["points"]) == 1
    assert "sweeping sim:usb2" in err and "host MB/s" in err
