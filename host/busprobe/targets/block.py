"""``block:/dev/sdX``: a busprobe null disk, by its device node.

Describing it reads nothing and opens nothing: the refusal (is it a whole, writable busprobe null
disk?) runs when the transport is opened, before any byte is written
(:func:`busprobe.backends.block.check_null_disk`), and its bus is the driver's, known then.
"""

from __future__ import annotations

from pathlib import Path

from ..buses import Bus
from ..selectors import Selector
from ..transport import InvalidRequest
from .description import TargetDescription
from .options import parse_options

__all__ = ["describe_block"]


def describe_block(selector: Selector, spec: Bus,
                   sysfs_root: str | Path | None = "/sys") -> TargetDescription:
    """A block device node (no options); its bus is known once it is opened."""
    path = selector.target
    if not path.startswith("/"):
        raise InvalidRequest(f"bad block selector {selector.text!r}: expected "
                             f"{spec.real_syntax} with an absolute path, e.g. block:/dev/sdb")
    options = parse_options(f"block:{path}", selector.options, ())
    return TargetDescription(selector.text, selector.scheme, path, options, spec, address=path)
