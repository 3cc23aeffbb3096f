"""The root port's data link layer at the DLLP level: InitFC and what ACK/NAKs arrive."""

from __future__ import annotations

import itertools

from busprobe.protocol.pcie_dll import DllpType, FramedPacket, fc_dllp

__all__ = ["PartnerDataLink"]

_INIT_FC1 = (DllpType.INIT_FC1_P, DllpType.INIT_FC1_NP, DllpType.INIT_FC1_CPL)
_INIT_FC2 = (DllpType.INIT_FC2_P, DllpType.INIT_FC2_NP, DllpType.INIT_FC2_CPL)
_UPDATE_FC = (DllpType.UPDATE_FC_P, DllpType.UPDATE_FC_NP, DllpType.UPDATE_FC_CPL)


class PartnerDataLink:
    """DL_Inactive -> FC_INIT1 -> FC_INIT2 -> DL_Active, as §3.4.2 says, for VC0.

    Attributes
    ----------
    state: ``"inactive"``, ``"init1"``, ``"init2"`` or ``"active"``.
    credits: the endpoint's advertised (header, data) credits by type name (P, NP, CPL).
    acks, naks: sequence numbers of the ACK and NAK DLLPs received, in order.
    """

    def __init__(self, *, credits: tuple[tuple[int, int], ...] = ((64, 512), (64, 16), (0, 0))):
        self.state = "inactive"
        self.advertised = credits
        self.credits: dict[str, tuple[int, int]] = {}
        self.acks: list[int] = []
        self.naks: list[int] = []
        self._got: set[int] = set()
        self._order = itertools.cycle(range(3))

    def link_up(self) -> None:
        if self.state == "inactive":
            self.state = "init1"
            self._got.clear()

    def link_down(self) -> None:
        self.state = "inactive"

    def next_dllp(self) -> bytes | None:
        """The InitFC DLLP to send next while initialising, else ``None``."""
        if self.state not in ("init1", "init2"):
            return None
        i = next(self._order)
        kinds = _INIT_FC1 if self.state == "init1" else _INIT_FC2
        return fc_dllp(kinds[i], *self.advertised[i])

    def on_packet(self, packet: FramedPacket) -> None:
        if packet.status != "good":
            return
        if packet.kind == "tlp":
            if self.state == "init2":
                self.state = "active"
            return
        kind, word = packet.payload[0], int.from_bytes(packet.payload, "big")
        if kind == DllpType.ACK:
            self.acks.append(word & 0xFFF)
        elif kind == DllpType.NAK:
            self.naks.append(word & 0xFFF)
        for i, name in enumerate(("P", "NP", "CPL")):
            if kind & 0xF8 in (_INIT_FC1[i], _INIT_FC2[i]):
                self._got.add(i)
                self.credits[name] = (word >> 14 & 0xFF, word & 0xFFF)
            if self.state == "init2" and kind & 0xF8 in (_INIT_FC2[i], _UPDATE_FC[i]):
                self.state = "active"
        if self.state == "init1" and self._got == {0, 1, 2}:
            self.state = "init2"
            self._order = itertools.cycle(range(3))
