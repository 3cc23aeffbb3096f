"""busprobe compare through the real argument parser, on recorded result fixtures."""

import json
from pathlib import Path

import pytest
from busprobe.cli import main

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "results"


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_ehci_vs_xhci_names_the_ehci_controller_and_its_packets_per_microframe(capsys):
    status, out, _ = run(capsys, "compare", str(FIXTURES / "usb2_xhci.json"),
                         str(FIXTURES / "usb2_ehci.json"))
    assert status == 0
    assert "B: EHCI controller, 10 packets per microframe" in out
    assert "A: xHCI controller, 12 packets per microframe" in out  # the field's spelling
    assert "B: in: host-limited at 40.88 MB/s while the bus allows 53.25 MB/s" in out
    assert "throughput in MB/s" in out


def test_capped_pcie_run_is_upstream_limited_in_mib(capsys):
    status, out, _ = run(capsys, "compare", str(FIXTURES / "pcie_gen2x1.json"),
                         str(FIXTURES / "pcie_gen2x1_cap290.json"), "--units", "mib")
    assert status == 0
    line = next(x for x in out.splitlines() if x.startswith("  B: write MPS 128"))
    assert "upstream-limited at 289.51 MiB/s while the link model allows 412.40 MiB/s" in line
    rows = [x.split() for x in out.splitlines() if x.startswith("write ")]
    assert {r[1]: r[-1] for r in rows if r[3] == "128"} == {"A": "link-limited",
                                                            "B": "upstream-limited"}


def test_link_trained_below_capability_explains_the_slower_run(capsys):
    _, out, _ = run(capsys, "compare", str(FIXTURES / "pcie_gen2x1.json"),
                    str(FIXTURES / "pcie_gen1_trained_low.json"))
    assert ("B: root port 0000:00:1c.0 link to 0000:01:00.0 trained at gen1 although both ends "
            "support gen2") in out
    assert "B: link gen1 x1 where A has gen2 x1" in out


def test_compare_writes_an_overlay_plot(capsys, tmp_path):
    png = tmp_path / "overlay.png"
    run(capsys, "compare", str(FIXTURES / "usb2_ideal.json"), str(FIXTURES / "usb2_ehci.json"),
        "--plot", str(png))
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


@pytest.mark.parametrize(("content", "message"), [
    ("{}", "not a busprobe result"), ("nope", "not JSON"),
])
def test_bad_input_is_one_line_error(capsys, tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    status, _, err = run(capsys, "compare", str(bad))
    assert status == 2 and message in err and err.count("\n") == 1


def test_incomplete_run_is_compared_and_flagged(capsys, tmp_path):
    doc = json.loads((FIXTURES / "usb2_ehci.json").read_text())
    doc["points"] = doc["points"][:10]
    doc["complete"], doc["error"] = False, "DeviceGone: simulator exited"
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(doc))
    _, out, _ = run(capsys, "compare", str(FIXTURES / "usb2_ideal.json"), str(partial))
    assert "B is INCOMPLETE: DeviceGone" in out


def test_simulated_ehci_vs_xhci_names_ehci_host_limited_by_packets_per_microframe(capsys):
    # Both recorded from the real simulation (sim:usb2?host=xhci / host=ehci).
    _, out, _ = run(capsys, "compare", str(FIXTURES / "sim_usb2_xhci.json"),
                    str(FIXTURES / "sim_usb2_ehci.json"))
    assert "B: EHCI controller, 10 packets per microframe" in out
    # EHCI's QD 4 curve still rises 1.9 % from 64K to 256K: no plateau, the longest figure.
    assert "B: in: host-limited at 40.35 MB/s while the bus allows 53.25 MB/s" in out
    rows = [x.split() for x in out.splitlines() if x.startswith("in ")]
    assert {r[1]: r[-1] for r in rows} == {"A": "host-limited", "B": "host-limited"}
    assert "40.35 (no plateau: rising)" in out and "QD1 vs 4: -59 % at 4K" in out
    # The number a user came for: how much slower the EHCI port is, both ways round.
    assert "B: in: 17.8 % below A (40.35 MB/s, host-limited, vs 49.09 MB/s; A is 21.7 % " \
        "faster)" in out
    assert "A: in: 0" not in out and "below B" not in out  # the faster port is the reference


def test_simulated_capped_run_against_the_design_model(capsys):
    _, out, _ = run(capsys, "compare", str(FIXTURES / "pcie_gen2x1.json"),
                    str(FIXTURES / "sim_pcie_gen2x1_cap290.json"), "--units", "mib")
    assert "B: write: upstream-limited at 292." in out
    assert "while the link model allows 442.28 MiB/s" in out


def test_simulated_uncapped_vs_capped_names_the_capped_run_upstream_limited(capsys):
    _, out, _ = run(capsys, "compare", str(FIXTURES / "sim_pcie_gen2x1.json"),
                    str(FIXTURES / "sim_pcie_gen2x1_cap290.json"), "--units", "mib")
    rows = {(r[0], r[1]): r[-1] for r in (x.split() for x in out.splitlines())
            if r and r[0] in ("write", "read") and r[1] in ("A", "B")}
    assert rows == {("write", "A"): "link-limited", ("read", "A"): "link-limited",
                    ("write", "B"): "upstream-limited", ("read", "B"): "upstream-limited"}
    assert "B: write: upstream-limited at 292.13 MiB/s while the link model allows 442.28 MiB/s" \
        in out


def _demo_runs():
    """The two demo ports (recorded sim:usb2 results) as compare reads them."""
    from busprobe.report.compare import load_runs

    return load_runs([str(FIXTURES / "sim_usb2_xhci.json"), str(FIXTURES / "sim_usb2_ehci.json")])


def test_the_overlay_legend_names_each_run_by_letter_and_device_as_the_tables_do():
    from busprobe.report.plots import overlay_label

    labels = [overlay_label(run, e) for run in _demo_runs() for e in run.entries
              if e["direction"] == "in"]
    assert labels == ["A xhci QD4: host-limited", "B ehci QD4: host-limited"]


def test_the_demo_xhci_out_ladder_plateau_starts_at_128k_in_the_report(tmp_path, capsys):
    # make demo's xHCI port, OUT at queue depth 1: 32K 46.75, 128K 48.76, 256K 48.94 MB/s.
    doc = json.loads((FIXTURES / "sim_usb2_xhci.json").read_text())
    template = next(p for p in doc["points"] if p["direction"] == "out")
    doc["points"] = [dict(template, length=n, queue_depth=1, throughput=mb * 1e6,
                          throughput_min=mb * 1e6, throughput_max=mb * 1e6, spread=0.0)
                     for n, mb in ((32768, 46.75), (131072, 48.76), (262144, 48.94))]
    doc.pop("ceilings", None)
    source = tmp_path / "demo_xhci.json"
    source.write_text(json.dumps(doc))
    assert main(["report", str(source), "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "plateau 48.85 MB/s (spread 0.4 %, from 128K)" in page
    assert "spread 4.5 %" not in page and "from 32K" not in page
    assert "plateau 48.85 MB/s (from 128K) is 91.7 % of the link model" in page
