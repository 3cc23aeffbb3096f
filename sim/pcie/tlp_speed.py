"""cocotbext-pcie's ``Tlp``, quicker at answering the same question twice (simulation speed).

Every hop of cocotbext-pcie's fabric (each bridge's receive and send, the root complex's
receive) runs ``assert tlp.check()``, and that and the bridges' routing ask ``tlp.fmt_type``
several times a hop; the property builds the :class:`~cocotbext.pcie.core.tlp.TlpType` anew
from ``(fmt, type)`` through enum's value lookup at each access. Profiled (issue 30, DESIGN
§5.3 "Simulation speed"), these were the largest share of the simulator's Python per TLP after
the task machinery, and they grow with the hops a TLP crosses: behind the switch of
``sim:pcie?endpoints=N`` twice as many as on ``sim:pcie``.

:class:`FastTlp` keeps upstream's behaviour and skips only repeated work:

* ``fmt_type`` reads the member from enum's own value-to-member table (a dict lookup), falling
  back to ``TlpType(...)`` (the same ``ValueError``) for a pair that is no type;
* ``check`` runs upstream's check as before, and remembers the fields it read when it passed;
  asked again about the same TLP with none of them changed, it answers True without running
  it again. A TLP that fails is checked (and reported) again every time. A copy
  (``FastTlp(tlp)``, as every link's receiver makes) starts with what its original remembered:
  its own fields are compared with them, so a copy changed since is checked on its own.

The TLPs the core sends are built as ``FastTlp`` (:mod:`.tlp_stream`); those cocotbext-pcie
builds itself (each link receiver's copy, the root's completions) are ``FastTlp`` once
:func:`~.upstream_speed.install` has run.
"""

from __future__ import annotations

from cocotbext.pcie.core.tlp import Tlp, TlpType

__all__ = ["FastTlp"]

#: ``(fmt, type)`` -> member, the table ``TlpType(...)`` itself looks up.
_MEMBERS = TlpType._value2member_map_


def _key(tlp: Tlp) -> tuple:
    # Every field upstream's Tlp.check reads (cocotbext-pcie 0.2.16).
    return (tlp.fmt, tlp.type, tlp.length, len(tlp.data), tlp.address, tlp.byte_count,
            tlp.lower_address, tlp.last_be)


class FastTlp(Tlp):
    """Upstream's ``Tlp``, its ``fmt_type`` by table and its ``check`` remembered while it passed
    and nothing it reads changed.

    Parameters
    ----------
    tlp : Tlp or None
        A TLP to copy (upstream's copy; a checked ``FastTlp``'s answer comes with it).
    """

    def __init__(self, tlp: Tlp | None = None) -> None:
        super().__init__(tlp)
        self._checked: tuple | None = getattr(tlp, "_checked", None)

    @property
    def fmt_type(self) -> TlpType:
        """The TLP's :class:`~cocotbext.pcie.core.tlp.TlpType`."""
        member = _MEMBERS.get((self.fmt, self.type))
        return member if member is not None else TlpType((self.fmt, self.type))

    @fmt_type.setter
    def fmt_type(self, value) -> None:
        Tlp.fmt_type.fset(self, value)

    def check(self) -> bool:
        """Upstream's check, answered from memory while the fields it read are unchanged."""
        key = _key(self)
        if self._checked == key:
            return True
        ok = super().check()
        self._checked = key if ok else None
        return ok
