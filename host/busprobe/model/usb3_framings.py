"""The ``usb3-ss`` bus's ceiling by framing (:attr:`BusDescription.protocol`).

Streams and Bulk-Only Transport are :func:`.usb3.usb3_ceiling`'s; the null disk's UAS with bulk
streams (``sweep --protocol uas``, one command per transfer) is
:func:`.usb3_uas_ceiling.uas_ceiling`, which builds on :mod:`.usb3`'s terms, so the choice is
made here, above both (as :mod:`.usb2_framings` makes it for ``usb2-hs``).
"""

from __future__ import annotations

from ..protocol.names import Framing
from ..transport import BusDescription
from .ceiling_type import Ceiling
from .usb3 import usb3_ceiling
from .usb3_uas_ceiling import uas_ceiling

__all__ = ["usb3_ss_ceiling"]


def usb3_ss_ceiling(bus: BusDescription, direction: str, *, length: int | None = None,
                    queue_depth: int | None = None, transfers: int | None = None) -> Ceiling:
    """:func:`.usb3.usb3_ceiling`, or for ``protocol`` ``uas`` with a length the UAS ceiling
    with ``queue_depth`` commands outstanding (with ``transfers``, of that many commands'
    host-timed run)."""
    if bus.protocol == Framing.UAS and length is not None:
        return uas_ceiling(bus, direction, length=length, queue_depth=queue_depth,
                           transfers=transfers)
    return usb3_ceiling(bus, direction, length=length, queue_depth=queue_depth,
                        transfers=transfers)
