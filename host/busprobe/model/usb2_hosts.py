"""USB 2.0 host-controller profiles: data that the simulation obeys and the ceiling model reads.

A profile is a small table of documented parameters, each with the source of its number (or
``"assumption"`` where no published figure exists). The simulated host controller schedules by it;
:mod:`busprobe.model` computes the same profile's closed-form ceiling. They explain real hosts,
they do not pretend to be one. Profiles ship as TOML files in ``hosts/``; a user can pass a file
of their own (``sim:usb2?host=my_host.toml``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..protocol.names import Direction
from .host_profiles import ProfileFormat

__all__ = ["HostProfile", "load_profile", "PROFILE_DIR", "SCHEMA", "builtin_profiles", "FORMAT"]

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
    root_ports_share_schedule : bool
        The controller runs one schedule for all of its root ports, a transaction at a time
        (EHCI's one asynchronous schedule: its ports are one 480 Mb/s bus, as behind a hub);
        false where each root port has its bandwidth (xHCI). Optional in a file (false).
    """

    name: str
    max_bulk_in_per_uframe: int
    max_bulk_out_per_uframe: int
    inter_transaction_gap_ns: float
    completion_latency_us: float
    resubmit_latency_us: float
    completion_on_uframe: bool
    sources: dict[str, str]
    root_ports_share_schedule: bool = False

    def max_per_uframe(self, direction: str) -> int:
        return (self.max_bulk_in_per_uframe if direction == Direction.IN
                else self.max_bulk_out_per_uframe)


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
    "root_ports_share_schedule": (bool, 0, 1, "true or false"),
}


#: Reads and checks USB 2.0 profiles (:class:`~.host_profiles.ProfileFormat`).
FORMAT = ProfileFormat(SCHEMA, PROFILE_DIR, HostProfile,
                       defaults={"root_ports_share_schedule": False})


def load_profile(name_or_path: str) -> HostProfile:
    """A built-in profile by name, or a TOML file by path; ``ValueError`` with one line naming
    the file and the key if it is bad (see :data:`SCHEMA`)."""
    return FORMAT.load(name_or_path)


def builtin_profiles() -> list[str]:
    return FORMAT.builtins()
