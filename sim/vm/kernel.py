"""The guest kernel: Debian's stock 6.1 kernel package, fetched by name at a pinned version.

``apt-get download`` fetches the package into the build directory and ``dpkg -x`` unpacks it
there (nothing is installed on this machine, ``/boot`` is not touched). The package is Debian's
signed amd64 build, so the guest runs the drivers a Debian user runs: ``xhci_hcd``, ``ehci-pci``,
``vfio-pci`` as modules, loaded from the initramfs (:mod:`.initramfs`).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from busprobe.build_cache import build_root

__all__ = ["KERNEL_PACKAGE", "KERNEL_VERSION", "KERNEL_RELEASE", "GuestKernel", "fetch_kernel",
           "VmUnavailable"]

#: The one pin: the package and its version (Debian 12 security archive, 2026-11).
KERNEL_RELEASE = "6.1.0-56-amd64"
KERNEL_PACKAGE = f"linux-image-{KERNEL_RELEASE}"
KERNEL_VERSION = "6.1.192-2"


class VmUnavailable(RuntimeError):
    """Something the guest needs is missing on this machine (the message says how to get it)."""


@dataclass(frozen=True)
class GuestKernel:
    """An unpacked kernel package: the image to boot and its module tree."""

    image: Path
    modules: Path

    def module(self, name: str) -> Path:
        """The ``.ko`` file of module ``name`` (``-`` and ``_`` are the same, as for modprobe)."""
        wanted = name.replace("-", "_")
        for path in self.modules.rglob("*.ko"):
            if path.stem.replace("-", "_") == wanted:
                return path
        raise VmUnavailable(f"module {name} is not in {KERNEL_PACKAGE} {KERNEL_VERSION}")


def fetch_kernel(root: Path | None = None) -> GuestKernel:
    """The pinned kernel, unpacked under ``<build>/vm/kernel-<version>`` (fetched once)."""
    folder = (root or build_root()) / "vm" / f"kernel-{KERNEL_VERSION}"
    kernel = GuestKernel(folder / "boot" / f"vmlinuz-{KERNEL_RELEASE}",
                         folder / "lib" / "modules" / KERNEL_RELEASE)
    if kernel.image.is_file() and (folder / ".unpacked").is_file():
        return kernel
    for tool in ("apt-get", "dpkg"):
        if shutil.which(tool) is None:
            raise VmUnavailable(f"fetching the guest kernel needs {tool} (a Debian machine)")
    download = folder.with_name(folder.name + ".download")
    shutil.rmtree(download, ignore_errors=True)
    download.mkdir(parents=True)
    command = ["apt-get", "download", f"{KERNEL_PACKAGE}={KERNEL_VERSION}"]
    fetched = subprocess.run(command, cwd=download, capture_output=True, text=True)
    if fetched.returncode != 0:
        # A fresh machine's package lists may be empty or older than the pin.
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True)
        fetched = subprocess.run(command, cwd=download, capture_output=True, text=True)
    debs = list(download.glob("*.deb"))
    if fetched.returncode != 0 or len(debs) != 1:
        raise VmUnavailable(f"apt-get download {KERNEL_PACKAGE}={KERNEL_VERSION} failed: "
                            f"{(fetched.stderr or fetched.stdout).strip().splitlines()[-1:]}")
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run(["dpkg", "-x", str(debs[0]), str(folder)], check=True)
    shutil.rmtree(download)
    (folder / ".unpacked").write_text(f"{KERNEL_PACKAGE}={KERNEL_VERSION}\n")
    return kernel
