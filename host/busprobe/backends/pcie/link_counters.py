"""The soft endpoint's link registers (:data:`busprobe.protocol.pcie.SOFT_LINK_CSRS`) as the
host reads them: the LTSSM's state and the data link layer's counters, per point.

Only ``SoftPCIEPHY`` has them; on the hard IP and on ``SimPCIEPHY`` the words read 0, so the
first one (``soft_link`` = :data:`~busprobe.protocol.pcie.SOFT_LINK_MAGIC`) says whether they
exist, and :func:`link_json` then says they are absent instead of showing zeros.

The counters run from the link's reset and wrap at
:data:`~busprobe.protocol.pcie.SOFT_LINK_COUNTER_BITS`; a point's figures are the differences
from the reading taken when its telemetry was cleared (:class:`LinkCounters`).
"""

from __future__ import annotations

from typing import Any, Protocol

from ...protocol import pcie as proto
from ...protocol.pcie_ltssm import state_name, unpack_link_status

__all__ = ["LinkCounters", "COUNTERS", "ABSENT", "link_json"]

#: The counters of :data:`~busprobe.protocol.pcie.SOFT_LINK_CSRS` (not the magic nor status).
COUNTERS: tuple[str, ...] = tuple(name for name, _ in proto.SOFT_LINK_CSRS
                                  if name not in ("soft_link", "status"))
#: What a point's ``link`` says on a PHY without the registers.
ABSENT = "this PHY has no link counters (hard IP or the TLP-level simulated PHY)"
_MASK = (1 << proto.SOFT_LINK_COUNTER_BITS) - 1


class _Bar(Protocol):
    def read32(self, offset: int) -> int: ...


def link_json(status: int, counters: dict[str, int] | None,
              since_reset: dict[str, int] | None = None) -> dict[str, Any]:
    """A point's ``link`` entry: the state from the ``status`` word, the counters of the
    point (``counters``) and since the link's reset (``since_reset``)."""
    link = unpack_link_status(status)
    return {"present": True, "state": state_name(link.state), "link_up": link.link_up,
            "width": link.width, "speed": f"gen{int(link.speed)}" if link.speed else None,
            "link_number": link.link_number, "lane_number": link.lane_number,
            "counters": counters, "since_reset": since_reset}


class LinkCounters:
    """Reads the link registers through ``bar`` (anything with ``read32``).

    Attributes
    ----------
    present : bool or None
        Whether the PHY has the registers (None until :meth:`baseline` or :meth:`read`).
    """

    def __init__(self, bar: _Bar) -> None:
        self.bar = bar
        self.present: bool | None = None
        self._baseline: dict[str, int] | None = None

    def _present(self) -> bool:
        if self.present is None:
            self.present = self.bar.read32(proto.soft_link_csr("soft_link")) == \
                proto.SOFT_LINK_MAGIC
        return self.present

    def _counters(self) -> dict[str, int]:
        return {name: self.bar.read32(proto.soft_link_csr(name)) & _MASK for name in COUNTERS}

    def baseline(self) -> None:
        """Start a point: remember the counters now."""
        self._baseline = self._counters() if self._present() else None

    def read(self) -> dict[str, Any]:
        """The point's ``link`` entry: ``{"present": False, "note": ...}`` without the
        registers, else :func:`link_json` (counters since :meth:`baseline`; since the link's
        reset when no baseline was taken)."""
        if not self._present():
            return {"present": False, "note": ABSENT}
        now = self._counters()
        before = self._baseline or dict.fromkeys(COUNTERS, 0)
        during = {name: (now[name] - before[name]) & _MASK for name in COUNTERS}
        return link_json(self.bar.read32(proto.soft_link_csr("status")), during, now)
