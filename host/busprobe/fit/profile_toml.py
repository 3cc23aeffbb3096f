"""Writing a fitted profile as a host-profile TOML file the loader accepts.

Every parameter gets ``{ value = ..., source = "..." }`` as the shipped profiles have; the source
says ``fitted from FILE on DATE`` and carries the uncertainty (the loader takes no other field),
or, for a parameter the sweep did not pin down, says so and which points would. The text is
read back through :func:`busprobe.model.usb2_hosts.load_profile` before it is written, so
a profile ``fit`` writes is one the simulator and the model accept.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path
from typing import Any

from ..model.usb2_hosts import FORMAT, SCHEMA, HostProfile, load_profile
from ..result_file import write_result
from .fitted import FittedProfile, FittedValue

__all__ = ["render_profile", "write_profile", "source_of", "write_settings"]


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string (quotes, backslashes and control characters escaped)."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _toml_value(value: int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int) else repr(float(value))


def source_of(fitted_value: FittedValue, result: str, day: str) -> str:
    """The ``source`` text of one parameter."""
    head = f"fitted from {result} on {day}"
    if fitted_value.determined:
        return f"{head}: {fitted_value.uncertainty}"
    hints = ", ".join(f"{s.direction} {s.length} B at queue depth {s.queue_depth}"
                      for s in fitted_value.suggestions)
    more = f"; would be pinned down by {hints}" if hints else ""
    return f"{head}: not determined by this sweep, {fitted_value.why}; {fitted_value.uncertainty}" \
        f"{more}"


def render_profile(fitted: FittedProfile, name: str, *, day: str | None = None) -> str:
    """The TOML text of ``fitted`` named ``name``."""
    day = day or date.today().isoformat()
    data = fitted.data
    lines = [f"# Fitted by busprobe fit from {data.path} on {day}: {len(data.points)} points,",
             "# every value with the uncertainty the sweep leaves (a source that says \"not",
             "# determined\" names the points that would pin it down).",
             f"name = {_toml_string(name)}"]
    width = max(len(key) for key in SCHEMA)
    for key in SCHEMA:
        if key not in fitted.values:
            # A sweep of one device cannot tell whether the controller's root ports share one
            # schedule (root_ports_share_schedule): written as the loader's default, said so.
            source = (f"fitted from {data.path} on {day}: not determined by this sweep, one "
                      "device's sweep cannot show it; the loader's default (sweep two devices "
                      "on two root ports of the controller to see it)")
            lines.append(f"{key.ljust(width)} = {{ value = {_toml_value(FORMAT.defaults[key])}, "
                         f"source = {_toml_string(source)} }}")
            continue
        fitted_value = fitted.values[key]
        source = source_of(fitted_value, data.path, day)
        lines.append(f"{key.ljust(width)} = {{ value = {_toml_value(fitted_value.value)}, "
                     f"source = {_toml_string(source)} }}")
    return "\n".join(lines) + "\n"


def write_profile(fitted: FittedProfile, path: str | Path, name: str, *,
                  day: str | None = None) -> HostProfile:
    """Write ``fitted`` to ``path`` (``-``: stdout), checked by the loader first, then written as
    every result is (:mod:`busprobe.result_file`: a file whole or not at all, a link written
    through); returns the profile as the loader reads it."""
    return _checked_write(render_profile(fitted, name, day=day), path, load_profile)


def write_settings(settings: Mapping[str, Any], path: str | Path, name: str, *,
                   result: str, points: int, loader: Callable[[str], Any],
                   day: str | None = None) -> Any:
    """Write a USB 3.0 or PCIe fit's ``settings`` (key -> ``.value``, ``.determined``,
    ``.text``) to ``path`` (``-``: stdout) as :func:`write_profile` writes, once ``loader`` has
    read it back; returns what it read."""
    day = day or date.today().isoformat()
    width = max(len(key) for key in settings)
    lines = [f"# Fitted by busprobe fit from {result} on {day}: {points} points, every value",
             "# with the uncertainty the sweep leaves (\"not determined\" says what would pin it).",
             f"name = {_toml_string(name)}"]
    for key, setting in settings.items():
        source = f"fitted from {result} on {day}: {setting.text}"
        lines.append(f"{key.ljust(width)} = {{ value = {_toml_value(setting.value)}, "
                     f"source = {_toml_string(source)} }}")
    return _checked_write("\n".join(lines) + "\n", path, loader)


def _checked_write(text: str, path: str | Path, loader: Callable[[str], Any]) -> Any:
    """``text`` read back by ``loader`` (what the simulator will read, or its one-line error)
    before it is written to ``path``; returns what the loader read."""
    with tempfile.TemporaryDirectory(prefix="busprobe-fit-") as folder:
        check = Path(folder) / "profile.toml"
        check.write_text(text, encoding="utf-8")
        profile = loader(str(check))
    write_result(path, text)
    return profile
