"""The SuperSpeed null disk's BOT-against-UAS ladder through a real kernel (``make bench``).

:func:`run_ss_ladder_pass` boots the pinned kernel with ``qemu-xhci`` and nothing on it but a
late plug; the guest (``guest/ss_ladder_checks.sh``) asks for the disk, the harness starts
``busprobe sim serve`` on ``sim:usb3?design=storage`` and plugs it in, and the guest runs the
USB pass's SuperSpeed storage checks (``guest/ss_storage_checks.sh``) with the founding
documents' ladder: 4 KiB and 2 MiB blocks at queue depth 1, 4 and 8 both ways, through
``usb-storage`` on alternate 0 (BOT: the initramfs's IGNORE_UAS quirk) and then through ``uas``
on alternate 1 with bulk streams. At QEMU's emulated pace (the simulator behind it moves
~0.1-0.3 MB/s) the ladder takes minutes, which is why it is a bench and not part of the USB pass.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from busprobe.build_cache import build_root

from .initramfs import prepare_guest
from .late_plug import LateDisk, write_guest_env
from .qemu import Machine, boot
from .usb_pass import CONTROLLERS, SS_STORAGE_SELECTOR, UsbPass, busprobe_command
from .usbtest import build_helper, guest_settings

__all__ = ["run_ss_ladder_pass", "LADDER_LENGTHS", "LADDER_QUEUE_DEPTHS"]

#: The founding documents' IOmeter ladder (block sizes, queue depths).
LADDER_LENGTHS = ("4K", "2M")
LADDER_QUEUE_DEPTHS = (1, 4, 8)
#: The guest's SCSI command timeout for the disk during the ladder (Linux's default 30 s
#: assumes a real link: queued 2 MiB commands at the simulator's ~0.2 MB/s outlast it, and uas
#: aborts them and resets the device; ``guest/ss_storage_checks.sh``).
SCSI_TIMEOUT_SECONDS = 600


def run_ss_ladder_pass(*, timeout: float = 3600.0) -> UsbPass:
    """Boot a guest behind ``qemu-xhci``, plug in the SuperSpeed null disk and sweep the ladder
    through ``usb-storage`` (BOT) and then ``uas``; what the guest showed is a :class:`UsbPass`
    (``result("ss-storage-sweep")``, ``result("ss-uas-sweep")``)."""
    device, driver = CONTROLLERS["xhci"]
    kernel, initramfs, out = prepare_guest("ss-ladder")
    # As few transfers a repeat as the queue depth allows: at the emulator's pace a 2 MiB
    # point is seconds a transfer.
    points = (f"--lengths {','.join(LADDER_LENGTHS)} "
              f"--queue-depth {','.join(map(str, LADDER_QUEUE_DEPTHS))} --min-transfers 1")
    settings = {"BUSPROBE": str(busprobe_command()), "SS_BOT_POINTS": points,
                "SS_UAS_POINTS": points, "SS_SCSI_TIMEOUT": str(SCSI_TIMEOUT_SECONDS),
                **guest_settings(kernel, build_helper(build_root() / "vm" / "tools"))}
    write_guest_env(out, settings)
    disk = LateDisk(out, SS_STORAGE_SELECTOR, "busprobe-ss-disk", "ss-storage")

    script = Path(str(resources.files("busprobe.sim.vm.guest") / "ss_ladder_checks.sh"))
    machine = Machine(kernel.image, initramfs, script, out,
                      devices=["-device", f"{device},id=hc", *disk.qemu_args("hc.0")])
    try:
        result = boot(machine, timeout=timeout, console=out / "console.log",
                      on_mark=disk.on_mark)
    finally:
        status = disk.close()
    return UsbPass("xhci", driver, result, out, disk.log_path, status, False,
                   ss_storage=disk.exporter, ss_storage_seconds=disk.seconds)
