"""``busprobe sweep --protocol bot|uas`` of the null disk (``sim:usb2?design=storage``) through
the CLI, in Verilator: busprobe's own framing over the transfer queue (alternate 0 BOT, 1 UAS),
one READ(10)/WRITE(10) per transfer, every byte read checked against the LBA pattern and every
written one by the disk; then ``compare`` of the two says how far BOT is behind and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from busprobe.cli import main

pytestmark = pytest.mark.sim

DISK = "sim:usb2?host=xhci&design=storage"


def _sweep(tmp_path: Path, protocol: str, depths: str) -> dict:
    out = tmp_path / f"{protocol}.json"
    assert main(["sweep", "--device", DISK, "--protocol", protocol, "--direction", "both",
                 "--lengths", "120K", "--queue-depth", depths, "--no-progress",
                 "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_bot_and_uas_sweeps_of_the_disk_are_clean_and_compare_says_bot_is_behind(
        usb2_storage_model, tmp_path, capsys):
    bot = _sweep(tmp_path, "bot", "1")
    uas = _sweep(tmp_path, "uas", "1,4")
    for doc, protocol in ((bot, "bot"), (uas, "uas")):
        assert doc["bus"]["protocol"] == protocol and doc["bus"]["kind"] == "usb2-hs"
        for point in doc["points"]:
            assert point["errors"] == 0, point["error_detail"]
            # The disk counted every data byte (UAS's IUs go on pipes it does not count) and
            # no written word that was not the LBA pattern.
            detail = point["error_detail"]
            assert detail["device_byte_mismatch"] == detail["device_errors"] == 0
            assert point["telemetry"]["out_bytes" if point["direction"] == "out"
                                      else "in_bytes"] > 0
            # The model of each framing (one command per transfer, the run the point made,
            # over its start phase) bounds the figure, and the disk meets it within 1 %.
            assert 0.99 < point["throughput"] / point["ceiling"] <= 1.0, point
    figures = {(p["direction"], p["queue_depth"]): p["throughput"] for p in uas["points"]}
    bot_in = next(p["throughput"] for p in bot["points"] if p["direction"] == "in")
    assert figures[("in", 4)] > figures[("in", 1)] > bot_in
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "bot.json"), str(tmp_path / "uas.json")]) == 0
    text = capsys.readouterr().out
    assert "BOT vs UAS, A (--protocol bot) vs B (--protocol uas)" in text
    assert "each transfer is one READ(10)/WRITE(10) command (busprobe's own framing)" in text
    behind = (1 - bot_in / figures[("in", 4)]) * 100
    assert f"BOT is {behind:.1f} % behind UAS (in 120K at queue depth 4, host xhci)" in text
