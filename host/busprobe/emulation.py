"""Whether this computer is an emulated machine, whose bus throughput is the emulator's.

Inside QEMU (TCG or KVM) a USB or PCIe device sits behind QEMU's emulated host controller or
root complex: a sweep there measures how fast QEMU moves the data, not what a controller does.
Results say so (``host.emulated`` in the result document, docs/DESIGN.md §2.4). QEMU names itself
in the machine's SMBIOS tables, which Linux shows under ``/sys/class/dmi/id``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["emulated_host", "DMI_ROOT"]

DMI_ROOT = Path("/sys/class/dmi/id")
#: SMBIOS system vendors of emulated machines -> the name results record.
_EMULATORS = {"QEMU": "qemu"}


def emulated_host(dmi_root: Path = DMI_ROOT) -> str | None:
    """``"qemu"`` when the SMBIOS system vendor says QEMU; None on real hardware or no DMI."""
    try:
        vendor = (dmi_root / "sys_vendor").read_text().strip()
    except OSError:
        return None
    return _EMULATORS.get(vendor)
