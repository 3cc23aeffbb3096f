"""What a result document says, as the store's rows (:mod:`.tables`): taken out once at push.

The hops a group is keyed by are named here, once:

controller
    The hop the host drives the bus through: a USB host controller, or a PCIe root port
    (``DRIVER (DESCRIPTION)``, e.g. ``xhci_hcd (8086:a36d)``), so identical controllers of
    different hosts fall in one group.
root port
    The PCIe root port (``BDF (IDS)``, plus ``slot`` where known), or the USB port below the
    host controller.
chipset
    Which way the root port reaches the CPU (``PCH via DMI`` for Intel's chipset root ports,
    ``CPU`` for the CPU's own), or the simulated root complex and whether it models a cap.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from ..results import ceilings_of
from ..topology.hop import hop_field
from ..topology.shared import is_chipset_root_port

__all__ = ["run_row", "hop_rows", "point_rows", "verdict_rows", "verdict_entries"]

_IDS = re.compile(r"\b([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\b")


def _time(text: Any) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC)


def _kernel(host: dict[str, Any]) -> str | None:
    """``host.kernel``; for documents written before it, the release inside ``platform``
    (``Linux-6.1.0-18-amd64-x86_64-with-glibc2.36`` -> ``6.1.0-18-amd64``)."""
    if host.get("kernel"):
        return str(host["kernel"])
    text, machine = str(host.get("platform") or ""), str(host.get("machine") or "")
    system, _, rest = text.partition("-")
    if not rest:
        return None
    release = rest.split(f"-{machine}-")[0] if machine and f"-{machine}-" in rest else rest
    return release or None


def _root(topology: list[dict[str, Any]]) -> dict[str, Any] | None:
    for hop in topology:
        kind = str(hop.get("kind") or "")
        if "host-controller" in kind or kind.endswith("root-port"):
            return hop
    return None


def _label(first: Any, second: Any) -> str | None:
    if first and second:
        return f"{first} ({second})"
    return str(first or second) if first or second else None


def _chipset_path(hop: dict[str, Any]) -> str | None:
    kind = str(hop.get("kind") or "")
    if kind == "pci-root-port":
        return "PCH via DMI" if is_chipset_root_port(hop) else "CPU"
    if kind == "sim-pci-root-port":
        capped = any("cap" in str(note) for note in hop.get("notes") or [])
        return "simulated root complex" + (", capped" if capped else "")
    return None


def _root_port(topology: list[dict[str, Any]]) -> str | None:
    for index, hop in enumerate(topology):
        kind = str(hop.get("kind") or "")
        if kind.endswith("root-port"):
            name = _label(hop_field(hop, "name"), hop.get("description"))
            return f"{name} slot {hop['slot']}" if hop.get("slot") else name
        if "host-controller" in kind and index + 1 < len(topology):
            return _label(hop_field(topology[index + 1], "name"), hop_field(hop, "name"))
    return None


def verdict_entries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The document's stored verdicts; for a document written without them, assessed now (an
    empty list when it cannot be)."""
    stored = ceilings_of(doc)
    if stored or not doc.get("points") or not doc.get("bus"):
        return stored
    from ..verdict import assess

    try:
        return list(assess(doc))
    except (ValueError, KeyError, TypeError, NotImplementedError):
        return []


def run_row(run_id: uuid.UUID, doc: dict[str, Any], raw: bytes) -> dict[str, Any]:
    bus = doc.get("bus") or {}
    host = doc.get("host") or {}
    topology = doc.get("topology") or []
    root = _root(topology) or {}
    errors = sum(int(p.get("errors") or 0) for p in doc["points"])
    extra = bus.get("extra") or {}
    return {
        "run_id": run_id, "document": raw, "document_sha256": hashlib.sha256(raw).hexdigest(),
        "pushed_at": datetime.now(UTC), "started": _time(doc.get("started")),
        "host_name": host.get("hostname"), "kernel": _kernel(host),
        "busprobe_version": doc.get("busprobe_version"),
        "design": extra.get("design_hash") or extra.get("design"),
        "device": doc["device"], "bus_kind": bus.get("kind") or "?",
        "bus_speed": bus.get("speed"), "bus_width": bus.get("width"),
        "protocol": bus.get("protocol") or "stream", "host_profile": bus.get("host_profile"),
        "controller": _label(root.get("driver"), root.get("description") or hop_field(root,
                                                                                    "name")),
        "root_port": _root_port(topology),
        "chipset": next((c for c in map(_chipset_path, topology) if c), None),
        "complete": bool(doc.get("complete", True)), "errors": errors, "flagged": errors > 0,
        "points": len(doc["points"]),
    }


def hop_rows(run_id: uuid.UUID, doc: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for position, hop in enumerate(doc.get("topology") or []):
        ids = _IDS.search(str(hop.get("description") or ""))
        rows.append({
            "run_id": run_id, "position": position, "kind": hop.get("kind"),
            "name": hop_field(hop, "name"), "driver": hop.get("driver"),
            "description": hop.get("description"),
            "vendor_id": hop.get("vendor") or (ids[1].lower() if ids else None),
            "device_id": hop.get("device") or (ids[2].lower() if ids else None),
            "speed": hop_field(hop, "speed"), "width": hop_field(hop, "width"),
            "speed_cap": hop_field(hop, "speed_cap"), "width_cap": hop_field(hop, "width_cap"),
            "mps": hop.get("mps"), "mrrs": hop.get("mrrs"), "slot": hop.get("slot"),
            "chipset_path": _chipset_path(hop)})
    return rows


def point_rows(run_id: uuid.UUID, doc: dict[str, Any],
               entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    verdict = {(e.get("direction"), e.get("mps")): e.get("verdict") for e in entries}
    protocol = (doc.get("bus") or {}).get("protocol") or "stream"
    return [{"run_id": run_id, "position": position, "direction": p["direction"],
             "length": p["length"], "queue_depth": p["queue_depth"], "mps": p.get("mps"),
             "mrrs": p.get("mrrs"), "protocol": protocol, "throughput": p["throughput"],
             "device_throughput": p.get("device_throughput"), "efficiency": p.get("efficiency"),
             "verdict": verdict.get((p["direction"], p.get("mps")))
             or verdict.get((p["direction"], None)), "errors": p["errors"]}
            for position, p in enumerate(doc["points"])]


def verdict_rows(run_id: uuid.UUID, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"run_id": run_id, "position": position, "direction": e["direction"],
             "mps": e.get("mps"), "mrrs": e.get("mrrs"), "queue_depth": e.get("queue_depth"),
             "plateau": e.get("plateau"), "model": e.get("model"),
             "efficiency": e.get("efficiency"), "verdict": e["verdict"]}
            for position, e in enumerate(entries) if e]
