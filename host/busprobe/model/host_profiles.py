"""Host-controller profiles as data: TOML files of documented parameters, read and checked once.

A profile is a small table of parameters the simulated host controller obeys and the ceiling
model steps, each with the source of its number or the word "assumption". They ship as TOML
files (``hosts/*.toml`` for USB 2.0, ``hosts/usb3/*.toml`` for SuperSpeed) and a user may pass
a file of their own (``sim:usb2?host=my_host.toml``, or what ``busprobe fit`` wrote).
:class:`ProfileFormat` describes one bus's profiles (its parameters and their ranges, where the
built-in ones live, the dataclass they become); :meth:`ProfileFormat.load` reads one, refusing a
bad file in one line that names the file and the key.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..os_errors import describe

__all__ = ["ProfileFormat", "shown"]


def shown(path: Path | str) -> str:
    """``path`` as text for a one-line message: a line break in a file name is shown escaped."""
    text = str(path)
    return text.encode("unicode_escape").decode() if not text.isprintable() else text


@dataclass(frozen=True)
class ProfileFormat:
    """One bus's host profiles.

    Attributes
    ----------
    schema : mapping
        Parameter -> (type, smallest, largest, unit); ``bool`` parameters take true or false.
    directory : Path
        Where the built-in profiles are (``NAME.toml``).
    make : type
        The profile's dataclass, built as ``make(name=..., sources=..., **parameters)``.
    label : str
        Prefix of "host profile" in the message for an unknown name (``"USB3 "``).
    defaults : mapping
        Parameter -> value for parameters a file may leave out (added after files were
        written without them, so that those files, and what ``busprobe fit`` writes, still
        load); every other parameter is required.
    """

    schema: Mapping[str, tuple[type, float, float, str]]
    directory: Path
    make: type
    label: str = ""
    defaults: Mapping[str, object] = field(default_factory=dict)

    def builtins(self) -> list[str]:
        return sorted(p.stem for p in self.directory.glob("*.toml"))

    def _checked(self, path: Path, key: str, value: object) -> object:
        kind, low, high, unit = self.schema[key]
        where = f"host profile {path}: {key}"
        if kind is bool:
            if not isinstance(value, bool):
                raise ValueError(f"{where} = {value!r} must be true or false")
            return value
        # TOML gives int or float; a bool is an int to Python but never a count or a duration.
        if isinstance(value, bool) or not isinstance(value, int | float) or \
                (kind is int and not float(value).is_integer()):
            raise ValueError(f"{where} = {value!r} must be {'a whole' if kind is int else 'a'} "
                             f"number ({unit})")
        if not low <= value <= high:  # also refuses nan
            raise ValueError(f"{where} = {value!r} is outside {low:g}..{high:g} {unit}")
        return kind(value)

    def load(self, name_or_path: str) -> Any:
        """A built-in profile by name, or a TOML file by path; ``ValueError`` with one line
        naming the file and the key if it is bad."""
        path = Path(name_or_path)
        if not path.suffix:
            # A name, not a path: looked up among the built-in ones (asking the file system
            # about a name too long for it would be an OSError, not this message).
            if name_or_path not in self.builtins():
                raise ValueError(f"unknown {self.label}host profile {name_or_path!r} (built in: "
                                 f"{', '.join(self.builtins())}; or give a .toml file)")
            path = self.directory / f"{name_or_path}.toml"
        try:
            table = tomllib.loads(path.read_text())
        except OSError as exc:
            raise ValueError(describe(exc, f"cannot read host profile {shown(path)}")) from None
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(f"cannot read host profile {shown(path)}: {exc}") from None
        named = Path(shown(path))  # every message below names it: one line, whatever the name
        unknown = sorted(set(table) - set(self.schema) - {"name"})
        if unknown:
            raise ValueError(f"host profile {named}: unknown key(s) {', '.join(unknown)} "
                             f"(known: name, {', '.join(self.schema)})")
        name = table.get("name", path.stem)
        if not isinstance(name, str) or not name:
            raise ValueError(f"host profile {named}: name must be a non-empty string")
        values: dict[str, object] = {}
        sources: dict[str, str] = {}
        for key in self.schema:
            entry = table.get(key)
            if entry is None and key in self.defaults:
                values[key] = self.defaults[key]
                sources[key] = "default (not in the file)"
                continue
            if not isinstance(entry, dict) or "value" not in entry:
                raise ValueError(f"host profile {named}: {key} needs a table with value and "
                                 f"source, e.g. {key} = {{ value = ..., source = \"...\" }}")
            extra = sorted(set(entry) - {"value", "source"})
            if extra:
                raise ValueError(f"host profile {named}: {key} has unknown field(s) "
                                 f"{', '.join(extra)}")
            values[key] = self._checked(named, key, entry["value"])
            sources[key] = str(entry.get("source", "assumption"))
        return self.make(name=name, sources=sources, **values)
