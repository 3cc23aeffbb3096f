"""USB 3.0 SuperSpeed host-controller profiles: data the simulated xHCI obeys.

Like the USB 2.0 profiles (:mod:`.usb2_hosts`), a profile is a small table of documented
parameters, each with the source of its number or the word "assumption"; they ship as TOML files
in ``hosts/usb3/`` and a user may pass a file (``sim:usb3?host=my_host.toml``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .host_profiles import ProfileFormat

__all__ = ["Usb3HostProfile", "load_usb3_profile", "USB3_PROFILE_DIR", "USB3_SCHEMA",
           "builtin_usb3_profiles", "MAX_BURST_PACKETS", "USB3_FORMAT"]

USB3_PROFILE_DIR = Path(__file__).with_name("hosts") / "usb3"
#: bMaxBurst + 1 at most (USB 3.2 §9.6.7): the largest NumP window of a bulk endpoint.
MAX_BURST_PACKETS = 16


@dataclass(frozen=True)
class Usb3HostProfile:
    """How one kind of SuperSpeed host controller schedules bulk transfers.

    Attributes
    ----------
    name : str
    max_burst_in : int
        Largest NumP the host grants an IN endpoint in an ACK TP (its receive window).
    max_burst_out : int
        OUT data packets the host has in flight before it waits for the device's ACK TP
        (1: no bursting, as Linux's XHCI_VLI_SS_BULK_OUT_BUG quirk makes a VL805 do).
    turnaround_ns : float
        From the end of a device packet to the host's answering TP on the wire.
    retoken_delay_us : float
        After a transfer ends, before the host tokens the endpoint for the next queued one.
    credit_return_ns : float
        From receiving a header packet to returning its header buffer (LCRD_x).
    completion_latency_us, resubmit_latency_us : float
        As for USB 2.0: last handshake -> the driver sees the completion; completion -> the next
        transfer is on the ring when none was queued.
    sources : dict
        For each parameter, where its number comes from.
    """

    name: str
    max_burst_in: int
    max_burst_out: int
    turnaround_ns: float
    retoken_delay_us: float
    credit_return_ns: float
    completion_latency_us: float
    resubmit_latency_us: float
    sources: dict[str, str]

    def with_burst(self, burst: int) -> Usb3HostProfile:
        """This profile with both burst windows capped at ``burst`` packets."""
        if not 1 <= burst <= MAX_BURST_PACKETS:
            raise ValueError(f"burst must be 1..{MAX_BURST_PACKETS} packets, not {burst}")
        return replace(self, max_burst_in=min(self.max_burst_in, burst),
                       max_burst_out=min(self.max_burst_out, burst))


#: Each parameter's schema: (type, smallest, largest, unit).
USB3_SCHEMA: dict[str, tuple[type, float, float, str]] = {
    "max_burst_in": (int, 1, MAX_BURST_PACKETS, "packets"),
    "max_burst_out": (int, 1, MAX_BURST_PACKETS, "packets"),
    "turnaround_ns": (float, 0.0, 1e6, "ns"),
    "retoken_delay_us": (float, 0.0, 1e6, "µs"),
    "credit_return_ns": (float, 0.0, 1e6, "ns"),
    "completion_latency_us": (float, 0.0, 1e6, "µs"),
    "resubmit_latency_us": (float, 0.0, 1e6, "µs"),
}


#: Reads and checks SuperSpeed profiles (:class:`~.host_profiles.ProfileFormat`).
USB3_FORMAT = ProfileFormat(USB3_SCHEMA, USB3_PROFILE_DIR, Usb3HostProfile, label="USB3 ")


def load_usb3_profile(name_or_path: str) -> Usb3HostProfile:
    """A built-in profile by name, or a TOML file by path; ``ValueError`` with one line."""
    return USB3_FORMAT.load(name_or_path)


def builtin_usb3_profiles() -> list[str]:
    return USB3_FORMAT.builtins()
