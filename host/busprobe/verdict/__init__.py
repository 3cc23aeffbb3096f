"""Plateau detection and the verdict on what limits a measured throughput.

``assess(result)`` returns the ``ceilings`` entries of a result document (docs/DESIGN.md §2.4): per
direction (and MPS), the plateau, the link model, the efficiency and one of ``link-limited``,
``host-limited``, ``upstream-limited``, ``device-limited`` with an explanation.
"""

from .assess import LINK_LIMITED, VERDICTS, assess
from .plateau import DEFAULT_TOLERANCE, Plateau, detect_plateau

__all__ = ["assess", "detect_plateau", "Plateau", "LINK_LIMITED", "VERDICTS", "DEFAULT_TOLERANCE"]
