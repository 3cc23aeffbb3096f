"""``busprobe fit``: what it writes, what it prints, and what it refuses, one line each."""

import json
import tomllib
from pathlib import Path

import pytest
from busprobe.cli import main
from busprobe.model.usb2_hosts import SCHEMA, load_profile

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "results"


def refused(capsys, argv, output):
    status = main(argv)
    out, err = capsys.readouterr()
    assert status == 2
    assert err.startswith("busprobe: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert not Path(output).exists()  # nothing written
    return err


def test_fit_writes_a_profile_the_loader_and_the_simulator_accept(model_result, tmp_path, capsys):
    result = model_result(load_profile("xhci"))
    output = tmp_path / "profiles" / "my host.toml"
    assert main(["fit", str(result), "-o", str(output)]) == 0
    out, err = capsys.readouterr()
    profile = load_profile(str(output))
    assert profile.name == "my host"
    assert profile.max_bulk_in_per_uframe == 12 and profile.completion_on_uframe is False
    table = tomllib.loads(output.read_text())
    assert set(table) == {"name", *SCHEMA}
    for key in SCHEMA:
        source = table[key]["source"]
        assert source.startswith(f"fitted from {result} on "), source
    # Each continuous value carries its uncertainty; OUT, not swept, says it was copied.
    for key in ("completion_latency_us", "resubmit_latency_us", "inter_transaction_gap_ns"):
        assert "±" in table[key]["source"]
    assert "copied from IN" in table["max_bulk_out_per_uframe"]["source"]
    assert "not determined: max_bulk_out_per_uframe" in out
    assert f"sim:usb2?host={output}" in out


def test_fit_names_the_profile_and_escapes_what_toml_needs(model_result, tmp_path):
    result = model_result(load_profile("ehci"))
    odd = tmp_path / 'say "hi" \\ there.json'
    odd.write_bytes(result.read_bytes())
    output = tmp_path / "fitted.toml"
    assert main(["fit", str(odd), "-o", str(output), "--name", "lab-pc port 3"]) == 0
    profile = load_profile(str(output))
    assert profile.name == "lab-pc port 3"
    assert profile.sources["completion_latency_us"].startswith(f"fitted from {odd} on ")


def _edited(model_result, tmp_path, edit) -> Path:
    doc = json.loads(model_result(load_profile("xhci")).read_text())
    edit(doc)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return path


def _with_errors(doc):
    doc["points"][3]["errors"] = 2
    doc["errors"] = 2


def _incomplete(doc):
    doc["complete"] = False
    doc["error"] = "device gone: the simulator exited"


def _few(doc):
    doc["points"] = [p for p in doc["points"] if p["queue_depth"] == 1][:2] + \
        [p for p in doc["points"] if p["queue_depth"] == 4][:1]


def _shallow_only(doc):
    doc["points"] = [p for p in doc["points"] if p["queue_depth"] == 1]


@pytest.mark.parametrize(("edit", "words"), [
    (_with_errors, "has 2 data error(s) in 1 point(s)"),
    (_incomplete, "is incomplete (device gone: the simulator exited)"),
    (_few, "has too few points to fit (in: 2 length(s) at queue depth 1, 1 at 4 or more"),
    (_shallow_only, "0 at 4 or more"),
])
def test_fit_refuses_results_it_cannot_trust_or_fit(edit, words, model_result, tmp_path,
                                                     capsys):
    path = _edited(model_result, tmp_path, edit)
    output = tmp_path / "out.toml"
    err = refused(capsys, ["fit", str(path), "-o", str(output)], output)
    assert words in err, err


def test_fit_of_a_pcie_result_writes_a_root_profile_not_a_usb_one(tmp_path, capsys):
    output = tmp_path / "out.toml"
    assert main(["fit", str(FIXTURES / "sim_pcie_gen2x1.json"), "-o", str(output)]) == 0
    assert "completion_latency_ns" in output.read_text()
    assert "max_bulk_in_per_uframe" not in output.read_text()
    assert "sim:pcie?gen=2&latency_ns=" in capsys.readouterr().out


@pytest.mark.parametrize(("name", "words"), [
    ("myhost", "a host profile file ends in .toml"),
    ("myhost.json", "a host profile file ends in .toml"),
])
def test_fit_refuses_an_output_that_is_not_a_profile_file(name, words, model_result, tmp_path,
                                                          capsys):
    result = model_result(load_profile("ideal"))
    output = tmp_path / name
    err = refused(capsys, ["fit", str(result), "-o", str(output)], output)
    assert words in err


def test_fit_refuses_what_is_not_a_result(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"points": 3}')
    output = tmp_path / "out.toml"
    err = refused(capsys, ["fit", str(bad), "-o", str(output)], output)
    assert "bad.json" in err
    err = refused(capsys, ["fit", str(tmp_path / "missing.json"), "-o", str(output)], output)
    assert "missing.json" in err


def test_fit_says_when_the_device_nakked_and_the_curve_is_not_the_hosts_alone(
        model_result, tmp_path, capsys):
    def nak(doc):
        for point in doc["points"]:
            point["telemetry"]["in_naks"] = 10
            point["telemetry"]["in_tokens"] += 10

    path = _edited(model_result, tmp_path, nak)
    assert main(["fit", str(path), "-o", str(tmp_path / "nak.toml")]) == 0
    out, _ = capsys.readouterr()
    assert "!! the device NAKed 90 of " in out and "IN tokens" in out


def test_fit_to_stdout_is_the_profile_alone_and_the_report_goes_to_stderr(model_result,
                                                                          capfd):
    result = model_result(load_profile("xhci"))
    assert main(["fit", str(result), "-o", "-", "--name", "port a"]) == 0
    out, err = capfd.readouterr()
    table = tomllib.loads(out)
    assert table["name"] == "port a" and set(table) == {"name", *SCHEMA}
    assert "profile: written to stdout (name 'port a')" in err
