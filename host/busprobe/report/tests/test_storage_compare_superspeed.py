"""``busprobe compare``'s BOT-vs-UAS section for the SuperSpeed null disk swept over busprobe's
own framing (bus ``usb3-ss``): the runs pair by device and host, and the line saying why names
UAS's bulk streams, not the high-speed READY IUs."""

from busprobe.report.compare import Run
from busprobe.report.storage_compare import storage_sections

DEVICE = "sim:usb3?host=vl805&design=storage"


def _doc(protocol, points, device=DEVICE, profile="vl805"):
    return {"device": device, "bus": {"kind": "usb3-ss", "speed": "super", "protocol": protocol,
                                      "host_profile": profile, "extra": {}},
            "points": [{"direction": d, "length": n, "queue_depth": q, "throughput": t,
                        "errors": 0} for d, n, q, t in points]}


def test_superspeed_bot_and_uas_runs_of_one_disk_and_host_pair_and_say_why_with_streams():
    bot = Run("A", "bot.json", _doc("bot", [("in", 4096, 1, 100e6)]))
    uas = Run("B", "uas.json", _doc("uas", [("in", 4096, 1, 150e6), ("in", 4096, 8, 300e6)]))
    ((title, rows, notes),) = storage_sections([bot, uas])
    assert title.startswith("BOT vs UAS, A (--protocol bot) vs B (--protocol uas)")
    # busprobe's own BOT runs one command at a time: its QD 1 figure stands for QD 8.
    assert [(r[0], r[1], r[2], r[5]) for r in rows[1:]] == [
        ("in", "4K", "1", "33.3 %"), ("in", "4K", "8", "66.7 %")]
    assert "bulk streams" in notes[0] and "READY" not in notes[0]
    assert "66.7 % behind UAS (in 4K at queue depth 8, host vl805)" in notes[0]


def test_superspeed_runs_of_another_host_or_device_do_not_pair():
    bot = Run("A", "bot.json", _doc("bot", [("in", 4096, 1, 100e6)]))
    other_host = Run("B", "u.json", _doc("uas", [("in", 4096, 1, 150e6)], profile="ideal"))
    other_disk = Run("C", "v.json", _doc("uas", [("in", 4096, 1, 150e6)], device="sim:usb3"))
    assert storage_sections([bot, other_host, other_disk]) == []


def _vm_doc(protocol, throughput):
    """A guest's block sweep of the disk at 5000M behind QEMU's xHCI (the VM ladder)."""
    return {"device": "block:/dev/sda",
            "bus": {"kind": "usb-storage", "speed": "super", "protocol": protocol,
                    "host_profile": "xhci", "extra": {"driver": "usb-storage",
                                                      "controller_driver": "xhci_hcd",
                                                      "emulated_controller": "qemu xhci_hcd",
                                                      "max_sectors_kb": 1024}},
            "points": [{"direction": "read", "length": 2 << 20, "queue_depth": 8,
                        "throughput": throughput, "errors": 0}]}


def test_an_emulated_run_where_bot_is_not_behind_says_the_emulator_paces_both(tmp_path):
    bot = Run("A", "bot.json", _vm_doc("bot", 0.18e6))
    uas = Run("B", "uas.json", _vm_doc("uas", 0.17e6))
    ((_, rows, notes),) = storage_sections([bot, uas])
    assert rows[1][5] == "-5.9 %"
    assert notes[0].startswith("BOT is not behind UAS here (5.9 % ahead")
    assert "qemu xhci_hcd's pace decides both runs" in notes[0]
    assert "the figures are the emulator's" in notes[1]


def test_compare_of_the_vm_ladders_prints_every_point_without_a_model(capsys):
    # The VM ladder's two result documents (2026-12-03, QEMU 7.2 guest, kernel 6.1): compare
    # assesses them with the SuperSpeed usb-storage model (QEMU's controller has no profile:
    # the ideal host's figures), no traceback, and pairs the runs point by point.
    from pathlib import Path

    from busprobe.cli import main

    fixtures = Path(__file__).parent / "fixtures"
    assert main(["compare", str(fixtures / "vm-ss-ladder-bot.json"),
                 str(fixtures / "vm-ss-ladder-uas.json")]) == 0
    out = capsys.readouterr().out
    assert "BOT vs UAS, A (usb-storage) vs B (uas)" in out
    assert sum(line.split()[:1] in (["read"], ["write"]) and len(line.split()) > 5
               for line in out.splitlines()) >= 12
    assert "the figures are the emulator's" in out
    # QEMU's controller has no SuperSpeed profile: no BOT-vs-UAS model columns for it.
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["read"], ["write"])
            and len(line.split()) == 11]
    assert rows and all(row[-2:] == ["-", "-"] for row in rows), rows
