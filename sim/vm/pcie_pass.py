"""The PCIe pass: busprobe's real PCIe backend on a q35 guest with an IOMMU.

The guest has an Intel 82574 (QEMU's ``e1000e``) behind a ``pcie-root-port`` and an emulated
``intel-iommu`` (``intel_iommu=on``); no driver claims the endpoint (its module is not loaded).
``guest/pcie_checks.sh`` reads the path with ``busprobe topology`` from the kernel's config space,
runs the MPS/MRRS guard there, binds the endpoint to ``vfio-pci`` and opens it through busprobe's
VFIO code, then runs ``busprobe sweep`` on it, which must stop at "not a busprobe" device; so must
a sweep of a second endpoint whose BAR0 is smaller than busprobe's (QEMU's ``vmxnet3``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .initramfs import prepare_guest
from .qemu import Boot, Machine, boot

__all__ = ["run_pcie_pass", "PciePass", "ENDPOINT", "SMALL_BAR_ENDPOINT", "ROOT_PORT_DEVICES"]

#: The endpoint's address: bus 1 is the secondary bus of the first root port.
ENDPOINT = "0000:01:00.0"
#: A second endpoint (a VMware vmxnet3, behind the second root port), whose BAR0 is 4 KiB.
SMALL_BAR_ENDPOINT = "0000:02:00.0"
#: QEMU arguments of the PCIe topology (the NICs need no network: they are never used as one).
ROOT_PORT_DEVICES = ["-device", "intel-iommu,intremap=on",
                     "-device", "pcie-root-port,id=rp1,chassis=1,slot=1",
                     "-device", "e1000e,bus=rp1",
                     "-device", "pcie-root-port,id=rp2,chassis=2,slot=2",
                     "-device", "vmxnet3,bus=rp2"]


@dataclass
class PciePass:
    boot: Boot
    out: Path

    def lines(self, prefix: str) -> list[str]:
        return [line[len(prefix) + 1:] for line in self.boot.find(prefix + " ")]

    def text(self, name: str) -> str:
        path = self.out / name
        return path.read_text(errors="replace") if path.is_file() else ""


def run_pcie_pass(*, timeout: float = 240.0) -> PciePass:
    """Boot the q35 guest and run the PCIe checks."""
    kernel, initramfs, out = prepare_guest("pcie")
    python = Path(sys.executable)
    (out / "guest.env").write_text(f"BUSPROBE={python.parent / 'busprobe'}\nPYTHON={python}\n"
                                   f"BDF={ENDPOINT}\nSMALL_BAR_BDF={SMALL_BAR_ENDPOINT}\n")
    script = Path(str(resources.files("busprobe.sim.vm.guest") / "pcie_checks.sh"))
    machine = Machine(kernel.image, initramfs, script, out, devices=ROOT_PORT_DEVICES,
                      machine="q35,kernel-irqchip=split", kernel_args="intel_iommu=on")
    return PciePass(boot(machine, timeout=timeout, console=out / "console.log"), out)
