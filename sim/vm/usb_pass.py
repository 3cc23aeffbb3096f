"""One USB pass: the simulated device exported to a guest behind one emulated host controller.

:func:`run_usb_pass` starts ``busprobe sim serve`` (:mod:`.exporter`), boots the pinned kernel
with ``qemu-xhci`` or ``usb-ehci`` and the export attached to it through ``usb-redir``, and runs
``guest/usb_checks.sh`` there: ``busprobe list``, ``topology`` and ``sweep`` against
``usb:1209:0001`` through the guest kernel's real drivers, usbfs and sysfs, then Linux's usbtest
against the device (:mod:`.usbtest`). When the guest starts its last sweep the harness kills the
exporter at its first 64 KiB transfer: an unplug in the middle of a sweep. Behind EHCI the null
disk (``sim:usb2?design=storage``) is then plugged in (:mod:`.late_plug`) and the guest's
``usb-storage``, ``sd`` and block layer drive it (``guest/storage_checks.sh``). Behind xHCI, after
the SuperSpeed checks, the SuperSpeed null disk (``sim:usb3?design=storage``) is plugged in and
swept as a block device (``guest/ss_storage_checks.sh``), then two more exports of ``sim:usb2``
are plugged in and swept alone and together (``guest/pair_checks.sh``, issue 30). What the guest
printed and wrote is in :class:`UsbPass`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from busprobe.backends.usb.libusb import udev_rule_path
from busprobe.build_cache import build_root
from busprobe.protocol import usb2, usb3

from .exporter import Exporter
from .initramfs import prepare_guest
from .late_plug import LateDisk, LatePlug, write_guest_env
from .qemu import Boot, Machine, boot
from .usbtest import build_helper, case_lines, guest_settings

__all__ = ["run_usb_pass", "UsbPass", "CONTROLLERS", "SELECTOR", "SS_SELECTOR",
           "STORAGE_SELECTOR", "STORAGE_CONTROLLER", "SS_STORAGE_SELECTOR", "PAIR_SELECTOR",
           "PAIR_CONTROLLER", "busprobe_command"]

#: Controller kind -> (QEMU device, the guest driver that must bind it).
CONTROLLERS = {"xhci": ("qemu-xhci", "xhci_hcd"), "ehci": ("usb-ehci", "ehci-pci")}
SELECTOR = f"usb:{usb2.VID:04x}:{usb2.PID:04x}"
#: The unplug sweep's long point; the exporter is killed at its first transfer.
UNPLUG_AT = f"bulk {usb2.EP_IN:#04x} 1 x 65536 B"
#: The SuperSpeed device, exported beside the USB 2.0 one to the xHCI guest (the same VID:PID:
#: the serial tells them apart); its unplug comes at the first 1 MiB transfer.
SS_SELECTOR = f"usb:{usb3.VID:04x}:{usb3.PID:04x}#{usb3.SERIAL}"
SS_UNPLUG_AT = f"bulk {usb3.EP_IN:#04x} 1 x 1048576 B"
#: The null disk, plugged in after the probe is unplugged, behind this controller only (one
#: guest boot per controller runs every check; EHCI is where BOT's turnaround weighs most).
STORAGE_SELECTOR = "sim:usb2?design=storage"
STORAGE_CONTROLLER = "ehci"
#: The null disk at SuperSpeed, plugged in behind xHCI after the SuperSpeed probe (same VID:PID
#: and serial) is unplugged, and unplugged again when its checks are done.
SS_STORAGE_SELECTOR = "sim:usb3?design=storage"
#: Two USB 2.0 devices swept together, plugged in after the SuperSpeed checks, behind this
#: controller only: they carry one serial, so the guest names each by its port path.
PAIR_SELECTOR = f"usb:{usb2.VID:04x}:{usb2.PID:04x}#{usb2.SERIAL}"
PAIR_CONTROLLER = "xhci"
#: A user who is not root, before and after the udev rule: usbfs permissions, the same behind
#: any controller, so checked behind this one only (25 s of a pass).
PERMISSIONS_CONTROLLER = "xhci"


@dataclass
class UsbPass:
    """What one pass showed."""

    controller: str
    driver: str
    boot: Boot
    out: Path
    exporter_log: Path
    exporter_status: int | None
    unplugged: bool
    superspeed: Exporter | None = None
    ss_unplugged: bool = False
    storage: Exporter | None = None
    pair: tuple[Exporter, ...] = ()
    ss_storage: Exporter | None = None
    #: Wall seconds from the guest asking for the SuperSpeed disk to its checks being done.
    ss_storage_seconds: float | None = None

    def result(self, name: str) -> dict[str, Any] | None:
        """A result document the guest wrote (None if it wrote none)."""
        path = self.out / f"{name}.json"
        return json.loads(path.read_text()) if path.is_file() else None

    def text(self, name: str) -> str:
        path = self.out / name
        return path.read_text(errors="replace") if path.is_file() else ""

    def status(self, step: str) -> str | None:
        """The guest's marker line of ``step`` (``rc=N`` and its first error line)."""
        lines = self.boot.find(f"{step} rc=")
        return lines[0][len(step) + 1:] if lines else None


def busprobe_command() -> Path:
    """The ``busprobe`` console script of this interpreter's environment, as the guest runs it
    (the guest's root is this machine's)."""
    script = Path(sys.executable).parent / "busprobe"
    if not script.is_file():
        raise RuntimeError(f"no busprobe console script beside {sys.executable}")
    return script


def _unplug_at(exporter: Exporter, line: str) -> list[bool]:
    """Kill ``exporter`` at its first log line containing ``line``; the list says if it did."""
    done = [False]

    def watch(log_line: str) -> bool:
        if line in log_line:
            exporter.kill()
            done[0] = True
        return done[0]
    exporter.when(watch)
    return done


def run_usb_pass(controller: str, *, timeout: float = 900.0,
                 ss_storage_selector: str = SS_STORAGE_SELECTOR,
                 run: str | None = None) -> UsbPass:
    """Boot a guest with the exported device behind ``controller`` (``xhci``/``ehci``); behind
    xHCI the SuperSpeed device is exported too, on the controller's SuperSpeed ports, and the
    SuperSpeed null disk (``ss_storage_selector``) plugged in late. ``run`` names the run's
    directory under ``build/vm/runs`` (``usb-CONTROLLER``)."""
    device, driver = CONTROLLERS[controller]
    kernel, initramfs, out = prepare_guest(run or f"usb-{controller}")
    (out / "user").mkdir(mode=0o777)  # the guest's user who is not root writes here
    (out / "user").chmod(0o777)
    exporter = Exporter(out / "exporter.log")
    superspeed = Exporter(out / "exporter-ss.log", selector="sim:usb3", name="busprobe-ss") \
        if controller == "xhci" else None
    settings = {"BUSPROBE": str(busprobe_command()), "RULE": str(udev_rule_path()),
                "SELECTOR": f"{SELECTOR}#{usb2.SERIAL}",
                **guest_settings(kernel, build_helper(build_root() / "vm" / "tools"))}
    if superspeed is not None:
        settings["SS_SELECTOR"] = SS_SELECTOR
        settings["SS_STORAGE"] = "1"
    # Started when the guest asks for it, stopped when it is done (an idle simulator would
    # share the cores with the checks around it).
    ss_disk = LateDisk(out, ss_storage_selector, "busprobe-ss-disk", "ss-storage") \
        if superspeed is not None else None
    storage = Exporter(out / "exporter-storage.log", selector=STORAGE_SELECTOR,
                       name="busprobe-disk") if controller == STORAGE_CONTROLLER else None
    late = LatePlug("busprobe-disk") if storage is not None else None
    if storage is not None:
        settings["STORAGE"] = "1"
    # The pair is started when the guest asks for it (idle simulators would share the cores
    # with everything before).
    pair_plugs = [LatePlug(f"busprobe-pair{i}") for i in (1, 2)] \
        if controller == PAIR_CONTROLLER else []
    pair: list[Exporter] = []
    if pair_plugs:
        settings["PAIR_SELECTOR"] = PAIR_SELECTOR
    if controller == PERMISSIONS_CONTROLLER:
        settings["PERMISSIONS"] = "1"
    write_guest_env(out, settings)
    (out / "usbtest-cases.txt").write_text(case_lines(controller))
    unplugs: dict[str, list[bool]] = {}

    def on_mark(line: str) -> None:
        if line == "unplug-started":
            unplugs["usb2"] = _unplug_at(exporter, UNPLUG_AT)
        elif line == "ss-unplug-started" and superspeed is not None:
            unplugs["ss"] = _unplug_at(superspeed, SS_UNPLUG_AT)
        elif line.startswith("ss-storage-") and ss_disk is not None:
            ss_disk.on_mark(line)
        elif line == "storage-plug" and late is not None and storage is not None:
            assert storage.port is not None
            late.plug(storage.port)
        elif line == "pair-plug":
            for index, plug in enumerate(pair_plugs, 1):
                pair.append(Exporter(out / f"exporter-pair{index}.log",
                                     name=f"busprobe-pair{index}"))
                assert pair[-1].port is not None
                plug.plug(pair[-1].port)

    script = Path(str(resources.files("busprobe.sim.vm.guest") / "usb_checks.sh"))
    # qemu-xhci has four root ports by default and puts a fifth device behind a full-speed hub
    # of its own; the pair needs ports 3 and 4 after the probe and the SuperSpeed device.
    ports = ",p2=8,p3=8" if pair_plugs else ""
    devices = ["-device", f"{device},id=hc{ports}", *exporter.qemu_args("hc.0")]
    if superspeed is not None:
        devices += superspeed.qemu_args("hc.0")
    for plug in (late, ss_disk):
        if plug is not None:
            devices += plug.qemu_args("hc.0")
    for plug in pair_plugs:
        devices += plug.qemu_args("hc.0")
    machine = Machine(kernel.image, initramfs, script, out, devices=devices)
    try:
        result = boot(machine, timeout=timeout, console=out / "console.log", on_mark=on_mark)
    finally:
        status = exporter.stop()
        for other in (superspeed, storage, *pair):
            if other is not None:
                other.stop()
        for plug in (late, ss_disk, *pair_plugs):
            if plug is not None:
                plug.close()
    return UsbPass(controller, driver, result, out, exporter.log_path, status,
                   unplugs.get("usb2", [False])[0], superspeed, unplugs.get("ss", [False])[0],
                   storage, tuple(pair), ss_disk.exporter if ss_disk else None,
                   ss_disk.seconds if ss_disk else None)
