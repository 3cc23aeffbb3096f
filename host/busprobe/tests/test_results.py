"""Result documents: JSON/CSV round trip, loading errors, the printed table, the plot."""

import csv
import json
import os
import re
import stat
from pathlib import Path

import pytest
from busprobe.plot import plot_results, series_of
from busprobe.results import (
    ceilings_of,
    finish_document,
    format_table,
    load_results,
    new_document,
    write_csv,
    write_json,
)
from busprobe.sweep import Sweep, SweepPlan
from busprobe.units import Units


@pytest.fixture
def document(loopback_factory):
    Loopback, _ = loopback_factory
    transport = Loopback()
    plan = SweepPlan(("in", "out"), (512, 2048, 8192), (1, 4))
    doc = new_document("sim:loop", command=["busprobe", "sweep"])
    doc["bus"] = transport.bus.to_json()
    doc["points"] = [p.to_json() for p in Sweep(transport, plan).run()]
    return finish_document(doc)


def test_json_round_trip_keeps_every_key_and_value(document, tmp_path):
    path = tmp_path / "deep" / "r.json"
    write_json(document, str(path))
    assert load_results(path) == json.loads(json.dumps(document))
    assert {"busprobe_version", "device", "bus", "topology", "points", "host", "command",
            "started", "finished", "units", "complete"} <= set(document)
    assert document["units"] == "bytes/s" and document["command"] == ["busprobe", "sweep"]


def test_csv_has_one_row_per_point_in_bytes_per_second(document, tmp_path):
    path = tmp_path / "r.csv"
    write_csv(document, str(path))
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == len(document["points"]) == 12
    for row, point in zip(rows, document["points"], strict=True):
        assert (row["direction"], int(row["length"]), int(row["queue_depth"])) == \
            (point["direction"], point["length"], point["queue_depth"])
        assert float(row["throughput_Bps"]) == pytest.approx(point["throughput"])
        assert row["mps"] == ""  # None is an empty cell, not "None"


@pytest.mark.parametrize("content, message", [
    ("{", "is not JSON"), ("[1, 2]", "not a JSON object"), ('{"points": []}', "missing"),
    ('{"busprobe_version": "9", "device": "x", "bus": {}, "points": [], "schema": 99}',
     "newer busprobe"),
])
def test_loading_something_else_is_a_one_line_value_error(tmp_path, content, message):
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        load_results(path)
    with pytest.raises(ValueError, match="cannot read"):
        load_results(tmp_path / "absent.json")


FIXTURE = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "results" / "usb2_ideal.json"


@pytest.mark.parametrize("change, message", [
    # Each of these reached a reader (compare, report, plot) and ended in a traceback there.
    (lambda doc: doc.update(device=None), "device is None, not str"),
    (lambda doc: doc.update(bus=None), "bus is None, not an object"),
    (lambda doc: doc["bus"].pop("kind"), "bus has no kind"),
    (lambda doc: doc.update(ceilings=1.5), "ceilings is 1.5, not a list"),
    (lambda doc: doc.update(ceilings=[{"direction": "in", "verdict": "fast", "explanation": ""}]),
     "verdict is 'fast', not one of"),
    (lambda doc: doc["points"][0].update(direction="sideways"), "direction is 'sideways'"),
    (lambda doc: doc["points"][0].update(throughput=-1.0), "throughput is -1.0, out of range"),
    (lambda doc: doc.update(schema=True), "schema is True"),
    (lambda doc: doc.update(display_units="furlongs"), "display_units is 'furlongs'"),
])
def test_a_result_breaking_the_layout_is_refused_naming_the_key(tmp_path, change, message):
    doc = json.loads(FIXTURE.read_text())
    change(doc)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=re.escape(message)) as error:
        load_results(path)
    assert "\n" not in str(error.value)


def test_a_result_with_nan_throughput_is_not_json(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(FIXTURE.read_text().replace('"throughput": ', '"throughput": NaN, "x": ', 1))
    with pytest.raises(ValueError, match="NaN is not a JSON number"):
        load_results(path)


def test_every_shipped_result_fixture_fits_the_layout():
    fixtures = sorted(FIXTURE.parent.glob("*.json"))
    assert fixtures, f"no result fixtures in {FIXTURE.parent}"
    for path in fixtures:
        load_results(path)


def test_table_shows_units_and_switches_to_mib(document):
    mb = format_table(document, Units.MB)
    mib = format_table(document, Units.MIB)
    assert "host MB/s" in mb and "host MiB/s" in mib
    first = document["points"][0]["throughput"]
    assert f"{first / 1e6:.2f}" in mb and f"{first / 2**20:.2f}" in mib
    assert len(mb.splitlines()) >= 2 + len(document["points"])


def test_ceilings_are_read_back_as_a_list_in_either_form():
    assert ceilings_of({"ceiling": {"verdict": "link-limited"}}) == [{"verdict": "link-limited"}]
    assert ceilings_of({"ceilings": [{"a": 1}, {"b": 2}]}) == [{"a": 1}, {"b": 2}]
    assert ceilings_of({}) == []


def test_plot_has_one_series_per_direction_and_queue_depth_and_is_a_png(document, tmp_path):
    assert sorted(series_of(document)) == [("in", 1, None, None), ("in", 4, None, None),
                                           ("out", 1, None, None), ("out", 4, None, None)]
    path = tmp_path / "p.png"
    plot_results([document, document], path, units=Units.MIB, names=["a", "b"])
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_a_direction_the_verdict_cannot_judge_does_not_cost_the_others(document, monkeypatch):
    import busprobe.verdict

    def assess(doc, units=None):
        directions = {p["direction"] for p in doc["points"]}
        if "out" in directions:
            raise ValueError("direction 'out' does not exist on this bus")
        return [{"direction": d, "verdict": "link-limited"} for d in sorted(directions)]

    monkeypatch.setattr(busprobe.verdict, "assess", assess)
    doc = finish_document(document)
    assert ceilings_of(doc) == [{"direction": "in", "verdict": "link-limited"}]


def test_saved_results_get_the_users_umask_permissions_not_0600(document, tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "r.json"
        write_json(document, str(path))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_verdict_rule_that_breaks_loses_no_point(document, monkeypatch, caplog):
    """A bug in a verdict rule (here an AttributeError) leaves the run without a verdict, never
    without its points."""
    import busprobe.verdict

    def broken(*args, **kwargs):
        raise AttributeError("'GroupEvidence' object has no attribute 'queue_depth'")

    monkeypatch.setattr(busprobe.verdict, "assess", broken)
    points = list(document["points"])
    doc = finish_document(document)
    assert doc["points"] == points and doc["complete"]
    assert ceilings_of(doc) == []
    assert "no verdict for in: AttributeError" in caplog.text
