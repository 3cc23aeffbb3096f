"""What every bus model returns: :class:`Ceiling`, the most a configuration allows, derived.

Its own module so the bus models (:mod:`.usb2`, :mod:`.pcie`, :mod:`.usb3`) import it without
importing the dispatch above them (:mod:`.ceiling`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Ceiling"]


@dataclass(frozen=True)
class Ceiling:
    """The most payload a bus configuration can move per second in one direction.

    Attributes
    ----------
    throughput : float
        Payload bytes per second.
    formula : str
        The derivation, one step per line, with every number substituted.
    parts : dict
        Each term of the formula by name (bytes, seconds, ratios), for tests and reports.
    direction : str
        ``in``/``out`` (USB) or ``write``/``read``/``loopback`` (PCIe).
    model : str
        What the ceiling describes, e.g. ``"usb2-hs link"``, ``"usb2-hs host profile ehci"``,
        ``"pcie gen2 x1 MPS 128"``.
    """

    throughput: float
    formula: str
    parts: dict[str, Any] = field(default_factory=dict)
    direction: str = ""
    model: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"throughput": self.throughput, "formula": self.formula, "parts": dict(self.parts),
                "direction": self.direction, "model": self.model}
