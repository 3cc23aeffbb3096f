"""The null disk's checks of a USB pass (``guest/storage_checks.sh``): the guest kernel's own
storage drivers drive the simulated disk, and busprobe sweeps it as ``block:/dev/sdX``."""

from __future__ import annotations

from busprobe.protocol import uas
from busprobe.protocol.scsi import parse_telemetry
from busprobe.protocol.storage import DEFAULT_CAPACITY_BLOCKS


def _read_again(usb_pass, name: str) -> float:
    """The 4 KiB read sweep ``name`` (the guest's ``reads_again``) ran with 0 errors: its
    throughput."""
    assert usb_pass.status(name) == "rc=0 ", usb_pass.text(f"{name}.err")
    result = usb_pass.result(name)
    assert result["complete"] and result["errors"] == 0 and result["points"], result
    return result["points"][0]["throughput"]


def check_the_null_disk(usb_pass) -> None:
    """Bound by ``usb-storage`` (BOT at high speed), shown by lsblk with its capacity and
    INQUIRY identity, swept both ways with 0 errors through QEMU's emulated controller (and
    labelled so), an unknown opcode answered ILLEGAL REQUEST with the disk working after, and the
    device's telemetry showing the driver's 240-sector commands."""
    (disk,) = usb_pass.boot.find("storage-disk")
    assert "driver=usb-storage" in disk and "max_sectors_kb=120" in disk, disk
    node = disk.split()[1]
    assert usb_pass.status("storage-lsblk") == "rc=0 ", usb_pass.text("storage-lsblk.err")
    lsblk = usb_pass.text("storage-lsblk.out")
    assert str(DEFAULT_CAPACITY_BLOCKS * 512) in lsblk and "BUSPROBE" in lsblk, lsblk
    assert "NULL DISK" in lsblk, lsblk

    assert usb_pass.status("storage-sweep") == "rc=0 ", usb_pass.text("storage-sweep.err")
    sweep = usb_pass.result("storage-sweep")
    assert sweep["complete"] and sweep["errors"] == 0
    assert sweep["bus"]["kind"] == "usb-storage" and sweep["bus"]["protocol"] == "bot"
    assert sweep["bus"]["extra"]["driver"] == "usb-storage"
    assert sweep["bus"]["extra"]["max_sectors_kb"] == 120
    assert sweep["bus"]["extra"]["emulated_controller"] == "qemu ehci-pci"
    assert sweep["host"]["emulated"] == "qemu"
    assert sorted((p["direction"], p["length"]) for p in sweep["points"]) == \
        sorted((d, n) for d in ("read", "write") for n in (4096, 128 << 10))
    for point in sweep["points"]:
        assert point["errors"] == 0
        # 128 KiB is a 240-sector command and a 16-sector one: the kernel's count says so.
        telemetry = point["telemetry"]  # the last repeat's
        commands = telemetry[f"{point['direction']}_commands"]
        assert commands >= point["transfers"] * (2 if point["length"] > 120 << 10 else 1)

    bad = usb_pass.text("storage-bad-opcode.out") + usb_pass.text("storage-bad-opcode.err")
    assert "Illegal Request" in bad, bad
    _read_again(usb_pass, "storage-after")

    assert usb_pass.status("storage-telemetry") == "rc=0 "
    counters = parse_telemetry((usb_pass.out / "storage-telemetry.bin").read_bytes())
    assert counters["read_blocks_max"] == 240 and counters["write_blocks_max"] == 240, counters
    assert counters["write_mismatches"] == 0 and counters["check_conditions"] >= 1
    print("  => null disk behind ehci (QEMU's emulated controller: its figures): "
          f"{node} bound by usb-storage, {DEFAULT_CAPACITY_BLOCKS * 512} B; sweep "
          + ", ".join(f"{p['direction']} {p['length'] // 1024}K {p['throughput'] / 1e6:.2f} MB/s"
                      for p in sweep["points"])
          + f", 0 errors; opcode 0x0E: ILLEGAL REQUEST, then read on; device: {counters['reads']}"
          f" READs, {counters['writes']} WRITEs, at most {counters['read_blocks_max']} blocks")


def check_the_disk_through_uas(usb_pass) -> None:
    """The same disk rebound to ``uas`` in the same boot (the quirk dropped, usb-storage
    unbound, the interface probed again): uas switches to alternate 1 (the export announces its
    four pipes), lsblk shows the disk, and the block sweep reads and writes it with 0 errors
    through UAS IUs, labelled as QEMU's emulated controller's figures."""
    (disk,) = usb_pass.boot.find("storage-uas-disk")
    assert "driver=uas" in disk and "alternate=1" in disk, (
        disk, usb_pass.boot.find("storage-uas-dmesg"))
    assert usb_pass.status("storage-uas-lsblk") == "rc=0 ", usb_pass.text("storage-uas-lsblk.err")
    lsblk = usb_pass.text("storage-uas-lsblk.out")
    assert str(DEFAULT_CAPACITY_BLOCKS * 512) in lsblk and "NULL DISK" in lsblk, lsblk
    assert usb_pass.status("storage-uas-sweep") == "rc=0 ", usb_pass.text(
        "storage-uas-sweep.err")
    sweep = usb_pass.result("storage-uas-sweep")
    assert sweep["complete"] and sweep["errors"] == 0
    assert sweep["bus"]["protocol"] == "uas" and sweep["bus"]["extra"]["driver"] == "uas"
    assert sweep["bus"]["extra"]["emulated_controller"] == "qemu ehci-pci"
    # uas issues commands of up to 512 KiB (usb-storage: 120), so 128 KiB is one command
    assert sweep["bus"]["extra"]["max_sectors_kb"] > 120
    assert sorted((p["direction"], p["length"], p["queue_depth"]) for p in sweep["points"]) == \
        sorted((d, 128 << 10, q) for d in ("read", "write") for q in (1, 4))
    assert all(p["errors"] == 0 for p in sweep["points"])
    # The device's task set saw the tags uas kept outstanding (usb-storage's BOT never
    # counts there, so the most since the boot is uas's); none refused, none overlapped.
    assert usb_pass.status("storage-uas-telemetry") == "rc=0 "
    counters = parse_telemetry((usb_pass.out / "storage-uas-telemetry.bin").read_bytes())
    assert 1 <= counters["uas_tags_max"] <= uas.TASK_SET_DEPTH, counters
    assert counters["uas_task_set_full"] == counters["uas_overlapped_tags"] == 0, counters
    print("  => the same disk through uas (alternate 1, QEMU's emulated ehci: its figures): "
          + ", ".join(f"{p['direction']} {p['length'] // 1024}K QD {p['queue_depth']} "
                      f"{p['throughput'] / 1e6:.2f} MB/s" for p in sweep["points"])
          + f", 0 errors; at most {counters['uas_tags_max']} tags outstanding in the device")


def check_the_superspeed_disk(usb_pass) -> None:
    """The null disk at SuperSpeed (``usb3-storage``) behind xHCI: bound by ``usb-storage`` at
    5000M (BOT on alternate 0, the IGNORE_UAS quirk), lsblk shows its capacity and identity,
    and the block sweep reads and writes it with 0 errors, labelled as QEMU's emulated
    xHCI's."""
    (disk,) = usb_pass.boot.find("ss-storage-disk")
    assert "driver=usb-storage" in disk and "speed=5000" in disk, disk
    assert usb_pass.status("ss-storage-lsblk") == "rc=0 ", usb_pass.text("ss-storage-lsblk.err")
    lsblk = usb_pass.text("ss-storage-lsblk.out")
    assert str(DEFAULT_CAPACITY_BLOCKS * 512) in lsblk and "NULL DISK" in lsblk, lsblk
    assert usb_pass.status("ss-storage-sweep") == "rc=0 ", usb_pass.text("ss-storage-sweep.err")
    sweep = usb_pass.result("ss-storage-sweep")
    assert sweep["complete"] and sweep["errors"] == 0
    assert sweep["bus"]["protocol"] == "bot" and sweep["bus"]["extra"]["driver"] == "usb-storage"
    emulated = sweep["bus"]["extra"]["emulated_controller"]
    assert emulated.startswith("qemu ") and "xhci" in emulated, emulated
    assert sorted((p["direction"], p["length"]) for p in sweep["points"]) == \
        [("read", 128 << 10), ("write", 128 << 10)]
    assert all(p["errors"] == 0 for p in sweep["points"])
    assert usb_pass.ss_storage_seconds is not None  # the harness saw it plugged and done
    print("  => null disk at SuperSpeed behind xhci (QEMU's emulated controller: its figures): "
          f"{disk.split()[1]} bound by usb-storage at 5000M; sweep "
          + ", ".join(f"{p['direction']} {p['length'] // 1024}K {p['throughput'] / 1e6:.2f} MB/s"
                      for p in sweep["points"])
          + f", 0 errors; max_sectors_kb {sweep['bus']['extra']['max_sectors_kb']}; "
          f"{usb_pass.ss_storage_seconds:.0f} s of the pass from plug to done")


def check_the_superspeed_disk_through_uas(usb_pass) -> None:
    """The same SuperSpeed disk rebound to ``uas`` in the same boot: uas on alternate 1 at
    5000M with bulk streams (``lsusb -t``: Driver=uas, 5000M), the block sweep at 4 KiB and
    64 KiB x queue depth 1 and 4 with 0 errors, an opcode it lacks answered ILLEGAL REQUEST
    (sg_raw) and the disk still answering, and its telemetry: how many tags uas kept
    outstanding in the device's task set, none refused. Then a port reset from the guest
    (usbreset, what uas's error handling does): the export carries it out in the simulation,
    uas drives the disk on alternate 1 again and it reads its pattern. Then a READ that times
    out with its data moving: uas's error handler aborts it and resets the device, and the disk
    answers again (not offlined) and reads with 0 errors."""
    (disk,) = usb_pass.boot.find("ss-uas-disk")
    assert "driver=uas" in disk and "speed=5000" in disk and "alternate=1" in disk, (
        disk, usb_pass.boot.find("ss-uas-dmesg"))
    lsusb = usb_pass.text("ss-uas-lsusb.out")
    assert "Driver=uas, 5000M" in lsusb, lsusb
    assert usb_pass.status("ss-uas-sweep") == "rc=0 ", usb_pass.text("ss-uas-sweep.err")
    sweep = usb_pass.result("ss-uas-sweep")
    assert sweep["complete"] and sweep["errors"] == 0
    assert sweep["bus"]["protocol"] == "uas" and sweep["bus"]["extra"]["driver"] == "uas"
    assert sorted((p["direction"], p["length"], p["queue_depth"]) for p in sweep["points"]) == \
        sorted((d, n << 10, q) for d in ("read", "write") for n in (4, 64) for q in (1, 4))
    assert all(p["errors"] == 0 for p in sweep["points"])
    bad = usb_pass.text("ss-uas-bad-opcode.err") + usb_pass.text("ss-uas-bad-opcode.out")
    assert "Illegal Request" in bad, bad
    assert usb_pass.status("ss-uas-telemetry") == "rc=0 "
    counters = parse_telemetry((usb_pass.out / "ss-uas-telemetry.bin").read_bytes())
    assert 1 <= counters["uas_tags_max"] <= uas.TASK_SET_DEPTH, counters
    assert counters["uas_task_set_full"] == counters["uas_overlapped_tags"] == 0, counters
    assert usb_pass.status("ss-uas-reset") == "rc=0 ", usb_pass.text("ss-uas-reset.err")
    exported = (usb_pass.out / "exporter-ss-storage.log").read_text()
    assert "usbredir: bus reset and enumeration" in exported, exported[-2000:]
    (after,) = usb_pass.boot.find("ss-uas-reset-disk")
    assert "driver=uas" in after and "alternate=1" in after, after
    again = _read_again(usb_pass, "ss-uas-after-reset")
    # A READ that times out with its data moving: uas's error handler resets the device and
    # the disk comes back (it was offlined: "not ready after error recovery").
    eh = " | ".join(usb_pass.boot.find("ss-uas-eh "))
    assert "uas_eh_device_reset_handler success" in eh, eh
    assert "offline" not in eh and "not ready" not in eh, eh
    (eh_disk,) = usb_pass.boot.find("ss-uas-eh-disk")
    assert "state=running" in eh_disk, (eh_disk, eh)
    recovered = _read_again(usb_pass, "ss-uas-after-timeout")
    print("  => the SuperSpeed disk through uas with bulk streams (alternate 1, 5000M, QEMU's "
          "emulated xhci: its figures): "
          + ", ".join(f"{p['direction']} {p['length'] // 1024}K QD {p['queue_depth']} "
                      f"{p['throughput'] / 1e6:.2f} MB/s" for p in sweep["points"])
          + f", 0 errors; ILLEGAL REQUEST for opcode 0x0e; at most {counters['uas_tags_max']} "
          "tags outstanding in the device; after a port reset (carried out in the simulation) "
          f"uas reads {again / 1e6:.2f} MB/s, 0 errors; after a READ timed out with its data "
          f"moving, uas's error handler reset the disk and it reads {recovered / 1e6:.2f} MB/s, "
          "0 errors")
