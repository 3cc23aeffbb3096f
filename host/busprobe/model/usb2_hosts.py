"""USB 2.0 host-controller profiles: data that the simulation obeys and the ceiling model reads.

A profile is a small table of documented parameters, each with the source of its number (or
``"assumption"`` where no published figure exists). The simulated host controller schedules by it;
:mod:`busprobe.model` computes the same profile's closed-form ceiling. They explain real hosts,
they do not pretend to be one. Profiles ship as TOML files in ``hosts/``; a user can pass a file
of their own (``sim:usb2?host=my_host.toml``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..os_errors import describe

__all__ = ["HostProfile", "load_profile", "PROFILE_DIR", "SCHEMA", "builtin_profiles"]

PROFILE_DIR = Path(__file__).with_name("hosts")


@dataclass(frozen=True)
class HostProfile:
    """How one kind of USB 2.0 host controller schedules bulk transfers.

    Attributes
    ----------
    name : str
        Profile name (``ideal``, ``ehci``, ``xhci`` or a file's stem).
    max_bulk_in_per_uframe, max_bulk_out_per_uframe : int
        Most bulk data packets the controller moves to/from one endpoint in one microframe.
    inter_transaction_gap_ns : float
        Idle bus time the controller leaves after a transaction before its next token, beyond
        the inter-packet delay the spec requires.
    completion_latency_us : float
        From the last handshake of a transfer to the host driver seeing it complete.
    resubmit_latency_us : float
        From a completion to the next transfer being on the schedule when none was queued
        (what queue depth 1 pays once per transfer).
    completion_on_uframe : bool
        Completions are reported only at the next microframe boundary (interrupt threshold).
    sources : dict
        For each parameter, where its number comes from.
    """

    name: str
    max_bulk_in_per_uframe: int
    max_bulk_out_per_uframe: int
    inter_transaction_gap_ns: float
    completion_latency_us: float
    resubmit_latency_us: float
    completion_on_uframe: bool
    sources: dict[str, str]

    def max_per_uframe(self, direction: str) -> int:
        return self.max_bulk_in_per_uframe if direction == "in" else self.max_bulk_out_per_uframe


#: Each parameter's schema: (type, smallest, largest, unit). Ranges are what the model and the
#: simulated controller can honour: at most 13 bulk packets fit a microframe (USB 2.0 §5.8.4),
#: latencies beyond a second are not a host controller but a hang.
SCHEMA: dict[str, tuple[type, float, float, str]] = {
    "max_bulk_in_per_uframe": (int, 1, 13, "packets per microframe"),
    "max_bulk_out_per_uframe": (int, 1, 13, "packets per microframe"),
    "inter_transaction_gap_ns": (float, 0.0, 125_000.0, "ns"),
    "completion_latency_us": (float, 0.0, 1e6, "µs"),
    "resubmit_latency_us": (float, 0.0, 1e6, "µs"),
    "completion_on_uframe": (bool, 0, 1, "true or false"),
}


def _checked(path: Path, key: str, value: object) -> object:
    kind, low, high, unit = SCHEMA[key]
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


def load_profile(name_or_path: str) -> HostProfile:
    """A built-in profile by name, or a TOML file by path; ``ValueError`` with one line naming
    the file and the key if it is bad (see :data:`SCHEMA`)."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILE_DIR / f"{name_or_path}.toml"
        # A name, not a path: looked up among the built-in ones (asking the file system about a
        # name too long for it would be an OSError, not this message).
        if name_or_path not in builtin_profiles():
            raise ValueError(f"unknown host profile {name_or_path!r} "
                             f"(built in: {', '.join(builtin_profiles())}; or give a .toml file)")
    try:
        table = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ValueError(describe(exc, f"cannot read host profile {_shown(path)}")) \
            from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"cannot read host profile {_shown(path)}: {exc}") from None
    path = Path(_shown(path))  # every message below names it: one line, whatever the name
    unknown = sorted(set(table) - set(SCHEMA) - {"name"})
    if unknown:
        raise ValueError(f"host profile {path}: unknown key(s) {', '.join(unknown)} "
                         f"(known: name, {', '.join(SCHEMA)})")
    name = table.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise ValueError(f"host profile {path}: name must be a non-empty string")
    values: dict[str, object] = {"name": name}
    sources: dict[str, str] = {}
    for key in SCHEMA:
        entry = table.get(key)
        if not isinstance(entry, dict) or "value" not in entry:
            raise ValueError(f"host profile {path}: {key} needs a table with value and source, "
                             f"e.g. {key} = {{ value = ..., source = \"...\" }}")
        extra = sorted(set(entry) - {"value", "source"})
        if extra:
            raise ValueError(f"host profile {path}: {key} has unknown field(s) {', '.join(extra)}")
        values[key] = _checked(path, key, entry["value"])
        sources[key] = str(entry.get("source", "assumption"))
    return HostProfile(sources=sources, **values)  # type: ignore[arg-type]


def _shown(path: Path) -> str:
    """``path`` as text for a one-line message: a line break in a file name is shown escaped."""
    text = str(path)
    return text.encode("unicode_escape").decode() if not text.isprintable() else text


def builtin_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))
