"""A multi-target result (``sweep --device A --device B``, docs/DESIGN.md §3.2) as the runs
``report`` and ``compare`` draw: each target alone and together, and the two sums.

Each becomes a document of its own with the points of one curve, so the tables, plots and
verdicts of single runs apply unchanged: ``#0 alone``, ``#0 together``, ..., then ``sum alone``
and ``sum together`` (no bus: a sum has no one link model to be held to).
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_multi", "expand_multi"]


def is_multi(doc: dict[str, Any]) -> bool:
    return bool(doc.get("targets")) and "together" in doc


def _sum_point(row: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = row.get(key)
    if value is None:
        return None
    together = key == "sum_throughput"
    return {"direction": row["direction"], "length": row["length"],
            "queue_depth": row["queue_depth"], "mps": row.get("mps"), "mrrs": row.get("mrrs"),
            "throughput": value,
            "throughput_min": row.get("sum_min", value) if together else value,
            "throughput_max": row.get("sum_max", value) if together else value,
            "spread": row.get("sum_spread" if together else "alone_spread"),
            "repeats": len(row.get("sum_samples", [])) if together else None,
            "device_throughput": None, "errors": 0, "telemetry": {}}


def expand_multi(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-target and sum documents of multi-target result ``doc``."""
    out = []
    base = {k: v for k, v in doc.items() if k not in ("targets", "together", "shared")}
    for i, target in enumerate(doc["targets"]):
        for phase in ("alone", "together"):
            out.append({**base, "device": f"#{i} {phase} ({target['device']})",
                        "bus": target["bus"], "topology": target["topology"],
                        "points": target[phase], "ceiling": None, "ceilings": None})
    for key, name in (("sum_alone", "sum alone"), ("sum_throughput", "sum together")):
        points = [p for p in (_sum_point(r, key) for r in doc["together"]) if p]
        out.append({**base, "device": name, "bus": None, "topology": [], "points": points,
                    "ceiling": None, "ceilings": None, "sum_of_targets": True,
                    "entries": _sum_entries(doc, points, key)})
    return out


def _sum_entries(doc: dict[str, Any], points: list[dict[str, Any]],
                 key: str) -> list[dict[str, Any]]:
    """Verdict-shaped entries of a sum curve, for the tables and plots: its plateau, the
    targets' link models added up as its model, and the shared verdict."""
    from ..verdict.plateau import detect_plateau

    entries = []
    for verdict in doc.get("shared", []):
        direction = verdict["direction"]
        mine = [p for p in points if p["direction"] == direction]
        links = []
        for target in doc["targets"]:
            alone = [p for p in target["alone"] if p["direction"] == direction
                     and p.get("link_ceiling")]
            if alone:
                links.append(max(alone, key=lambda p: p["length"])["link_ceiling"])
        plateau = detect_plateau((p["length"], p["throughput"], p.get("spread")) for p in mine)
        if not mine or plateau is None or len(links) != len(doc["targets"]):
            continue
        model = sum(links)
        entries.append({
            "direction": direction, "queue_depth": mine[-1]["queue_depth"], "mps": None,
            "mrrs": None, "plateau": plateau.value, "plateau_reached": plateau.reached,
            "plateau_why": plateau.why, "model": model, "efficiency": plateau.value / model,
            "verdict": verdict["verdict"] if key == "sum_throughput" else "sum alone",
            "explanation": verdict["explanation"]})
    return entries
