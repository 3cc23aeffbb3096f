"""What a guest's kernel log says about each USB enumeration: how long it took and whether the
kernel had to try again.

Linux gives each control transfer of an enumeration 5 s; a device that answers later shows as
``device descriptor read/64, error -110`` (or ``/8``, ``/all``, ``device not accepting
address``), then a port reset and a new attempt. Every such line is a :data:`RETRY`; each
enumeration runs from ``new ... USB device number N`` to ``New USB device found`` of the same
port (``usb 1-1``), timed by the kernel's own timestamps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Enumeration", "enumerations", "retries", "RETRY"]

#: Kernel lines of a failed enumeration attempt (drivers/usb/core/hub.c).
RETRY = re.compile(r"device descriptor read/\w+, error|device not accepting address|"
                   r"unable to enumerate USB device")
_LINE = re.compile(r"^\[\s*(?P<time>\d+\.\d+)\]\s+usb (?P<port>\d+-[\d.]+): (?P<text>.*)$")
_START = re.compile(r"new (?P<speed>[\w-]+) USB device number \d+ using (?P<driver>\S+)")


@dataclass(frozen=True)
class Enumeration:
    """One device's enumeration, as the guest kernel logged it.

    Attributes
    ----------
    port : str
        The device's port path (``1-1``).
    speed : str
        ``high-speed``, ``SuperSpeed``, ...
    driver : str
        The host controller driver (``xhci_hcd``).
    seconds : float or None
        From the first ``new ... USB device`` line of the port to ``New USB device found``;
        None when it never got there.
    retries : int
        The failed attempts logged in between (:data:`RETRY` lines of the port).
    """

    port: str
    speed: str
    driver: str
    seconds: float | None
    retries: int


def retries(kernel_log: str) -> list[str]:
    """Every line of ``kernel_log`` that is a failed enumeration attempt."""
    return [line for line in kernel_log.splitlines() if RETRY.search(line)]


def enumerations(kernel_log: str) -> list[Enumeration]:
    """Each enumeration in ``kernel_log`` (``dmesg`` text), in the order they started."""
    found: list[Enumeration] = []
    open_: dict[str, tuple[float, str, str, int]] = {}
    for raw in kernel_log.splitlines():
        line = _LINE.match(raw)
        if line is None:
            continue
        port, text, time = line["port"], line["text"], float(line["time"])
        start = _START.search(text)
        if start is not None:
            if port not in open_:  # a reset's "new ... device" again: the same enumeration
                open_[port] = (time, start["speed"], start["driver"], 0)
        elif port in open_ and RETRY.search(text):
            began, speed, driver, failed = open_[port]
            open_[port] = (began, speed, driver, failed + 1)
        elif port in open_ and text.startswith("New USB device found"):
            began, speed, driver, failed = open_.pop(port)
            found.append(Enumeration(port, speed, driver, time - began, failed))
    found += [Enumeration(port, speed, driver, None, failed)
              for port, (_, speed, driver, failed) in open_.items()]
    return found
