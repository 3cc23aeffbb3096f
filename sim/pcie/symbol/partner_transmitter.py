"""The root port's data link layer with a transmitter: TLPs numbered, kept and replayed.

:class:`~.partner_dll.PartnerDataLink` receives (ACK, NAK, duplicates) and initialises flow
control; what it sends is framed by the tests with a fixed sequence number and never repeated,
so a fault on the way to the endpoint could never be repaired. :class:`ReplayingDataLink`
adds the transmitter side of §3.5.2: a NEXT_TRANSMIT_SEQ, a replay buffer purged by ACK and
NAK, a replay of everything unacknowledged on a NAK or when the REPLAY_TIMER runs out, and the
faults a hostile link makes on its side of the wire (TLPs lost on the way, ACKs lost on the
way back, an old TLP sent again).
"""

from __future__ import annotations

import collections

from busprobe.protocol.pcie_dll import SEQ_MODULUS, DllpType, FramedPacket

from .partner_dll import DlState, PartnerDataLink

__all__ = ["ReplayingDataLink"]


class ReplayingDataLink(PartnerDataLink):
    """A root port's data link layer that sends TLPs as §3.5.2.1 says.

    Give it to :class:`~.partner.RootPortPartner` as ``dll``, queue TLPs with :meth:`send` and
    call :meth:`tick` once per symbol time (the REPLAY_TIMER).

    Attributes
    ----------
    next_transmit_seq: the sequence number the next new TLP gets.
    replays, replay_timeouts: replays started (for any reason), and those the timer started.
    lose_sent: TLPs still to vanish on the way to the endpoint (numbered, kept for replay,
        never on the wire).
    lose_acks_in: ACK DLLPs from the endpoint still to vanish on the way.
    duplicate_next: times still to send the newest acknowledged TLP again (the endpoint must
        drop it and ACK it, §3.5.3.1).
    lost_sent, lost_acks_in, duplicates_sent: the faults above as they happened.

    Parameters
    ----------
    replay_timeout: symbol times without ACK progress before everything unacknowledged is
        sent again.
    """

    def __init__(self, *, replay_timeout: int = 1200, **options) -> None:
        super().__init__(**options)
        self.replay_timeout = replay_timeout
        self.next_transmit_seq = 0
        self.replays = self.replay_timeouts = 0
        self.lose_sent = self.lose_acks_in = self.duplicate_next = 0
        self.lost_sent = self.lost_acks_in = self.duplicates_sent = 0
        self._queue: collections.deque[bytes] = collections.deque()
        self._unacked: collections.deque[tuple[int, bytes]] = collections.deque()
        self._replay: collections.deque[tuple[int, bytes]] = collections.deque()
        self._newest_acked: tuple[int, bytes] | None = None
        self._timer = 0

    def send(self, tlp: bytes) -> None:
        """Queue a TLP (its bytes, header first); it gets its number when it goes."""
        self._queue.append(tlp)

    @property
    def unacknowledged(self) -> int:
        """TLPs queued or sent and not yet acknowledged."""
        return len(self._queue) + len(self._unacked)

    def tick(self) -> None:
        """One symbol time of the REPLAY_TIMER: it runs while anything sent is unacknowledged
        and restarts on ACK progress and on each replay."""
        if not self._unacked or self._replay:
            self._timer = 0
            return
        self._timer += 1
        if self._timer >= self.replay_timeout:
            self.replay_timeouts += 1
            self._start_replay()

    def next_tlp(self) -> tuple[int, bytes] | None:
        if self.state != DlState.ACTIVE:
            return None
        if self.duplicate_next and self._newest_acked is not None:
            self.duplicate_next -= 1
            self.duplicates_sent += 1
            return self._newest_acked
        if self._replay:
            return self._replay.popleft()
        while self._queue:
            tlp = (self.next_transmit_seq, self._queue.popleft())
            self.next_transmit_seq = (self.next_transmit_seq + 1) % SEQ_MODULUS
            self._unacked.append(tlp)
            if not self.lose_sent:
                return tlp
            self.lose_sent -= 1
            self.lost_sent += 1
        return None

    def on_packet(self, packet: FramedPacket) -> None:
        kind = packet.payload[0] if packet.kind == "dllp" and packet.status == "good" else None
        if kind == DllpType.ACK and self.lose_acks_in:
            self.lose_acks_in -= 1
            self.lost_acks_in += 1
            return
        super().on_packet(packet)
        if kind in (DllpType.ACK, DllpType.NAK):
            self._acknowledged(int.from_bytes(packet.payload, "big") & 0xFFF)
            if kind == DllpType.NAK:
                self._start_replay()

    def _acknowledged(self, seq: int) -> None:
        """Purge what ``seq`` acknowledges (it and everything older); an ACK for a TLP never
        sent, or one already purged, changes nothing."""
        unacked = self._unacked
        if not unacked or (seq - unacked[0][0]) % SEQ_MODULUS >= len(unacked):
            return
        while unacked and (seq - unacked[0][0]) % SEQ_MODULUS < SEQ_MODULUS // 2:
            self._newest_acked = unacked.popleft()
        done = {number for number, _ in self._replay} - {number for number, _ in unacked}
        self._replay = collections.deque(t for t in self._replay if t[0] not in done)
        self._timer = 0

    def _start_replay(self) -> None:
        self.replays += 1
        self._timer = 0
        self._replay = collections.deque(self._unacked)
