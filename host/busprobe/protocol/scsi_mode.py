"""The null disk's mode pages and its MODE SENSE (6) and (10) answers, as SPC-4 §6.11-6.12 and
§7.5 lay them out: defined once, the gateware's replies RAM and the tests are built from them.

The disk has two pages, both fixed (nothing is changeable, nothing saveable):

- Caching (SBC-3 §6.4.5, page 08h): write cache off, read cache on. Linux's sd asks for it on
  attach (``sd_read_cache_type``): with it, "Write cache: disabled, read cache: enabled"; without
  it, "No Caching mode page found, assuming drive cache: write through".
- Control (SPC-4 §7.5.8, page 0Ah): all zeros, so D_SENSE says fixed-format sense data, which is
  what :func:`~busprobe.protocol.scsi.sense_data` returns.

Page 3Fh returns both in ascending order (SPC-4 §6.11: "all mode pages"); subpage FFh (all
subpages) returns what subpage 0 does, as the disk has no subpages. Any other page or subpage is
CHECK CONDITION, ILLEGAL REQUEST, INVALID FIELD IN CDB; saved values (page control 3) are SAVING
PARAMETERS NOT SUPPORTED (SPC-4 §6.11.1).
"""

from __future__ import annotations

import enum
import struct

from .scsi import Asc, CheckCondition

__all__ = ["PageControl", "MODE_PAGE_CACHING", "MODE_PAGE_CONTROL", "MODE_PAGE_ALL",
           "MODE_SUBPAGE_ALL", "MODE_PAGES", "MODE_SENSE_PAGES", "MODE_SENSE_CONTROLS",
           "mode_page", "mode_sense"]


class PageControl(enum.IntEnum):
    """The PC field of a MODE SENSE CDB (byte 2, bits 7..6)."""

    CURRENT = 0
    CHANGEABLE = 1
    DEFAULT = 2
    SAVED = 3


MODE_PAGE_CACHING = 0x08
MODE_PAGE_CONTROL = 0x0A
#: Page code "return all mode pages".
MODE_PAGE_ALL = 0x3F
#: Subpage code "return all subpages".
MODE_SUBPAGE_ALL = 0xFF
#: The pages the disk has, in the order page 3Fh returns them: code and page length (byte 1).
MODE_PAGES = {MODE_PAGE_CACHING: 0x12, MODE_PAGE_CONTROL: 0x0A}
#: The page codes MODE SENSE answers, and the page controls it answers them for.
MODE_SENSE_PAGES = (*MODE_PAGES, MODE_PAGE_ALL)
MODE_SENSE_CONTROLS = (PageControl.CURRENT, PageControl.CHANGEABLE, PageControl.DEFAULT)


def mode_page(page: int) -> bytes:
    """Page ``page`` of :data:`MODE_PAGES` as it is and as its default (the same: every field 0
    but its code and length) and the mask of its changeable fields (all 0 too)."""
    return struct.pack(">BB", page, MODE_PAGES[page]) + bytes(MODE_PAGES[page])


def mode_sense(page: int, *, subpage: int = 0, control: PageControl = PageControl.CURRENT,
               ten: bool = False) -> bytes:
    """The whole data of MODE SENSE (6) (``ten`` false) or (10) for ``page`` and ``subpage``:
    the mode parameter header (not write protected, no DPO/FUA, no block descriptor), then the
    pages. Raises :class:`~busprobe.protocol.scsi.CheckCondition` where SPC has it fail."""
    if control == PageControl.SAVED:
        raise CheckCondition(Asc.SAVING_PARAMETERS_NOT_SUPPORTED, "no page is saveable")
    if subpage not in (0, MODE_SUBPAGE_ALL):
        raise CheckCondition(Asc.INVALID_FIELD_IN_CDB, f"no subpage {subpage:#04x}")
    if page == MODE_PAGE_ALL:
        pages = b"".join(mode_page(code) for code in sorted(MODE_PAGES))
    elif page in MODE_PAGES:
        pages = mode_page(page)
    else:
        raise CheckCondition(Asc.INVALID_FIELD_IN_CDB, f"no mode page {page:#04x}")
    # The mode data length counts the bytes after itself.
    if ten:
        return struct.pack(">HBBBBH", 6 + len(pages), 0, 0, 0, 0, 0) + pages
    return struct.pack(">BBBB", 3 + len(pages), 0, 0, 0) + pages
