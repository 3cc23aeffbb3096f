"""PCI Express path from the root port to a device, read from sysfs.

Each function directory under ``/sys/devices/pci*/`` sits inside the directory of the port above
it, so the path to a device *is* its topology. For every hop we read the PCI Express capability
from the ``config`` file (Link Capabilities vs Link Status, Device Capabilities max payload,
Device Control MPS/MRRS; decoded by :class:`busprobe.protocol.pci_config.PcieCapability`, the
one decoder) and fall back to the kernel's ``current_link_speed``/``max_link_speed`` attributes
when config space beyond 64 bytes is not readable (non-root users).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..protocol.pci_config import (
    BDF_RE,
    PCI_CAP_ID_EXP,
    UNPRIVILEGED_CONFIG_BYTES,
    PcieCapability,
    find_capability,
)
from ..transport import DeviceNotFound
from .hop import SPEED_ORDER, Hop

__all__ = ["pcie_hops", "pci_function_hop", "PORT_TYPES", "link_speed_from_sysfs"]

#: PCI Express Capabilities Register bits 7:4, Device/Port Type (PCIe Base 3.0 §7.8.2).
PORT_TYPES = {0: "pci-endpoint", 1: "pci-endpoint", 4: "pci-root-port",
              5: "pci-switch-upstream", 6: "pci-switch-downstream", 7: "pci-bridge",
              8: "pci-bridge", 9: "pci-endpoint", 10: "pci-root-complex-event-collector"}
_DOWNSTREAM_PORTS = ("pci-root-port", "pci-switch-downstream")
_GTS = {"2.5": "gen1", "5.0": "gen2", "5": "gen2", "8.0": "gen3", "8": "gen3", "16.0": "gen4",
        "32.0": "gen5", "64.0": "gen6"}


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def link_speed_from_sysfs(text: str | None) -> str | None:
    """``"5.0 GT/s PCIe"`` -> ``"gen2"``; None for unknown or missing."""
    if not text:
        return None
    match = re.match(r"([\d.]+)\s*GT/s", text)
    return _GTS.get(match.group(1)) if match else None


def _int_attr(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text, 0) if text else None
    except ValueError:
        return None


def _slots(sysfs_root: Path) -> dict[str, str]:
    """``DDDD:BB:DD`` -> slot name from ``/sys/bus/pci/slots/*/address``."""
    out = {}
    slots = sysfs_root / "bus" / "pci" / "slots"
    if slots.is_dir():
        for slot in sorted(slots.iterdir()):
            address = _read(slot / "address")
            if address:
                out[address] = slot.name
    return out


def pci_function_hop(path: Path, *, slots: dict[str, str] | None = None) -> Hop:
    """The hop of one PCI function directory (``.../0000:01:00.0``)."""
    bdf = path.name
    driver_link = path / "driver"
    driver = driver_link.resolve().name if driver_link.is_symlink() else None
    vendor, device = _read(path / "vendor"), _read(path / "device")
    hop = Hop("pci-device", bdf, driver=driver,
              description=f"{vendor[2:] if vendor else '?'}:{device[2:] if device else '?'}")
    if slots:
        hop.slot = slots.get(bdf.rsplit(".", 1)[0])
    try:
        config = (path / "config").read_bytes()
    except OSError as exc:
        config = b""
        hop.notes.append(f"config space not readable: {exc.strerror or exc}")
    cap = PcieCapability.parse(config)
    if cap is not None:
        port_type = (config[cap.offset + 2] >> 4) & 0xF
        hop.kind = PORT_TYPES.get(port_type, "pci-device")
        hop.speed_cap, hop.width_cap = cap.link_speed_cap, cap.link_width_cap
        if cap.link_up:
            hop.speed, hop.width = cap.link_speed, cap.link_width
        hop.mps, hop.mps_supported, hop.mrrs = cap.mps, cap.mps_supported, cap.mrrs
    elif (config and len(config) <= UNPRIVILEGED_CONFIG_BYTES
          and find_capability(config, PCI_CAP_ID_EXP) is None):
        hop.notes.append("PCIe capability beyond the 64 bytes of config space a non-root user "
                         "may read; link figures from sysfs attributes")
    # The kernel's attributes are readable by anyone: fill what config space did not give.
    hop.speed = hop.speed or link_speed_from_sysfs(_read(path / "current_link_speed"))
    hop.width = hop.width or _int_attr(path / "current_link_width")
    hop.speed_cap = hop.speed_cap or link_speed_from_sysfs(_read(path / "max_link_speed"))
    hop.width_cap = hop.width_cap or _int_attr(path / "max_link_width")
    return hop


def _check_links(hops: list[Hop]) -> None:
    """Note links that trained below what both of their ends support."""
    for upper, lower in zip(hops, hops[1:], strict=False):
        # A physical link joins a downstream-facing port to the upstream port of what is below;
        # a switch's upstream -> downstream ports are joined inside the switch.
        if upper.kind not in _DOWNSTREAM_PORTS or lower.kind == "pci-switch-downstream":
            continue
        speed, width = lower.speed or upper.speed, lower.width or upper.width
        for what, now, caps, order in (
                ("speed", speed, (upper.speed_cap, lower.speed_cap), SPEED_ORDER),
                ("width", width, (upper.width_cap, lower.width_cap), None)):
            if now is None or None in caps:
                continue
            if order is not None:
                if now not in order or any(c not in order for c in caps):
                    continue
                best = min(caps, key=order.index)
                below = order.index(now) < order.index(best)
            else:
                best = min(caps)  # type: ignore[type-var]
                below = now < best
            if below:
                shown = (lambda v: f"x{v}") if what == "width" else str
                port = upper.kind.removeprefix("pci-").replace("-", " ")
                lower.notes.append(
                    f"{port} {upper.name} link to {lower.name} trained at {shown(now)} although "
                    f"both ends support {shown(best)} ({what} below capability)")


def pcie_hops(bdf: str, *, sysfs_root: str | Path = "/sys") -> list[Hop]:
    """Hops from the root port down to ``bdf``; :class:`DeviceNotFound` if it is absent."""
    root = Path(sysfs_root)
    bdf = bdf.lower()
    if not BDF_RE.match(bdf):
        raise DeviceNotFound(f"bad PCI address {bdf!r}: expected DDDD:BB:DD.F")
    link = root / "bus" / "pci" / "devices" / bdf
    if not link.exists():
        raise DeviceNotFound(f"no PCI device {bdf} ({link} does not exist)")
    real = link.resolve()
    chain = [part for part in real.parts if BDF_RE.match(part)]
    slots = _slots(root)
    hops = []
    path = real
    paths = []
    for _ in chain:
        paths.append(path)
        path = path.parent
    for path in reversed(paths):
        hops.append(pci_function_hop(path, slots=slots))
    _check_links(hops)
    return hops
