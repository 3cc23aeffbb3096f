"""The founding documents' BOT-against-UASP ladder on a USB 3.0 port, through a real kernel: the
SuperSpeed null disk behind QEMU's xHCI, swept by the guest's block layer at 4 KiB and 2 MiB x
queue depth 1, 4 and 8 both ways through ``usb-storage`` (BOT, the IGNORE_UAS quirk) and then
``uas`` with bulk streams, 0 errors, and ``busprobe compare`` of the two runs (``make bench``:
minutes at QEMU's and the simulator's pace; the USB pass runs a shorter version in ``make
test``). The figures are QEMU's emulated controller's, and the comparison says so."""

import subprocess
import sys

import pytest
from busprobe.lengths import parse_size
from busprobe.protocol import uas
from busprobe.protocol.scsi import parse_telemetry
from busprobe.report.storage_compare import storage_rows
from busprobe.sim.vm.ladder_pass import LADDER_LENGTHS, LADDER_QUEUE_DEPTHS, run_ss_ladder_pass
from busprobe.units import Units

LADDER = sorted((direction, parse_size(length), depth) for direction in ("read", "write")
                for length in LADDER_LENGTHS for depth in LADDER_QUEUE_DEPTHS)


def _ladder(usb_pass, step: str, protocol: str, driver: str) -> dict:
    assert usb_pass.status(step) == "rc=0 ", usb_pass.text(f"{step}.err")
    sweep = usb_pass.result(step)
    assert sweep["complete"] and sweep["errors"] == 0, sweep.get("errors")
    assert sweep["bus"]["protocol"] == protocol and sweep["bus"]["extra"]["driver"] == driver
    assert sorted((p["direction"], p["length"], p["queue_depth"])
                  for p in sweep["points"]) == LADDER
    assert all(p["errors"] == 0 and p["throughput"] > 0 for p in sweep["points"])
    return sweep


@pytest.mark.bench
def test_bot_and_uas_ladders_through_the_guests_drivers_are_clean_and_compare_explains_them():
    usb_pass = run_ss_ladder_pass()
    print(f"\n== SuperSpeed disk ladder behind qemu-xhci ({usb_pass.boot.seconds:.0f} s) ==")
    for line in usb_pass.boot.marks:
        print(f"  {line}")
    assert "checks-done" in usb_pass.boot.marks, f"see {usb_pass.boot.console}"

    (bot_disk,) = usb_pass.boot.find("ss-storage-disk")
    assert "driver=usb-storage" in bot_disk and "speed=5000" in bot_disk, bot_disk
    (uas_disk,) = usb_pass.boot.find("ss-uas-disk")
    assert "driver=uas" in uas_disk and "alternate=1" in uas_disk, uas_disk
    assert "Driver=uas, 5000M" in usb_pass.text("ss-uas-lsusb.out")
    bot = _ladder(usb_pass, "ss-storage-sweep", "bot", "usb-storage")
    uas_run = _ladder(usb_pass, "ss-uas-sweep", "uas", "uas")
    bad = usb_pass.text("ss-uas-bad-opcode.err") + usb_pass.text("ss-uas-bad-opcode.out")
    assert "Illegal Request" in bad, bad

    # What uas kept in the device at queue depth 8: more than one tag, never past the task set,
    # none refused or overlapped.
    assert usb_pass.status("ss-uas-telemetry") == "rc=0 "
    counters = parse_telemetry((usb_pass.out / "ss-uas-telemetry.bin").read_bytes())
    assert 1 < counters["uas_tags_max"] <= uas.TASK_SET_DEPTH, counters
    assert counters["uas_task_set_full"] == counters["uas_overlapped_tags"] == 0, counters

    compare = subprocess.run(
        [sys.executable, "-m", "busprobe", "compare", str(usb_pass.out / "ss-storage-sweep.json"),
         str(usb_pass.out / "ss-uas-sweep.json")], capture_output=True, text=True, timeout=120)
    print(compare.stdout)
    assert compare.returncode == 0, compare.stderr
    assert "BOT vs UAS" in compare.stdout and "BOT is " in compare.stdout
    assert "the figures are the emulator's" in compare.stdout
    rows = storage_rows(bot, uas_run, Units.MB)[1:]
    assert sorted((row[0], parse_size(row[1]), int(row[2])) for row in rows) == LADDER, rows
    print(f"  at most {counters['uas_tags_max']} tags outstanding in the device (uas)")
