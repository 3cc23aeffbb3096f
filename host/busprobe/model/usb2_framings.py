"""The ``usb2-hs`` bus's ceiling by framing (:attr:`BusDescription.protocol`).

Streams and busprobe's BOT framing are :func:`.usb2.usb2_ceiling`'s; the null disk's UAS (``sweep
--protocol uas``, one command per transfer) is :func:`.usb_storage.uas_transfers`, which builds
on :mod:`.usb2`'s packet schedule, so the choice is made here, above both.
"""

from __future__ import annotations

from ..protocol.names import Framing
from ..protocol.usb2 import MAX_PACKET_SIZE
from ..transport import BusDescription
from .ceiling_type import Ceiling
from .usb2 import usb2_ceiling
from .usb2_hosts import load_profile
from .usb_storage import uas_transfers

__all__ = ["usb2_hs_ceiling"]


def usb2_hs_ceiling(bus: BusDescription, direction: str, *, length: int | None = None,
                    queue_depth: int | None = None, transfers: int | None = None) -> Ceiling:
    """:func:`.usb2.usb2_ceiling`, or for ``protocol`` ``uas`` with a length the stepped UAS
    run with ``queue_depth`` commands outstanding (with ``transfers``, that many commands'
    host-timed run)."""
    if bus.protocol == Framing.UAS and length is not None:
        return uas_transfers(load_profile(bus.host_profile or "ideal"), direction, length,
                             queue_depth or 1, bus.max_packet_size or MAX_PACKET_SIZE,
                             transfers=transfers)
    return usb2_ceiling(bus, direction, length=length, queue_depth=queue_depth,
                        transfers=transfers)
