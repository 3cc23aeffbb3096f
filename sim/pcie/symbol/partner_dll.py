"""The root port's data link layer at the DLLP level: InitFC and what ACK/NAKs arrive."""

from __future__ import annotations

import dataclasses
import enum
import itertools
from typing import Protocol

from busprobe.protocol.pcie_dll import (
    SEQ_MODULUS,
    DllpType,
    FramedPacket,
    ack_dllp,
    fc_dllp,
    nak_dllp,
)

__all__ = ["PartnerDataLink", "DlState", "DataLinkLayer"]

_INIT_FC1 = (DllpType.INIT_FC1_P, DllpType.INIT_FC1_NP, DllpType.INIT_FC1_CPL)
_INIT_FC2 = (DllpType.INIT_FC2_P, DllpType.INIT_FC2_NP, DllpType.INIT_FC2_CPL)
_UPDATE_FC = (DllpType.UPDATE_FC_P, DllpType.UPDATE_FC_NP, DllpType.UPDATE_FC_CPL)


class DataLinkLayer(Protocol):
    """What :class:`~.partner.RootPortPartner` needs from the data link layer above it: this
    module's :class:`PartnerDataLink`, or cocotbext-pcie's ``Port`` through
    :class:`~.cocotb_port.SymbolPort`."""

    def link_up(self) -> None: ...

    def link_down(self) -> None: ...

    def next_dllp(self) -> bytes | None: ...

    def on_packet(self, packet: FramedPacket) -> None: ...

    def next_tlp(self) -> tuple[int, bytes] | None: ...


class DlState(enum.StrEnum):
    """The data link layer's states, with flow-control initialisation's two phases."""

    INACTIVE = "inactive"
    FC_INIT1 = "init1"
    FC_INIT2 = "init2"
    ACTIVE = "active"


class PartnerDataLink:
    """DL_Inactive -> FC_INIT1 -> FC_INIT2 -> DL_Active, as §3.4.2 says, for VC0.

    Attributes
    ----------
    state: a :class:`DlState`.
    credits: the endpoint's advertised (header, data) credits by type name (P, NP, CPL).
    acks, naks: sequence numbers of the ACK and NAK DLLPs received, in order.
    tlps: the TLPs kept (sequence number, bytes), in order: each once, as §3.5.3.1 says.
    naks_sent, duplicates: NAKs sent and duplicate TLPs dropped.
    withhold_acks: ACKs still to be dropped instead of sent (a lossy link, for the tests).
    corrupt_tlps: TLPs still to be treated as arriving with a bad LCRC.
    lose_tlps: TLPs still to vanish on the way (never seen: the next one is out of sequence).
    """

    def __init__(self, *, credits: tuple[tuple[int, int], ...] = ((64, 512), (64, 16), (0, 0))):
        self.state = DlState.INACTIVE
        self.advertised = credits
        self.credits: dict[str, tuple[int, int]] = {}
        self.acks: list[int] = []
        self.naks: list[int] = []
        self._got: set[int] = set()
        self.tlps: list[tuple[int, bytes]] = []
        self.naks_sent = 0
        self.duplicates = 0
        self.withhold_acks = 0
        self.corrupt_tlps = 0
        self.lose_tlps = 0
        self._next_rcv = 0
        self._nak_scheduled = False
        self._owed: bytes | None = None  # the ACK or NAK to send next
        self._order = itertools.cycle(range(3))

    def link_up(self) -> None:
        if self.state == DlState.INACTIVE:
            self.state = DlState.FC_INIT1
            self._got.clear()
            self._next_rcv, self._nak_scheduled, self._owed = 0, False, None

    def link_down(self) -> None:
        self.state = DlState.INACTIVE

    def next_dllp(self) -> bytes | None:
        """An owed ACK/NAK, else the InitFC DLLP to send while initialising, else ``None``."""
        if self._owed is not None:
            owed, self._owed = self._owed, None
            return owed
        if self.state not in (DlState.FC_INIT1, DlState.FC_INIT2):
            return None
        i = next(self._order)
        kinds = _INIT_FC1 if self.state == DlState.FC_INIT1 else _INIT_FC2
        return fc_dllp(kinds[i], *self.advertised[i])

    def next_tlp(self) -> tuple[int, bytes] | None:
        """The next TLP (sequence number, bytes) to send after the DLLPs: none here (the
        tests frame their own with :meth:`RootPortPartner.send_tlp`;
        :class:`~.partner_transmitter.ReplayingDataLink` numbers and replays them)."""
        return None

    def on_packet(self, packet: FramedPacket) -> None:
        if packet.kind == "tlp":
            self._on_tlp(packet)
            return
        if packet.status != "good":
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
            if self.state == DlState.FC_INIT2 and kind & 0xF8 in (_INIT_FC2[i], _UPDATE_FC[i]):
                self.state = DlState.ACTIVE
        if self.state == DlState.FC_INIT1 and self._got == {0, 1, 2}:
            self.state = DlState.FC_INIT2
            self._order = itertools.cycle(range(3))

    def _on_tlp(self, packet: FramedPacket) -> None:
        """§3.5.3.1: keep the next in order and ACK it, drop and ACK a duplicate, NAK the rest
        once (a nullified TLP is dropped silently)."""
        if self.lose_tlps:
            self.lose_tlps -= 1
            return
        if packet.status == "good" and self.corrupt_tlps:
            self.corrupt_tlps -= 1
            packet = dataclasses.replace(packet, status="bad_crc")
        if packet.status == "nullified":
            return
        last = (self._next_rcv - 1) % SEQ_MODULUS
        if packet.status == "good" and packet.seq == self._next_rcv:
            if self.state == DlState.FC_INIT2:
                self.state = DlState.ACTIVE
            self.tlps.append((packet.seq, packet.payload))
            self._next_rcv = (self._next_rcv + 1) % SEQ_MODULUS
            self._nak_scheduled = False
            self._ack((self._next_rcv - 1) % SEQ_MODULUS)
        elif packet.status == "good" and (self._next_rcv - packet.seq) % SEQ_MODULUS <= 2048:
            self.duplicates += 1
            self._ack(last)
        elif not self._nak_scheduled:
            self._nak_scheduled = True
            self.naks_sent += 1
            self._owed = nak_dllp(last)

    def _ack(self, seq: int) -> None:
        if self.withhold_acks:
            self.withhold_acks -= 1
            return
        if self._owed is None or self._owed[0] == DllpType.ACK:
            self._owed = ack_dllp(seq)
