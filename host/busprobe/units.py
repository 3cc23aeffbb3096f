"""Throughput units for people: MB/s (10⁶ bytes) by default, MiB/s (2²⁰) on request.

Everything stored (JSON, CSV columns ending in ``_bps``) is bytes per second; a :class:`Units`
only converts for tables and plots, and always carries its label so no figure is shown bare.
"""

from __future__ import annotations

import enum

__all__ = ["Units"]


class Units(enum.Enum):
    """A throughput display unit: ``value`` is the CLI spelling."""

    MB = "mb"
    MIB = "mib"

    @classmethod
    def parse(cls, text: str) -> Units:
        try:
            return cls(text.lower())
        except ValueError:
            raise ValueError(f"unknown units {text!r} (choose from mb, mib)") from None

    @property
    def bytes_per_unit(self) -> int:
        return 1_000_000 if self is Units.MB else 1 << 20

    @property
    def label(self) -> str:
        return "MB/s" if self is Units.MB else "MiB/s"

    def convert(self, bytes_per_second: float) -> float:
        return bytes_per_second / self.bytes_per_unit

    def format(self, bytes_per_second: float | None, digits: int = 2) -> str:
        """``"52.99 MB/s"``; ``"-"`` when there is no figure."""
        if bytes_per_second is None:
            return "-"
        return f"{self.convert(bytes_per_second):.{digits}f} {self.label}"
