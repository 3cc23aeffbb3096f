"""What ``busprobe fit`` prints for a USB 3.0 or PCIe sweep: the settings, how sure, what the
sweep left open, and how far the fitted model is from each point it was fitted to."""

from __future__ import annotations

from collections.abc import Mapping

from .bounded import BoundedFit
from .sweep_points import SweepPoints
from .usb3_fit import Setting

__all__ = ["format_settings"]


def format_settings(data: SweepPoints, settings: Mapping[str, Setting], fit: BoundedFit | None,
                    *, seconds: float | None = None, fitted_points: int | None = None) -> str:
    timing = f"; {seconds:.1f} s" if seconds is not None else ""
    lines = [f"fit of {data.path} ({data.device or 'device not recorded'}): "
             f"{len(data.points)} points{timing}"]
    width = max(len(key) for key in settings)
    for key, setting in settings.items():
        mark = "" if setting.determined else " !"
        lines.append(f"  {key.ljust(width)}  {setting.value}  "
                     f"{setting.text if setting.determined else 'not determined'}{mark}")
    if fit is not None:
        used = fitted_points if fitted_points is not None else len(data.points)
        lines.append(f"the fitted model vs the {used} points it was fitted to: every point within "
                     f"{100 * fit.worst:.2f} % (misfit χ² {fit.misfit:.1f})")
    open_ = [s for s in settings.values() if not s.determined]
    if not open_:
        lines.append("every parameter is determined by this sweep")
    for setting in open_:
        lines.append(f"{setting.key}: {setting.text}")
    return "\n".join(lines)
