"""cocotbext-pcie's ``Tlp``, quicker at answering the same question twice (simulation speed).

Every hop of cocotbext-pcie's fabric (each bridge's receive and send, the root complex's
receive) runs ``assert tlp.check()``, and that and the bridges' routing ask ``tlp.fmt_type``
several times a hop; the property builds the :class:`~cocotbext.pcie.core.tlp.TlpType` anew
from ``(fmt, type)`` through enum's value lookup at each access. Profiled (issue 30, DESIGN
§5.3 "Simulation speed"), these were the largest share of the simulator's Python per TLP after
the task machinery, and they grow with the hops a TLP crosses: behind the switch of
``sim:pcie?endpoints=N`` twice as many as on ``sim:pcie``.

:func:`install` changes two things in the class, once, in this one place (upstream's
behaviour is kept; only repeated work is skipped):

* ``fmt_type`` reads the member from enum's own value-to-member table (a dict lookup), falling
  back to ``TlpType(...)`` (the same ``ValueError``) for a pair that is no type;
* ``check`` runs upstream's check as before, and remembers the fields it read when it passed;
  asked again about the same TLP with none of them changed, it answers True without running
  it again. A TLP that fails is checked (and reported) again every time. A copy
  (``Tlp(tlp)``, as every link's receiver makes) starts with what its original remembered: its
  own fields are compared with them, so a copy changed since is checked on its own.
"""

from __future__ import annotations

from cocotbext.pcie.core.tlp import Tlp, TlpType

__all__ = ["install"]

_installed = False


def _key(tlp: Tlp) -> tuple:
    # Every field upstream's Tlp.check reads (cocotbext-pcie 0.2.16).
    return (tlp.fmt, tlp.type, tlp.length, len(tlp.data), tlp.address, tlp.byte_count,
            tlp.lower_address, tlp.last_be)


def install() -> None:
    """Make :class:`Tlp`'s ``fmt_type`` and ``check`` skip repeated work (idempotent)."""
    global _installed
    if _installed:
        return
    _installed = True
    members = TlpType._value2member_map_  # (fmt, type) -> member, as TlpType(...) looks up
    upstream_check = Tlp.check

    def fmt_type(self: Tlp, _get=members.get) -> TlpType:
        member = _get((self.fmt, self.type))
        return member if member is not None else TlpType((self.fmt, self.type))

    def check(self: Tlp) -> bool:
        key = _key(self)
        if self.__dict__.get("_busprobe_checked") == key:
            return True
        ok = upstream_check(self)
        self.__dict__["_busprobe_checked"] = key if ok else None
        return ok

    upstream_init = Tlp.__init__

    def __init__(self: Tlp, tlp=None) -> None:
        upstream_init(self, tlp)
        if isinstance(tlp, Tlp):  # a copy (each link's receiver makes one): the same answer
            checked = tlp.__dict__.get("_busprobe_checked")
            if checked is not None:
                self.__dict__["_busprobe_checked"] = checked

    Tlp.fmt_type = property(fmt_type, Tlp.fmt_type.fset, doc="The TLP's TlpType.")
    Tlp.check = check
    Tlp.__init__ = __init__
