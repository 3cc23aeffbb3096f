"""The USB 2.0 high-speed verdict: what the device's counters say about a ``usb2-hs`` plateau.

The device counts the tokens the host sent, the NAKs it answered and the microframes that
carried data (:func:`~.telemetry.summarise_usb2`). A device that NAKed is the limit (a bug: it is
built never to be); a host that scheduled fewer packets per microframe than the bus allows, or
left microframes empty between transfers, is; the host profile's own ceiling is quoted beside the
link model, so an EHCI run at 100 % of its profile still reads host-limited at 77 % of the link.
"""

from __future__ import annotations

from .evidence import LINK_LIMITED, Finding, GroupEvidence, cap, mb
from .telemetry import Usb2Summary, summarise_usb2

__all__ = ["usb2_rules"]

#: NAKs per token above which the device, not the host, is the reason (a few NAKs at the start
#: of a point, before the source primes, are not).
_NAK_FRACTION = 0.01
#: Share of busy microframes that must carry data before gaps count as the host's.
_DATA_UFRAMES = 0.9


def usb2_rules(e: GroupEvidence) -> Finding:
    """The ``usb2-hs`` row's verdict rule (:attr:`busprobe.buses.Bus.verdict`)."""
    summary = summarise_usb2(e.telemetries, e.direction)
    verdict, why = _usb2_verdict(e, summary)
    return Finding(verdict, why, summary.__dict__ if summary else None)


def _usb2_verdict(e: GroupEvidence, s: Usb2Summary | None) -> tuple[str, str]:
    efficiency, plateau, link, profile = e.efficiency, e.plateau, e.link, e.profile
    bus_ppu = link.parts["packets_per_uframe"]  # 6.5 for loopback: OUT and IN share them
    head = e.head
    prof = ""
    if profile is not None and profile.parts["host_profile"] != "ideal":
        prof = (f" (host profile {profile.parts['host_profile']}: "
                f"{profile.parts['packets_per_uframe']} packets/µframe = "
                f"{mb(profile.throughput)}, reached {plateau.value / profile.throughput * 100:.0f}"
                " %)")
    nak_fraction = s.naks / s.tokens if s and s.tokens else 0.0
    if s and nak_fraction > _NAK_FRACTION and efficiency < LINK_LIMITED:
        return "device-limited", (
            f"DEVICE-LIMITED — must never happen: the device NAKed {s.naks} of {s.tokens} tokens "
            f"({nak_fraction * 100:.1f} %); {head}. The gateware's buffer or source is too slow.")
    if efficiency >= LINK_LIMITED:
        warn = f" WARNING: the device NAKed {s.naks} tokens." if s and s.naks else ""
        return "link-limited", f"{cap(head)}.{warn}"
    if s and s.tokens_max_uframe is not None and s.tokens_max_uframe < bus_ppu:
        return "host-limited", (
            f"The host scheduled at most {s.tokens_max_uframe} packets per "
            f"microframe where the bus allows {bus_ppu}, and the device NAKed "
            f"{'nothing' if not s.naks else f'only {s.naks} tokens'}; {head}{prof}.")
    if s and s.data_uframe_fraction is not None and s.data_uframe_fraction < _DATA_UFRAMES:
        return "host-limited", (
            f"The host left gaps between transfers — only "
            f"{s.data_uframe_fraction * 100:.0f} % of microframes carried data although the "
            f"device was ready; {head}{prof}.")
    if s:
        ppu = s.packets_per_data_uframe
        return "host-limited", (
            f"The device was ready (no NAKs) but the host moved "
            f"{ppu:.1f} packets per data microframe of the {bus_ppu} the bus allows; {head}{prof}."
            if ppu else f"The device was ready (no NAKs); {head}{prof}.")
    return "host-limited", (f"No device telemetry to confirm the device was ready; {head}"
                            f"{prof}.")
