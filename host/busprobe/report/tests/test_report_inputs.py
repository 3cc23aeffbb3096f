"""busprobe report refuses what would lose data or crash, in one line, before writing anything."""

import json
from pathlib import Path

import pytest
from busprobe.cli import main

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "results"


def run(capsys, *argv):
    status = main(["report", *argv])
    err = capsys.readouterr().err
    return status, err


def test_report_refuses_to_write_over_one_of_its_inputs(tmp_path, capsys):
    result = tmp_path / "a.json"
    result.write_bytes((FIXTURES / "usb2_ideal.json").read_bytes())
    before = result.read_bytes()
    status, err = run(capsys, str(result), "-o", str(result))
    assert status == 2 and "is one of the results being reported" in err
    assert err.count("\n") == 1 and result.read_bytes() == before


def test_report_into_a_directory_names_the_file_to_give_and_leaves_no_temporary(tmp_path,
                                                                               capsys):
    out = tmp_path / "reports"
    out.mkdir()
    status, err = run(capsys, str(FIXTURES / "usb2_ideal.json"), "-o", str(out))
    assert status == 2 and "is a directory" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == [out] and not list(out.iterdir())


@pytest.mark.parametrize("points, message", [
    ("oops", "points is 'oops', not a list"),
    ([1], "points[0] is 1, not an object"),
    ("null-throughput", "points[0].throughput is None, not number"),
    ("negative-length", "points[0].length is -4, out of range"),
])
def test_a_result_with_malformed_points_is_one_line_not_a_traceback(tmp_path, capsys, points,
                                                                   message):
    doc = json.loads((FIXTURES / "usb2_ideal.json").read_text())
    if points == "null-throughput":
        doc["points"][0]["throughput"] = None
    elif points == "negative-length":
        doc["points"][0]["length"] = -4
    else:
        doc["points"] = points
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    status, err = run(capsys, str(bad), "-o", str(tmp_path / "r.html"))
    assert status == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "r.html").exists()
