"""A trace of the header packets on the simulated SuperSpeed link, one line each, with cycles.

Where a sweep's figure and the model's part, the trace shows where the time went: which packet
waited behind which on a lane, how long each side took to answer. Set ``BUSPROBE_LINK_TRACE``
to a file name and every :class:`~sim.usb3.link.SuperSpeedLink` of the process writes to it::

    BUSPROBE_LINK_TRACE=/tmp/ss.trace busprobe sweep --device 'sim:usb3?design=storage' ...

Each line: the PIPE cycle, the side that sent it (``H->D`` the host, ``D->H`` the device), the
packet. A host packet's cycle is when the host queued it (its symbols go once the lane is
free and not before its ``start_at``); a device packet's is its first symbol's on the lane,
then its last's. Decoded per USB 3.2 §8.5-§8.7 (the layouts of :mod:`.protocol`)::

    12345 H->D ACK ep1IN nump16 seq3 stream2 pp
    12362       D->H 12363 LGOOD 3
    12371       D->H 12375 ERDY ep1IN nump1 stream2
    12400       D->H 12404 DP ep1IN len1024 seq3 stream2 eob

The device's link commands are there too (its LGOOD and LCRD for each header the host sent,
with its sequence number or credit): they share its lane with its packets and go first, so
a packet that waits for them shows it, and so does an LGOOD that comes late. The host's are
left out (the simulated xHCI sends them at once, ``link.py``).
"""

from __future__ import annotations

import os
from typing import TextIO

from usb_protocol.types.superspeed import HeaderPacketType, TransactionPacketSubtype

__all__ = ["LinkTrace", "describe_header", "TRACE_VARIABLE"]

#: The environment variable that names the trace file.
TRACE_VARIABLE = "BUSPROBE_LINK_TRACE"


def _endpoint(dw1: int) -> str:
    return f"ep{(dw1 >> 8) & 0xF}{'IN' if (dw1 >> 7) & 1 else 'OUT'}"


def describe_header(dws: tuple[int, int, int]) -> str:
    """One header packet, decoded (type, endpoint, counts, Stream ID, flags)."""
    dw0, dw1, dw2 = dws
    kind = dw0 & 0x1F
    stream = dw2 & 0xFFFF
    pending = " pp" if (dw2 >> 27) & 1 else ""
    if kind == HeaderPacketType.DATA:
        eob = " eob" if (dw1 >> 6) & 1 else ""
        return (f"DP {_endpoint(dw1)} len{dw1 >> 16} seq{dw1 & 0x1F} stream{stream}"
                f"{eob}{pending}")
    if kind == HeaderPacketType.TRANSACTION:
        try:
            name = TransactionPacketSubtype(dw1 & 0xF).name
        except ValueError:
            name = f"TP{dw1 & 0xF}"
        retry = " retry" if (dw1 >> 6) & 1 else ""
        return (f"{name} {_endpoint(dw1)} nump{(dw1 >> 16) & 0x1F} seq{(dw1 >> 21) & 0x1F} "
                f"stream{stream}{retry}{pending}")
    if kind == HeaderPacketType.ISOCHRONOUS_TIMESTAMP:
        return f"ITP interval{(dw0 >> 5) & 0x3FFF}"
    return f"header type{kind} {dw0:08x} {dw1:08x} {dw2:08x}"


class LinkTrace:
    """Writes a link's header packets to a text file (see module).

    Parameters
    ----------
    stream : text file
        Where the lines go (line-buffered: a run cut short keeps what it traced).
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    _opened: dict[str, LinkTrace] = {}

    @classmethod
    def from_environment(cls) -> LinkTrace | None:
        """The process's trace if :data:`TRACE_VARIABLE` names a file (one per process: a
        session's links share it), else None."""
        path = os.environ.get(TRACE_VARIABLE)
        if not path:
            return None
        if path not in cls._opened:
            cls._opened[path] = cls(open(path, "w", buffering=1))
        return cls._opened[path]

    def sent(self, cycle: int, dws: tuple[int, int, int]) -> None:
        """The host queued a header packet at ``cycle``."""
        self.stream.write(f"{cycle:10d} H->D {describe_header(dws)}\n")

    def command(self, start: int, end: int, name: str, subtype: int) -> None:
        """A link command from the device, its first symbol at ``start``, its last at
        ``end``."""
        self._from_device(start, end, f"{name} {subtype}")

    def received(self, start: int, end: int, dws: tuple[int, int, int]) -> None:
        """A header packet from the device, its first symbol at ``start``, its last at
        ``end``."""
        self._from_device(start, end, describe_header(dws))

    def _from_device(self, start: int, end: int, what: str) -> None:
        self.stream.write(f"{start:10d}       D->H {end} {what}\n")
