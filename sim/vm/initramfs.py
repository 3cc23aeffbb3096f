"""The guest's initramfs: busybox, the kernel modules the checks need, and an ``/init``.

``/init`` loads the modules, mounts this machine's root filesystem read-only over 9p (as
virtme-ng does: the guest runs the very Python, venv and busprobe checkout the host has, nothing
is copied) under a tmpfs overlay at ``/host`` (writes stay in the guest; root's 0700 home is
made traversable there, so a user who is not root can run the host's Python), mounts a writable
9p share of the run's output folder at the same path it has on the host, and runs the guest
script with ``/host`` as the root (``switch_root``). It powers the machine off when the script
ends, so QEMU exits.

Kernel command-line parameters with ``=`` reach ``/init`` as environment variables:
``bp_script`` (the guest script) and ``bp_out`` (the output folder, also its first argument).

The archive is written here in the kernel's ``newc`` cpio format (no ``cpio`` tool needed) and
cached in the build directory by a hash of its contents.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

from busprobe.protocol import usb2

from .kernel import GuestKernel, VmUnavailable, fetch_kernel

__all__ = ["build_initramfs", "module_order", "newc_archive", "GUEST_MODULES", "MODULE_PARAMETERS",
           "MARK"]

#: Modules the guest loads (their dependencies are added): the two USB host controllers, 9p over
#: virtio for the shared filesystems, VFIO for the PCIe checks, and the storage stack the null
#: disk meets (``usb-storage`` for BOT, ``uas``, the SCSI core, ``sd_mod`` for /dev/sdX, ``sg``
#: for sg_raw's pass-through; ``crct10dif_generic`` first: ``sd_mod``'s CRC T10-DIF asks the
#: crypto API for it, and the initramfs has no modprobe to load it on demand).
GUEST_MODULES = ("xhci-pci", "ehci-pci", "9pnet_virtio", "9p", "virtio_pci", "overlay",
                 "vfio-pci", "vfio_iommu_type1", "scsi_mod", "crct10dif_generic", "sd_mod",
                 "sg", "usb-storage", "uas")
#: Parameters a module is loaded with (``insmod`` reads no kernel command line). The null disk
#: offers UAS on alternate 1, and usb-storage leaves any device uas could drive to uas (its
#: probe asks ``uas_use_uas_driver`` when the kernel has uas at all); the quirk ``u``
#: (US_FL_IGNORE_UAS) makes usb-storage drive its BOT alternate 0 first; the storage checks then
#: clear it and rebind the interface, so uas drives alternate 1 in the same boot.
MODULE_PARAMETERS = {"usb_storage": f"quirks={usb2.VID:04x}:{usb2.PID:04x}:u"}
#: Prefix of every line the guest prints for the harness.
MARK = "BUSPROBE-VM"
BUSYBOX = Path("/bin/busybox")

_INIT = f"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc && mount -t sysfs sysfs /sys && mount -t devtmpfs devtmpfs /dev
while read -r module parameters; do
    insmod "/modules/$module.ko" $parameters || echo "{MARK} insmod-failed $module"
done < /modules/order
mkdir -p /lower /upper /host
mount -t tmpfs tmpfs /upper && mkdir -p /upper/data /upper/work
if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 hostroot /lower \
    || ! mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/data,workdir=/upper/work /host
then
    echo "{MARK} init-failed mount hostroot"; poweroff -f
fi
mount -t proc proc /host/proc && mount -t sysfs sysfs /host/sys
# /run starts empty (the host's sockets and pid files are not the guest's); /tmp stays the
# host's below the overlay, so a checkout under /tmp is visible in the guest too.
mount -t devtmpfs devtmpfs /host/dev && mount -t tmpfs tmpfs /host/run
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 results "/host$bp_out" \\
    || echo "{MARK} init-failed mount results"
echo "{MARK} init-ready"
# switch_root, not chroot: systemd's tools (udevd, udevadm) ignore requests inside a chroot.
exec switch_root /host /bin/sh -c '/bin/sh "$0" "$1"; echo "{MARK} init-done rc=$?"
    echo o > /proc/sysrq-trigger; sleep 10' "$bp_script" "$bp_out"
"""


def _depends(module: Path) -> list[str]:
    """The ``depends=`` of a module's ``.modinfo`` (NUL-separated ``key=value`` strings)."""
    match = re.search(rb"\0depends=([^\0]*)\0", module.read_bytes())
    return [name for name in (match.group(1).decode().split(",") if match else []) if name]


def module_order(kernel: GuestKernel, wanted: tuple[str, ...] = GUEST_MODULES) -> list[Path]:
    """``wanted`` and everything they depend on, each after its dependencies."""
    order: list[Path] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        key = name.replace("-", "_")
        if key in seen:
            return
        seen.add(key)
        path = kernel.module(name)
        for dependency in _depends(path):
            visit(dependency)
        order.append(path)

    for name in wanted:
        visit(name)
    return order


def newc_archive(entries: list[tuple[str, int, bytes]]) -> bytes:
    """A ``newc`` cpio archive of ``(path, mode, data)``; directories have ``S_IFDIR`` modes."""
    out = bytearray()

    def add(name: str, mode: int, data: bytes, inode: int) -> None:
        fields = (inode, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0)
        out.extend(b"070701" + b"".join(b"%08X" % value for value in fields))
        out.extend(name.encode() + b"\0")
        out.extend(b"\0" * (-len(out) % 4))
        out.extend(data)
        out.extend(b"\0" * (-len(out) % 4))

    for inode, (name, mode, data) in enumerate(entries, start=1):
        add(name, mode, data, inode)
    add("TRAILER!!!", 0, b"", 0)
    return bytes(out)


def build_initramfs(kernel: GuestKernel, folder: Path) -> Path:
    """The initramfs for ``kernel`` in ``folder`` (reused while its contents are the same)."""
    if not BUSYBOX.is_file():
        raise VmUnavailable(f"{BUSYBOX} is missing: apt-get install busybox-static")
    modules = module_order(kernel)
    directory, executable, regular = 0o040755, 0o100755, 0o100644
    entries = [(name, directory, b"") for name in ("bin", "dev", "proc", "sys", "modules")]
    entries += [("bin/busybox", executable, BUSYBOX.read_bytes()),
                ("init", executable, _INIT.encode()),
                ("modules/order", regular,
                 "".join(f"{path.stem} {MODULE_PARAMETERS.get(path.stem.replace('-', '_'), '')}"
                         "\n" for path in modules).encode())]
    entries += [(f"modules/{path.name}", regular, path.read_bytes()) for path in modules]
    archive = newc_archive(entries)
    path = folder / f"initramfs-{hashlib.sha256(archive).hexdigest()[:16]}.cpio"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("initramfs-*.cpio"):
            old.unlink()
        partial = path.with_suffix(".partial")
        partial.write_bytes(archive)
        partial.replace(path)
    return path


def prepare_guest(run: str) -> tuple[GuestKernel, Path, Path]:
    """``(kernel, initramfs, out)`` for a guest boot named ``run``: the pinned kernel, its
    initramfs, and the run's output folder under the build root's ``vm/runs``, emptied."""
    from busprobe.build_cache import build_root

    root = build_root() / "vm"
    kernel = fetch_kernel()
    initramfs = build_initramfs(kernel, root / "initramfs")
    out = root / "runs" / run
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    return kernel, initramfs, out
