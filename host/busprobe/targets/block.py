"""``block:/dev/sdX``: a busprobe null disk, by its device node.

Describing it opens nothing: with a ``sysfs_root`` (``model``, ``topology``) the bus and the hops
are what sysfs says about the node (the driver bound, ``max_sectors_kb``, the controller), read
whatever the disk is; the refusal (is it a whole, writable busprobe null disk?) runs when the
transport is opened, before any byte is written (:func:`busprobe.backends.block.check_null_disk`).
"""

from __future__ import annotations

from pathlib import Path

from ..backends.block.guard import NotANullDisk, check_node
from ..backends.block.sysfs import read_block_facts
from ..backends.block.transport import block_hops, bus_for_facts
from ..buses import Bus
from ..emulation import emulated_host
from ..selectors import Selector
from ..transport import InvalidRequest, TransportError
from .description import TargetDescription
from .options import parse_options

__all__ = ["describe_block"]


def describe_block(selector: Selector, spec: Bus,
                   sysfs_root: str | Path | None = "/sys") -> TargetDescription:
    """A block device node (no options); bus and hops from ``sysfs_root`` unless it is None."""
    path = selector.target
    if not path.startswith("/"):
        raise InvalidRequest(f"bad block selector {selector.text!r}: expected "
                             f"{spec.real_syntax} with an absolute path, e.g. block:/dev/sdb")
    options = parse_options(f"block:{path}", selector.options, ())
    if sysfs_root is None:
        return TargetDescription(selector.text, selector.scheme, path, options, spec,
                                 address=path)
    try:
        facts = read_block_facts(*check_node(path), sysfs_root=sysfs_root)
    except NotANullDisk as exc:
        return TargetDescription(selector.text, selector.scheme, path, options, spec,
                                 address=path, bus_error=exc)
    except OSError:
        return TargetDescription(selector.text, selector.scheme, path, options, spec,
                                 address=path,
                                 bus_error=TransportError(f"{path}: sysfs shows no such disk"))
    return TargetDescription(selector.text, selector.scheme, path, options, spec, address=path,
                             bus=bus_for_facts(facts, emulated=emulated_host()),
                             hops=tuple(block_hops(facts, sysfs_root)))
