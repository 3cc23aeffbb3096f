"""PCIe root-complex profiles: what ``busprobe fit`` says a root does to the device's DMA.

Like the USB host profiles (:mod:`.usb2_hosts`, :mod:`.usb3_hosts`), a profile is a table of
documented parameters, each with its source; ``busprobe fit`` writes one from a ``sim:pcie`` or
``pcie:`` sweep. The simulated root takes the same numbers as selector options
(:meth:`PcieRootProfile.selector_options`: ``latency_ns``, ``cap``, ``rcb``), so a fitted profile
is replayed with ``sim:pcie?...`` as ``fit`` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .host_profiles import ProfileFormat

__all__ = ["PcieRootProfile", "PCIE_FORMAT", "PCIE_SCHEMA", "load_pcie_profile"]

PCIE_PROFILE_DIR = Path(__file__).with_name("hosts") / "pcie"


@dataclass(frozen=True)
class PcieRootProfile:
    """How a root complex answers a busprobe PCIe device.

    Attributes
    ----------
    name : str
    completion_latency_ns : float
        From a read request reaching the root to its completions leaving (memory latency).
    read_completion_boundary : int
        64 or 128: where the root splits a read's completions when it splits at every RCB.
    upstream_cap : float
        Bytes per second the root moves to or from memory (0: none below the link).
    posted_write_credits : int
        Posted-data credits (16-byte units) the root advertises (0: not known).
    sources : dict
        For each parameter, where its number comes from.
    """

    name: str
    completion_latency_ns: float
    read_completion_boundary: int
    upstream_cap: float
    posted_write_credits: int
    sources: dict[str, str]

    def selector_options(self) -> dict[str, object]:
        """The ``sim:pcie`` options that replay this profile."""
        options: dict[str, object] = {"latency_ns": self.completion_latency_ns,
                                      "rcb": self.read_completion_boundary}
        if self.upstream_cap:
            options["cap"] = self.upstream_cap
        return options


PCIE_SCHEMA: dict[str, tuple[type, float, float, str]] = {
    "completion_latency_ns": (float, 0.0, 1e9, "ns"),
    "read_completion_boundary": (int, 64, 128, "bytes"),
    "upstream_cap": (float, 0.0, 1e12, "bytes/s"),
    "posted_write_credits": (int, 0, 1 << 16, "credits"),
}

#: Reads and checks PCIe root profiles (:class:`~.host_profiles.ProfileFormat`).
PCIE_FORMAT = ProfileFormat(PCIE_SCHEMA, PCIE_PROFILE_DIR, PcieRootProfile, label="PCIe ")


def load_pcie_profile(name_or_path: str) -> PcieRootProfile:
    """A profile file by path (none ship built in); ``ValueError`` with one line."""
    return PCIE_FORMAT.load(name_or_path)
