"""busprobe report: one self-contained HTML page, rendered by headless Chromium when present."""

import re
import shutil
import subprocess
import tempfile
import zlib
from pathlib import Path

import pytest
from busprobe.cli import main

FIXTURES = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "results"
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists()
                                        else None)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    status = main(["report", str(FIXTURES / "pcie_gen2x1.json"),
                   str(FIXTURES / "pcie_gen2x1_cap290.json"), "-o", str(out), "--units", "mib"])
    assert status == 0
    return out


def test_report_is_self_contained(report):
    text = report.read_text()
    assert text.startswith("<!DOCTYPE html>")
    # No external assets: every src is an embedded PNG, no links, scripts or stylesheets.
    sources = re.findall(r'src="([^"]*)"', text)
    assert sources and all(s.startswith("data:image/png;base64,") for s in sources)
    assert not re.search(r'href=|<script|<link|url\(|https?://', text)


def test_report_states_units_and_verdicts(report):
    text = report.read_text()
    assert "Throughput in MiB/s (1 MiB = 2^20 bytes)" in text
    assert "upstream-limited" in text and "link-limited" in text
    assert "upstream-limited at 289.51 MiB/s while the link model allows 412.40 MiB/s" in text
    # One overlay + one plot per run.
    assert text.count("data:image/png;base64,") == 3


def _png_size_and_distinct_rows(png: bytes) -> tuple[int, int, int]:
    """Width, height and how many distinct scanlines the PNG has (a blank page has one)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(png[16:20], "big")
    height = int.from_bytes(png[20:24], "big")
    data, pos = b"", 8
    while pos < len(png):
        length = int.from_bytes(png[pos:pos + 4], "big")
        kind = png[pos + 4:pos + 8]
        if kind == b"IDAT":
            data += png[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(data)
    stride = len(raw) // height
    rows = {raw[i * stride + 1:(i + 1) * stride] for i in range(height)}
    return width, height, len(rows)


def _screenshot(page: Path, shot: Path) -> tuple[int, int, int]:
    """Headless Chromium's 1280 x 2000 screenshot of ``page``: its size and distinct rows."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", f"--user-data-dir={profile}", f"--screenshot={shot}",
             "--window-size=1280,2000", page.as_uri()],
            check=True, capture_output=True, timeout=120)
    return _png_size_and_distinct_rows(shot.read_bytes())


def test_report_renders_in_headless_chromium(report, tmp_path):
    # `make install` sets the browser up (Debian's chromium); a skip here would check nothing.
    assert CHROMIUM, "chromium is missing: run `make install` as root, or apt install chromium"
    shot = tmp_path / "shot.png"
    width, height, distinct = _screenshot(report, shot)
    assert (width, height) == (1280, 2000)
    assert distinct > 200  # text, tables and plots, not a blank page


@pytest.fixture(scope="module")
def lab_report(tmp_path_factory):
    """The lab's page over every fixture run, stored in an SQLite store, grouped by chipset."""
    work = tmp_path_factory.mktemp("lab")
    url = f"sqlite:///{work / 'lab.sqlite'}"
    assert main(["store", "push", *map(str, sorted(FIXTURES.glob("*.json"))), "--store",
                 url]) == 0
    out = work / "lab.html"
    assert main(["report", "--store", url, "--group-by", "chipset", "--bus", "pcie",
                 "-o", str(out), "--units", "mib"]) == 0
    return out


def test_lab_report_is_self_contained_with_a_plot_per_group(lab_report):
    text = lab_report.read_text()
    sources = re.findall(r'src="([^"]*)"', text)
    assert sources and all(s.startswith("data:image/png;base64,") for s in sources)
    assert not re.search(r'href=|<script|<link|url\(|https?://', text)
    groups = re.findall(r'<tr class="[^"]*"><td class="l">', text)
    assert len(groups) == len(sources)  # one overlay per group row
    assert "<h2>Upstream-limited groups</h2>" in text
    assert "chipset simulated root complex, capped: pcie write upstream-limited" in text


def test_lab_report_renders_in_headless_chromium(lab_report, tmp_path):
    assert CHROMIUM, "chromium is missing: run `make install` as root, or apt install chromium"
    shot = tmp_path / "shot.png"
    width, height, distinct = _screenshot(lab_report, shot)
    assert (width, height) == (1280, 2000)
    assert distinct > 200
