"""The names every layer gives a point's data direction and its transfer framing.

A direction or a framing crosses every layer — the CLI, the sweep, the transports, the models,
the verdict, the result file, the simulation — so it is one :class:`enum.StrEnum` here, in the
contract. A member *is* its text (``Direction.IN == "in"``, ``json.dumps`` writes ``"in"``), so
the result document does not change; text from outside (the command line, a selector, a result
file) is turned into a member once, by :meth:`Direction.parse` / :meth:`Framing.parse`, and
compared as a member everywhere else.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Self

__all__ = ["Direction", "Framing", "USB_DIRECTIONS", "PCIE_DIRECTIONS"]

#: What a refusal calls each kind of name (the command line's option).
_WHAT = {"Direction": "direction", "Framing": "protocol"}


class _Name(StrEnum):
    """A name given on the command line, in a selector or a result file (no members)."""

    @classmethod
    def parse(cls, text: str) -> Self:
        """The member named ``text``; :class:`ValueError` in one line if there is none."""
        try:
            return cls(text)
        except ValueError:
            choices = ", ".join(member.value for member in cls)
            raise ValueError(f"{_WHAT[cls.__name__]} {text!r} is not one of {choices}") from None


class Direction(_Name):
    """Where a point's data go.

    USB names them from the host (``in``: device to host); PCIe from the device's DMA (``write``:
    the device writes host memory). ``loopback`` is both at once on either bus.
    """

    IN = "in"
    OUT = "out"
    WRITE = "write"
    READ = "read"
    LOOPBACK = "loopback"


class Framing(_Name):
    """How a point's transfers are framed (:attr:`busprobe.transport.BusDescription.protocol`).

    ``stream``: bare transfers, queued; ``bot``: USB mass storage Bulk-Only Transport (CBW, data,
    CSW per transfer, one at a time); ``uas``: USB Attached SCSI (command IU, READY, data, SENSE
    IU per transfer, several tags outstanding).
    """

    STREAM = "stream"
    BOT = "bot"
    UAS = "uas"


#: A USB device's streaming directions, and a PCIe endpoint's.
USB_DIRECTIONS = (Direction.IN, Direction.OUT)
PCIE_DIRECTIONS = (Direction.WRITE, Direction.READ)
