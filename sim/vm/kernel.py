"""The guest kernel: Debian's stock 6.1 kernel package, fetched by name at a pinned version.

``apt-get download`` fetches the package into the build directory and ``dpkg -x`` unpacks it
there (nothing is installed on this machine, ``/boot`` is not touched). The package is Debian's
signed amd64 build, so the guest runs the drivers a Debian user runs: ``xhci_hcd``, ``ehci-pci``,
``vfio-pci`` as modules, loaded from the initramfs (:mod:`.initramfs`).

Debian's security archive lists only the newest kernel ABI: once it moves on, the pinned package
cannot be fetched any more. Then the newest ``linux-image-6.1.0-N-amd64`` apt offers is used and
a warning names both (the harness checks behaviour that every 6.1 build shares); the pin is the
one place to update.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from busprobe.build_cache import build_root

__all__ = ["KERNEL_PACKAGE", "KERNEL_VERSION", "KERNEL_RELEASE", "GuestKernel", "fetch_kernel",
           "VmUnavailable"]

log = logging.getLogger(__name__)

#: The one pin: the package and its version (Debian 12 security archive, 2026-11).
KERNEL_RELEASE = "6.1.0-56-amd64"
KERNEL_PACKAGE = f"linux-image-{KERNEL_RELEASE}"
KERNEL_VERSION = "6.1.192-2"
_SAME_SERIES = re.compile(r"^linux-image-(6\.1\.0-(\d+)-amd64)$")


class VmUnavailable(RuntimeError):
    """Something the guest needs is missing on this machine (the message says how to get it)."""


@dataclass(frozen=True)
class GuestKernel:
    """An unpacked kernel package: the image to boot and its module tree."""

    package: str
    version: str
    image: Path
    modules: Path

    def module(self, name: str) -> Path:
        """The ``.ko`` file of module ``name`` (``-`` and ``_`` are the same, as for modprobe)."""
        wanted = name.replace("-", "_")
        for path in self.modules.rglob("*.ko"):
            if path.stem.replace("-", "_") == wanted:
                return path
        raise VmUnavailable(f"module {name} is not in {self.package} {self.version}")


def _unpacked(root: Path, package: str, version: str) -> GuestKernel:
    folder = root / "vm" / f"kernel-{version}"
    release = package.removeprefix("linux-image-")
    return GuestKernel(package, version, folder / "boot" / f"vmlinuz-{release}",
                       folder / "lib" / "modules" / release)


def _apt(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["apt-get", *args], cwd=cwd, capture_output=True, text=True)


def _newest_of_series() -> tuple[str, str] | None:
    """(package, version) of the newest 6.1 amd64 image apt knows, if any."""
    found = subprocess.run(["apt-cache", "search", "--names-only", r"^linux-image-6\.1\.0-"],
                           capture_output=True, text=True).stdout
    names = [line.split(" ", 1)[0] for line in found.splitlines()]
    series = sorted((int(m.group(2)), name) for name in names if (m := _SAME_SERIES.match(name)))
    if not series:
        return None
    package = series[-1][1]
    policy = subprocess.run(["apt-cache", "policy", package], capture_output=True,
                            text=True).stdout
    candidate = re.search(r"Candidate:\s*(\S+)", policy)
    return (package, candidate.group(1)) if candidate else None


def fetch_kernel(root: Path | None = None) -> GuestKernel:
    """The pinned kernel, unpacked under ``<build>/vm/kernel-<version>`` (fetched once)."""
    root = root or build_root()
    kernel = _unpacked(root, KERNEL_PACKAGE, KERNEL_VERSION)
    folder = kernel.image.parent.parent
    if kernel.image.is_file() and (folder / ".unpacked").is_file():
        return kernel
    for tool in ("apt-get", "apt-cache", "dpkg"):
        if shutil.which(tool) is None:
            raise VmUnavailable(f"fetching the guest kernel needs {tool} (a Debian machine)")
    download = root / "vm" / "kernel.download"
    shutil.rmtree(download, ignore_errors=True)
    download.mkdir(parents=True)
    wanted = f"{KERNEL_PACKAGE}={KERNEL_VERSION}"
    fetched = _apt("download", wanted, cwd=download)
    if fetched.returncode != 0:  # a fresh machine's package lists may be empty or stale
        _apt("update", "-qq")
        fetched = _apt("download", wanted, cwd=download)
    if fetched.returncode != 0 and (newest := _newest_of_series()) is not None:
        log.warning("%s is no longer in the archive; using %s=%s (update the pin in %s)",
                    wanted, newest[0], newest[1], __name__)
        kernel = _unpacked(root, *newest)
        folder = kernel.image.parent.parent
        if kernel.image.is_file() and (folder / ".unpacked").is_file():
            return kernel
        fetched = _apt("download", f"{newest[0]}={newest[1]}", cwd=download)
    debs = list(download.glob("*.deb"))
    if fetched.returncode != 0 or len(debs) != 1:
        raise VmUnavailable(f"apt-get download {wanted} failed: "
                            f"{(fetched.stderr or fetched.stdout).strip().splitlines()[-1:]}")
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run(["dpkg", "-x", str(debs[0]), str(folder)], check=True)
    shutil.rmtree(download)
    (folder / ".unpacked").write_text(f"{kernel.package}={kernel.version}\n")
    return kernel
