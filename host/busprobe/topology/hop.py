"""One hop of the path from the root of a bus to the device, and how it is printed."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["Hop", "format_hops", "hop_field", "hop_findings", "SPEED_ORDER"]

#: Link speeds in increasing order, for "trained below capability" comparisons.
SPEED_ORDER = ("gen1", "gen2", "gen3", "gen4", "gen5", "gen6")


@dataclass
class Hop:
    """A host controller, hub, root port, switch port or the device itself.

    Attributes
    ----------
    kind : str
        ``pci-root-port``, ``pci-switch-upstream``, ``pci-switch-downstream``, ``pci-bridge``,
        ``pci-endpoint``, ``pci-device`` (no PCIe capability), ``usb-host-controller``,
        ``usb-root-hub``, ``usb-hub``, ``usb-device``, or ``sim-*`` for modelled hops.
    name : str
        Where it is: a PCI address ``DDDD:BB:DD.F`` or a USB port path ``1-1.4``.
    driver : str or None
        Kernel driver bound to it (``xhci_hcd``, ``ehci-pci``, ``pcieport``, ``hub`` ...).
    description : str or None
        Product string or vendor:device IDs.
    speed, width : str / int or None
        Negotiated link speed (``gen2``, ``high``, ``super``) and width as the hop reports it: a
        root or switch downstream port the link below it, anything else the link above it.
    speed_cap, width_cap : str / int or None
        What this hop's port supports (PCIe Link Capabilities; USB: its maximum speed).
    mps, mps_supported, mrrs : int or None
        PCIe Device Control MPS/MRRS in force and Device Capabilities max payload supported.
    slot : str or None
        Physical slot name, where the platform reports one.
    notes : list of str
        Findings about this hop (a link trained below what both ends support, no access ...).
    one_schedule : bool or None
        A USB host controller: whether it runs one schedule for all its root ports, so that
        they are one high-speed bus (EHCI), or gives each its bandwidth (xHCI); None elsewhere
        and where its host profile is unknown.
    """

    kind: str
    name: str
    driver: str | None = None
    description: str | None = None
    speed: str | None = None
    width: int | None = None
    speed_cap: str | None = None
    width_cap: int | None = None
    mps: int | None = None
    mps_supported: int | None = None
    mrrs: int | None = None
    slot: str | None = None
    notes: list[str] = field(default_factory=list)
    one_schedule: bool | None = None

    def to_json(self) -> dict[str, Any]:
        """The hop as one JSON object (absent fields left out; ``notes`` always present)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None or f.name == "notes":
                out[f.name] = list(value) if f.name == "notes" else value
        return out


#: Other spellings backends use for a hop's fields (``link_speed`` for ``speed``, ``bdf`` for
#: ``name``): hops recorded by any backend print and compare the same way.
_ALIASES = {"speed": ("link_speed",), "width": ("link_width",), "speed_cap": ("link_speed_cap",),
            "width_cap": ("link_width_cap",), "name": ("bdf", "port_path", "path")}


def hop_field(hop: dict[str, Any], key: str) -> Any:
    """``hop[key]`` or the value under one of its aliases; None when absent."""
    if hop.get(key) is not None:
        return hop[key]
    for alias in _ALIASES.get(key, ()):
        if hop.get(alias) is not None:
            return hop[alias]
    return None


def hop_findings(hop: dict[str, Any]) -> list[str]:
    """The hop's notes; for hops written without notes (by other backends) that record both
    link status and capability, "trained below capability" when the status is lower.

    Hops from :mod:`busprobe.topology` always carry ``notes``, checked against *both* ends of
    the link, so they are taken as they are (one end's capability alone can mislead)."""
    notes = [str(n) for n in hop.get("notes") or []]
    if "notes" in hop:
        return notes
    speed, cap = hop_field(hop, "speed"), hop_field(hop, "speed_cap")
    if speed in SPEED_ORDER and cap in SPEED_ORDER and SPEED_ORDER.index(speed) < \
            SPEED_ORDER.index(cap):
        notes.append(f"{hop_field(hop, 'name')} link trained at {speed} although it supports "
                     f"{cap} (speed below capability)")
    width, wcap = hop_field(hop, "width"), hop_field(hop, "width_cap")
    if isinstance(width, int) and isinstance(wcap, int) and 0 < width < wcap:
        notes.append(f"{hop_field(hop, 'name')} link trained at x{width} although it supports "
                     f"x{wcap} (width below capability)")
    return notes


def _link(hop: dict[str, Any]) -> str:
    speed, width = hop_field(hop, "speed"), hop_field(hop, "width")
    text = ""
    if speed:
        text = f"{speed}" + (f" x{width}" if width else "")
    cap_speed, cap_width = hop_field(hop, "speed_cap"), hop_field(hop, "width_cap")
    if cap_speed or cap_width:
        cap = f"{cap_speed or '?'}" + (f" x{cap_width}" if cap_width else "")
        text = f"{text or '?'} (cap {cap})"
    return text


def format_hops(hops: list[dict[str, Any]]) -> str:
    """Text table, root first: kind, where, driver, link status (cap), MPS/MRRS, slot, notes."""
    if not hops:
        return "(no topology)"
    rows = [("#", "kind", "where", "driver", "link (cap)", "mps/mrrs (sup)", "slot", "what")]
    for i, hop in enumerate(hops):
        sizes = ""
        if hop.get("mps"):
            sizes = f"{hop['mps']}/{hop.get('mrrs', '?')}"
            if hop.get("mps_supported"):
                sizes += f" ({hop['mps_supported']})"
        # A result file read back may hold any JSON value here: each cell is shown as text.
        rows.append((str(i), str(hop.get("kind", "?")), str(hop_field(hop, "name") or "?"),
                     str(hop.get("driver") or "-"),
                     _link(hop) or "-", sizes or "-", str(hop.get("slot") or "-"),
                     str(hop.get("description") or "")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    for i, hop in enumerate(hops):
        for note in hop_findings(hop):
            lines.append(f"  ! hop {i} {hop_field(hop, 'name') or ''}: {note}")
    return "\n".join(lines)
