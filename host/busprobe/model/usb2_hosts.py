"""USB 2.0 host-controller profiles: data that the simulation obeys and the ceiling model reads.

A profile is a small table of documented parameters, each with the source of its number (or
``"assumption"`` where no published figure exists). The simulated host controller schedules by it;
:mod:`busprobe.model` computes the same profile's closed-form ceiling. They explain real hosts,
they do not pretend to be one. Profiles ship as TOML files in ``hosts/``; a user can pass a file
of their own (``sim:usb2?host=my_host.toml``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

__all__ = ["HostProfile", "load_profile", "PROFILE_DIR", "builtin_profiles"]

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


def load_profile(name_or_path: str) -> HostProfile:
    """A built-in profile by name, or a TOML file by path; ``ValueError`` with one line if bad."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILE_DIR / f"{name_or_path}.toml"
        if not path.exists():
            raise ValueError(f"unknown host profile {name_or_path!r} "
                             f"(built in: {', '.join(builtin_profiles())}; or give a .toml file)")
    try:
        table = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"cannot read host profile {path}: {exc}") from None
    values: dict[str, object] = {"name": table.get("name", path.stem)}
    sources: dict[str, str] = {}
    for f in fields(HostProfile):
        if f.name in ("name", "sources"):
            continue
        entry = table.get(f.name)
        if not isinstance(entry, dict) or "value" not in entry:
            raise ValueError(f"host profile {path}: {f.name} needs a table with value and source")
        values[f.name] = entry["value"]
        sources[f.name] = str(entry.get("source", "assumption"))
    for key in ("max_bulk_in_per_uframe", "max_bulk_out_per_uframe"):
        if not 1 <= int(values[key]) <= 13:  # type: ignore[call-overload]
            raise ValueError(f"host profile {path}: {key} must be 1..13 (USB 2.0 §5.8.4)")
    return HostProfile(sources=sources, **values)  # type: ignore[arg-type]


def builtin_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))
