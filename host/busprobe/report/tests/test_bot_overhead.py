"""``busprobe compare`` of a ``--protocol bot`` run and a streamed run: the overhead per length.

The fixtures are real ``sim:usb2?host=xhci`` sweeps (512 B..256 KiB, IN and OUT; streamed at
queue depth 1 and 4, BOT at 1) made by this busprobe.
"""

import json
from pathlib import Path

import pytest
from busprobe.cli import main

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "results"
BOT, STREAM = FIXTURES / "sim_usb2_bot_xhci.json", FIXTURES / "sim_usb2_stream_xhci.json"


def compare(capsys, *paths):
    status = main(["compare", *map(str, paths)])
    out, err = capsys.readouterr()
    assert status == 0, err
    return out


def overhead_table(out):
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("BOT overhead"))
    rows = []
    for line in lines[start + 3:]:
        if not line.startswith(("in ", "out ")):
            break
        rows.append(line.split())
    return lines[start], rows, lines[start + 3 + len(rows):]


def test_compare_names_the_bot_overhead_per_length_with_its_explanation(capsys):
    out = compare(capsys, STREAM, BOT)
    assert "B = " in out and "protocol bot)" in out
    title, rows, notes = overhead_table(out)
    assert title == ("BOT overhead, B (bot) vs A (stream), host xhci: "
                     "overhead = 1 - BOT / stream")
    assert [(r[0], r[1]) for r in rows] == [(d, n) for d in ("in", "out")
                                            for n in ("512", "2K", "4K", "16K", "64K", "256K")]
    for direction in ("in", "out"):
        measured = [float(r[4]) for r in rows if r[0] == direction]
        model = [float(r[8]) for r in rows if r[0] == direction]
        assert measured == sorted(measured, reverse=True)  # a cost per command: small ones pay
        assert measured[0] > 60 and measured[-1] < 5
        assert all(abs(m - p) < 1.0 for m, p in zip(measured, model, strict=True))
    assert "three bulk transfers" in notes[0]
    assert "Host profile xhci: completion 20 µs, resubmit 30 µs" in notes[1]


def test_no_overhead_section_without_a_pair_on_the_same_host(capsys):
    assert "BOT overhead" not in compare(capsys, BOT)
    assert "BOT overhead" not in compare(capsys, FIXTURES / "sim_usb2_ehci.json", BOT)
    assert "BOT overhead" not in compare(capsys, STREAM, FIXTURES / "sim_usb2_xhci.json")


def test_a_bot_result_carries_its_protocol_and_an_unknown_one_is_refused(capsys, tmp_path):
    doc = json.loads(BOT.read_text())
    assert doc["bus"]["protocol"] == "bot"
    assert doc["points"][0]["device_throughput"] is None
    assert "BOT model allows" in doc["ceilings"][0]["explanation"]
    doc["bus"]["protocol"] = "scsi"
    bad = tmp_path / "scsi.json"
    bad.write_text(json.dumps(doc))
    assert main(["compare", str(bad)]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "bus.protocol is 'scsi', not one of stream, bot, uas")


def test_fit_refuses_a_bot_sweep_in_one_line(capsys, tmp_path):
    assert main(["fit", str(BOT), "-o", str(tmp_path / "p.toml")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("is a --protocol bot sweep: fit needs streamed transfers (its model has "
                        "no framing), run the sweep without --protocol")
    assert not (tmp_path / "p.toml").exists()


@pytest.mark.parametrize("path", [STREAM, FIXTURES / "usb2_ehci.json"])
def test_a_streamed_result_with_or_without_the_key_is_stream(path):
    from busprobe.result_schema import protocol_of
    from busprobe.results import load_results

    assert protocol_of(load_results(path)) == "stream"


def test_the_html_report_has_the_bot_overhead_table(tmp_path):
    page = tmp_path / "r.html"
    assert main(["report", str(STREAM), str(BOT), "-o", str(page)]) == 0
    html = page.read_text()
    assert "<h3>BOT overhead, B (bot) vs A (stream), host xhci" in html
    assert "<td>61.3 %</td>" in html  # IN 512 B, as compare prints it
