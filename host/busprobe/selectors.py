"""Device selector grammar: ``usb:VID:PID[#SERIAL]``, ``pcie:DDDD:BB:DD.F``, ``sim:TARGET[?k=v]``.

The one parser of selector text, below everything that reads a selector (:mod:`busprobe.topology`,
:mod:`busprobe.targets`, the backends). It checks the syntax only: what the options mean and which
values they take is the target's business (:func:`busprobe.targets.describe`, which also opens
transports: :func:`busprobe.targets.open_transport`). The schemes come from :mod:`busprobe.buses`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from . import buses
from .protocol.pci_config import BDF_RE
from .transport import InvalidRequest

__all__ = ["Selector", "parse_selector", "UsbTarget", "parse_usb_target", "parse_pci_address"]


@dataclass(frozen=True)
class Selector:
    """A device selector as typed, split into its parts (no option interpreted).

    Attributes
    ----------
    text : str
        The selector as the user typed it.
    scheme : str
        ``usb``, ``pcie`` or ``sim`` (:func:`busprobe.buses.schemes`).
    target : str
        What follows the scheme, without options: ``1209:0001#SER``, ``0000:01:00.0``, ``usb2``.
    options : dict
        ``?key=value&...`` as strings; every key appears once.
    """

    text: str
    scheme: str
    target: str
    options: Mapping[str, str] = field(default_factory=dict)


def parse_selector(text: str) -> Selector:
    """Split ``text``; :class:`InvalidRequest` (one line) for an unknown scheme, a malformed or
    repeated option."""
    scheme, sep, rest = text.partition(":")
    if not sep or scheme not in buses.schemes() or not rest:
        raise InvalidRequest(f"bad device selector {text!r}: expected {buses.selector_syntax()}")
    target, _, query = rest.partition("?")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise InvalidRequest(f"bad options {query!r} in selector {text!r}: "
                             "expected key=value&key=value") from None
    # A repeated key is a typo or a pasted-together selector; taking either value would hide it.
    repeated = [key for key, n in Counter(key for key, _ in pairs).items() if n > 1]
    if repeated:
        key = repeated[0]
        values = ", ".join(f"{key}={v}" for k, v in pairs if k == key)
        raise InvalidRequest(f"{scheme}:{target} option {key} given more than once ({values}); "
                             "give each option once")
    return Selector(text, scheme, target, dict(pairs))


#: A USB port path as sysfs names the device: bus, then the port numbers from the root hub.
USB_PORT_RE = re.compile(r"^[0-9]+-[0-9]+(\.[0-9]+)*$")


@dataclass(frozen=True)
class UsbTarget:
    """What ``usb:VID:PID[#SERIAL][@PORT]`` selects.

    Attributes
    ----------
    vid, pid : int
        Vendor and product id.
    serial : str or None
        Serial number string, when the selector names one.
    port : str or None
        The port path, as sysfs names the device (``1-2``, ``3-1.4``), when the selector names
        one: what tells two boards with the same serial apart.
    """

    vid: int
    pid: int
    serial: str | None = None
    port: str | None = None

    def __str__(self) -> str:
        return (f"usb:{self.vid:04x}:{self.pid:04x}" + (f"#{self.serial}" if self.serial else "")
                + (f"@{self.port}" if self.port else ""))


def parse_usb_target(target: str) -> UsbTarget:
    """``"1209:0001#BP2-0001@1-2"`` → :class:`UsbTarget`; :class:`InvalidRequest` if
    malformed."""
    rest, at, port = target.rpartition("@") if "@" in target else (target, "", "")
    if at and not USB_PORT_RE.match(port):
        raise InvalidRequest(f"bad USB port {port!r} in usb:{target}: expected the port path "
                             "sysfs names the device by, e.g. @1-2 or @3-1.4 (busprobe list "
                             "shows it)")
    ids, _, serial = rest.partition("#")
    parts = ids.split(":")
    try:
        if len(parts) != 2 or not all(parts):
            raise ValueError
        vid, pid = (int(p, 16) for p in parts)
        if not (0 <= vid <= 0xFFFF and 0 <= pid <= 0xFFFF):
            raise ValueError
    except ValueError:
        raise InvalidRequest(f"bad USB selector usb:{target}: expected "
                             "usb:VID:PID[#SERIAL][@PORT] with 4-digit hex ids, e.g. "
                             "usb:1209:0001") from None
    return UsbTarget(vid, pid, serial or None, port or None)


def parse_pci_address(target: str) -> str:
    """``"0000:01:00.0"`` (any case) → the lower-case address; :class:`InvalidRequest` if it is
    not ``DDDD:BB:DD.F``."""
    bdf = target.lower()
    if not BDF_RE.match(bdf):
        raise InvalidRequest(f"bad PCI address {target!r}: expected DDDD:BB:DD.F in hex, "
                             "e.g. pcie:0000:01:00.0")
    return bdf
