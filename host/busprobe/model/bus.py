"""A :class:`BusDescription` read back from result JSON (``compare``, ``report``, the verdict).

A selector's bus is part of its description: :func:`busprobe.targets.describe`.
"""

from __future__ import annotations

from typing import Any

from ..transport import BusDescription

__all__ = ["bus_from_json"]


def bus_from_json(data: dict[str, Any]) -> BusDescription:
    """Inverse of :meth:`BusDescription.to_json`; ``ValueError`` if ``kind`` is missing."""
    if not isinstance(data, dict) or "kind" not in data:
        raise ValueError("result has no bus description (bus.kind missing)")
    return BusDescription(
        kind=str(data["kind"]), speed=str(data.get("speed", "")), width=int(data.get("width") or 1),
        mps=data.get("mps"), mrrs=data.get("mrrs"), host_profile=data.get("host_profile"),
        max_packet_size=data.get("max_packet_size"), extra=dict(data.get("extra") or {}),
        protocol=str(data.get("protocol") or "stream"))
