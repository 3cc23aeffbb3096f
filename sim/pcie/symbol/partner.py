"""The root port's side of training, SKP handling and framing, one symbol a step."""

from __future__ import annotations

import collections
import dataclasses
import enum

from busprobe.protocol.pcie_dll import FramedPacket, deframe, frame_dllp, frame_tlp
from busprobe.protocol.pcie_scrambler import Scrambler
from busprobe.protocol.pcie_symbols import (
    COMPLIANCE_PATTERN,
    EIOS,
    LOGICAL_IDLE,
    RATE_2_5GT,
    SKP_ORDERED_SET,
    TS_LENGTH,
    KCode,
    TrainingControl,
    TrainingSet,
    TsKind,
    decode_ts,
    encode_ts,
)

from .partner_dll import DataLinkLayer, PartnerDataLink

__all__ = ["RootPortPartner", "PartnerState"]


class PartnerState(enum.StrEnum):
    """The root port's states (a downstream port's LTSSM, §4.2.6, as far as this slice needs)."""

    DETECT = "detect"
    POLLING_ACTIVE = "polling_active"
    POLLING_CONFIGURATION = "polling_configuration"
    CONFIG_LINKWIDTH = "config_linkwidth"
    CONFIG_LANENUM = "config_lanenum"
    CONFIG_COMPLETE = "config_complete"
    CONFIG_IDLE = "config_idle"
    L0 = "l0"
    RECOVERY_RCVRLOCK = "recovery_rcvrlock"
    RECOVERY_RCVRCFG = "recovery_rcvrcfg"
    RECOVERY_IDLE = "recovery_idle"


@dataclasses.dataclass
class _Counts:
    rx: int = 0  # consecutive matching TSs or idle symbols received (kept once it reaches 8)
    tx: int = 0  # TSs or idle symbols sent (after ``heard`` where the state says so)
    heard: bool = False


class RootPortPartner:
    """A downstream port at the symbol level: trains, keeps L0, sends and receives packets.

    Call :meth:`step` once per symbol time with what the endpoint sent (``None`` while its
    transmitter is in electrical idle); it returns the symbol to send back, or ``None`` for
    electrical idle. SKP ordered sets are inserted every ``skp_interval`` symbol times between
    packets and removed on receive; :attr:`received` is every packet found in L0, judged by
    :func:`~busprobe.protocol.pcie_dll.deframe`.

    Parameters
    ----------
    link, lane: the link and lane numbers it assigns.
    polling_ts1_min: TS1s sent in Polling.Active before moving on (1024 in the spec).
    silent: symbol times it stays in electrical idle before training (an endpoint whose
        Polling.Active times out first goes to Polling.Compliance).
    skp_interval: symbol times between SKP ordered sets.
    data_link: run flow-control initialisation in L0 (:class:`.partner_dll.PartnerDataLink`);
        off, the partner sends only what the test asks for.
    dll: the data link layer above the symbols (default: a
        :class:`.partner_dll.PartnerDataLink`); it hears LinkUp/LinkDown and every packet
        found in L0, and supplies DLLPs where ``data_link`` says.
    ask_compliance: send Polling.Active's TS1s with Compliance Receive set (a test fixture
        asking the endpoint for its compliance pattern) until :meth:`end_compliance`.
    rates: the data rate identifier its TSs carry (:data:`RATE_2_5GT` by default; a Gen2 root
        port's is ``RATE_2_5GT | RATE_5GT``). The partner never changes speed itself: what
        both ends offer is :attr:`common_rates`, for a test to judge.
    lane: the lane number it proposes; a wide port whose lanes are reversed proposes its
        highest lane number on the lane an x1 endpoint has.
    scrambled: what :meth:`step` takes and gives is on the wire, scrambled (§4.2.1.3, the
        reference :class:`~busprobe.protocol.pcie_scrambler.Scrambler` each way), as a real
        root port's is; off, both ends exchange unscrambled symbols.
    """

    def __init__(self, *, link: int = 0, lane: int = 0, polling_ts1_min: int = 16,
                 silent: int = 0, skp_interval: int = 1200, data_link: bool = True,
                 ask_compliance: bool = False, scrambled: bool = False,
                 rates: int = RATE_2_5GT, dll: DataLinkLayer | None = None):
        self.link, self.lane = link, lane
        self.rates = rates
        #: The data rate identifier of the endpoint's last TS (``None`` before one).
        self.endpoint_rates: int | None = None
        self.polling_ts1_min = polling_ts1_min
        self.silent = silent
        self.skp_interval = skp_interval
        self.state = PartnerState.DETECT
        self.history: list[str] = [self.state]
        self.seen_compliance = 0
        self.l0_symbols: list[int] = []
        self.skp_received = 0
        self.skp_sent = 0
        self._counts = _Counts()
        self._tx: collections.deque[int] = collections.deque()
        self._outbox: collections.deque[list[int]] = collections.deque()
        self._sent_kind: TsKind | None = None
        self._skp_timer = 0
        self._skp_owed = 0
        self._os: list[int] | None = None  # an ordered set being received
        self._skipping = False
        self._time = 0
        self.dll = PartnerDataLink() if dll is None else dll
        self.data_link = data_link
        self.ask_compliance = ask_compliance
        self._packet: list[int] | None = None  # a packet being received in L0
        self._scrambler = Scrambler() if scrambled else None
        self._descrambler = Scrambler() if scrambled else None

    # What the tests ask for. ------------------------------------------------------------------
    def send_tlp(self, seq: int, tlp: bytes, *, nullified: bool = False) -> None:
        self._outbox.append(frame_tlp(seq, tlp, nullified=nullified))

    def send_dllp(self, dllp: bytes) -> None:
        self._outbox.append(frame_dllp(dllp))

    def send_symbols(self, symbols: list[int]) -> None:
        """Raw symbols, sent whole in L0 (a corrupted packet, a stray K-code)."""
        self._outbox.append(list(symbols))

    def power_off(self) -> None:
        """Stop transmitting (electrical idle) for good, as a root port that went away."""
        self.silent = float("inf")
        self._tx.clear()
        self._goto(PartnerState.DETECT)

    def end_compliance(self) -> None:
        """Stop asking for the compliance pattern: an EIOS, then ordinary TS1s."""
        self.ask_compliance = False
        self._tx.extend(EIOS)

    def start_recovery(self) -> None:
        self._goto(PartnerState.RECOVERY_RCVRLOCK)

    @property
    def received(self) -> list[FramedPacket]:
        return deframe(self.l0_symbols)

    @property
    def idle_outbox(self) -> bool:
        return not self._outbox and not self._tx

    # One symbol time. -------------------------------------------------------------------------
    def step(self, rx: int | None) -> int | None:
        self._time += 1
        if rx is not None:
            self._receive(rx if self._descrambler is None else self._descrambler.symbol(rx))
        if self.state == PartnerState.DETECT:
            if self._time > self.silent:
                self._goto(PartnerState.POLLING_ACTIVE)
            return None
        self._skp_timer += 1
        if self._skp_timer == self.skp_interval:
            self._skp_timer = 0
            self._skp_owed += 1
        if not self._tx:
            self._refill()
        symbol = self._tx.popleft()
        return symbol if self._scrambler is None else self._scrambler.symbol(symbol)

    def _goto(self, state: str) -> None:
        if state == PartnerState.L0:
            self.dll.link_up()
        elif state in (PartnerState.DETECT, PartnerState.POLLING_ACTIVE):
            self.dll.link_down()
        self.state = state
        self.history.append(state)
        self._counts = _Counts()

    # Transmit. --------------------------------------------------------------------------------
    def _refill(self) -> None:
        """Queue the next unit (a boundary: a SKP ordered set may go first)."""
        if self._skp_owed:
            self._skp_owed -= 1
            self.skp_sent += 1
            self._tx.extend(SKP_ORDERED_SET)
            return
        self._note_sent()
        numbered = self.state not in (PartnerState.POLLING_ACTIVE,
                                      PartnerState.POLLING_CONFIGURATION)
        link = self.link if numbered else None
        lane = self.lane if numbered and self.state != PartnerState.CONFIG_LINKWIDTH else None
        ts_kind = {
            PartnerState.POLLING_ACTIVE: TsKind.TS1,
            PartnerState.POLLING_CONFIGURATION: TsKind.TS2,
            PartnerState.CONFIG_LINKWIDTH: TsKind.TS1,
            PartnerState.CONFIG_LANENUM: TsKind.TS1,
            PartnerState.CONFIG_COMPLETE: TsKind.TS2,
            PartnerState.RECOVERY_RCVRLOCK: TsKind.TS1,
            PartnerState.RECOVERY_RCVRCFG: TsKind.TS2,
        }.get(self.state)
        self._sent_kind = ts_kind
        if ts_kind is not None:
            asking = self.ask_compliance and self.state == PartnerState.POLLING_ACTIVE
            control = TrainingControl.COMPLIANCE_RECEIVE if asking else TrainingControl.NONE
            self._tx.extend(encode_ts(TrainingSet(ts_kind, link, lane, rate=self.rates,
                                                  control=control)))
        elif self.state == PartnerState.L0 and self._outbox:
            self._tx.extend(self._outbox.popleft())
        elif (self.state == PartnerState.L0 and self.data_link
              and (dllp := self.dll.next_dllp()) is not None):
            self._tx.extend(frame_dllp(dllp))
        elif (self.state == PartnerState.L0 and self.data_link
              and (tlp := self.dll.next_tlp()) is not None):
            self._tx.extend(frame_tlp(*tlp))
        else:
            self._tx.append(LOGICAL_IDLE)
            self._sent_kind = None
            self._idle_sent()

    def _note_sent(self) -> None:
        """The unit just finished was a TS: count it where the state counts what it sent."""
        counts = self._counts
        if self._sent_kind is None:
            return
        if self.state == PartnerState.POLLING_ACTIVE or counts.heard:
            counts.tx += 1
        self._advance()

    def _idle_sent(self) -> None:
        if self._counts.heard:
            self._counts.tx += 1
        self._advance()

    # Receive. ---------------------------------------------------------------------------------
    def _receive(self, symbol: int) -> None:
        if self._skipping and symbol == KCode.SKP:
            return
        self._skipping = False
        if self._os is not None and len(self._os) == 1 and symbol == KCode.SKP:
            self._os = None
            self._skipping = True
            self.skp_received += 1
            return
        if symbol == KCode.COM:
            self._os = [symbol]
            return
        if self._os is not None:
            self._os.append(symbol)
            if len(self._os) == TS_LENGTH:
                ts = decode_ts(self._os)
                self._os = None
                if ts is not None:
                    self._on_ts(ts)
            elif self._os == [KCode.COM, COMPLIANCE_PATTERN[1]]:
                self.seen_compliance += 1
                self._os = None
            return
        if self.state == PartnerState.L0:
            self.l0_symbols.append(symbol)
            self._collect(symbol)
        if self.state in (PartnerState.CONFIG_IDLE, PartnerState.RECOVERY_IDLE):
            counts = self._counts
            if symbol == LOGICAL_IDLE:
                counts.heard = True
                counts.rx += 1
            elif counts.rx < 8:
                counts.rx = 0
            self._advance()

    def _collect(self, symbol: int) -> None:
        """Hand each packet to the data link layer as its END/EDB arrives."""
        if symbol in (KCode.STP, KCode.SDP):
            self._packet = []
        if self._packet is None:
            return
        self._packet.append(symbol)
        if symbol in (KCode.END, KCode.EDB):
            for packet in deframe(self._packet):
                self.dll.on_packet(packet)
            self._packet = None

    @property
    def common_rates(self) -> int | None:
        """The data rates both ends offer (a bit each, as in a TS), once the endpoint sent one."""
        return None if self.endpoint_rates is None else self.rates & self.endpoint_rates

    def _on_ts(self, ts: TrainingSet) -> None:
        self.endpoint_rates = ts.rate
        state, counts = self.state, self._counts
        pads = ts.link is None and ts.lane is None
        ours = ts.link == self.link and ts.lane == self.lane
        match = {
            PartnerState.POLLING_ACTIVE: pads,
            PartnerState.POLLING_CONFIGURATION: pads and ts.kind == TsKind.TS2,
            PartnerState.CONFIG_LINKWIDTH: (ts.kind == TsKind.TS1 and ts.link == self.link
                                            and ts.lane is None),
            PartnerState.CONFIG_LANENUM: ts.kind == TsKind.TS1 and ours,
            PartnerState.CONFIG_COMPLETE: ts.kind == TsKind.TS2 and ours,
            PartnerState.RECOVERY_RCVRLOCK: ours,
            PartnerState.RECOVERY_RCVRCFG: ts.kind == TsKind.TS2 and ours,
        }.get(state)
        if state == PartnerState.L0:
            self._goto(PartnerState.RECOVERY_RCVRLOCK)  # the endpoint went to Recovery
            return
        if match is None:
            return
        if match:
            counts.heard = True
            counts.rx += 1
        elif counts.rx < 8:
            counts.rx = 0
        self._advance()

    def _advance(self) -> None:
        """Leave the state when what it waits for has been received and sent (§4.2.6)."""
        s, c = self.state, self._counts
        if s == PartnerState.POLLING_ACTIVE and c.rx >= 8 and c.tx >= self.polling_ts1_min:
            self._goto(PartnerState.POLLING_CONFIGURATION)
        elif s in (PartnerState.POLLING_CONFIGURATION, PartnerState.CONFIG_COMPLETE,
                   PartnerState.RECOVERY_RCVRCFG, PartnerState.CONFIG_IDLE,
                   PartnerState.RECOVERY_IDLE) and c.rx >= 8 and c.tx >= 16:
            self._goto({
                PartnerState.POLLING_CONFIGURATION: PartnerState.CONFIG_LINKWIDTH,
                PartnerState.CONFIG_COMPLETE: PartnerState.CONFIG_IDLE,
                PartnerState.RECOVERY_RCVRCFG: PartnerState.RECOVERY_IDLE,
                PartnerState.CONFIG_IDLE: PartnerState.L0,
                PartnerState.RECOVERY_IDLE: PartnerState.L0,
            }[s])
        elif s == PartnerState.CONFIG_LINKWIDTH and c.rx >= 2:
            self._goto(PartnerState.CONFIG_LANENUM)
        elif s == PartnerState.CONFIG_LANENUM and c.rx >= 2:
            self._goto(PartnerState.CONFIG_COMPLETE)
        elif s == PartnerState.RECOVERY_RCVRLOCK and c.rx >= 8:
            self._goto(PartnerState.RECOVERY_RCVRCFG)
