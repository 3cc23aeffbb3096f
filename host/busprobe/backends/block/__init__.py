"""``block:/dev/sdX``: a busprobe null disk driven by the operating system's own storage drivers
(``usb-storage``, ``uas``) and swept through its block layer (docs/DESIGN.md §5.4).

:mod:`.sysfs` reads what the kernel says about the disk, :mod:`.guard` refuses anything that is
not a null disk before a byte is written, :mod:`.engine` moves and checks the data,
:mod:`.transport` is the sweep's view of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .guard import NotANullDisk, check_null_disk
from .transport import BlockTransport

if TYPE_CHECKING:
    from ...targets.description import TargetDescription

__all__ = ["BlockTransport", "NotANullDisk", "check_null_disk", "open_block"]


def open_block(target: TargetDescription) -> BlockTransport:
    """The transport of a ``block:`` target, built, not opened (opening runs the refusal)."""
    return BlockTransport(str(target.address))
