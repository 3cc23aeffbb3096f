"""The receive side of the data link layer's ACK/NAK protocol (§3.5.3.1)."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_dll import ACK_LATENCY_SYMBOLS, SEQ_MODULUS, DllpType

from .word_deframer import TlpStatus

__all__ = ["AckNakScheduler", "DEFAULT_ACK_LATENCY", "by_payload_size"]

#: Symbol times an ACK may wait at the smallest Max_Payload_Size (after reset).
DEFAULT_ACK_LATENCY = ACK_LATENCY_SYMBOLS[128]


def by_payload_size(table: dict[int, int], max_payload_size):
    """The entry of ``table`` (keyed by Max_Payload_Size in bytes) for the signal
    ``max_payload_size``; the smallest size's for any value not in the table."""
    sizes = sorted(table)
    limit = Const(table[sizes[0]], range(max(table.values()) + 1))
    for size in sizes[1:]:
        limit = Mux(max_payload_size == size, table[size], limit)
    return limit


class AckNakScheduler(wiring.Component):
    """Keeps NEXT_RCV_SEQ, decides each received TLP's fate and schedules ACK and NAK DLLPs.

    For each TLP the deframer ends (``tlp_end``):

    - good LCRC, the expected sequence number: ``accept`` (the transaction layer takes it),
      NEXT_RCV_SEQ + 1, NAK_SCHEDULED cleared, an ACK due within ``ack_latency``;
    - good LCRC, an earlier sequence number (a duplicate, (NEXT_RCV_SEQ - seq) mod 4096 <=
      2048): ``discard``, an ACK due at once (the transmitter replayed what was received);
    - good LCRC, a later sequence number (one was lost), a bad LCRC, or malformed: ``discard``,
      and a NAK unless one is already scheduled;
    - nullified: ``discard``, nothing else.

    ACK and NAK carry NEXT_RCV_SEQ - 1. A NAK goes before an ACK.

    Attributes
    ----------
    link_up: Signal(), input
        Low: forget everything (NEXT_RCV_SEQ 0), as at DL_Inactive.
    tlp_end, tlp_status, tlp_seq: input
        From the deframer.
    accept, discard: Signal(), output
        Strobes with ``tlp_end``: keep or drop the TLP just received.
    tx_dllp: stream of Signal(32), output
        ACK/NAK DLLPs, byte 0 in bits 7:0.
    next_rcv_seq: Signal(12), output
    naks, duplicates: Signal(16), output
        NAKs sent and duplicate TLPs dropped (wrap).

    max_payload_size: Signal(16), input
        The negotiated Max_Payload_Size in bytes (configuration space's): the ACK may wait
        :data:`~busprobe.protocol.pcie_dll.ACK_LATENCY_SYMBOLS` of it.

    Parameters
    ----------
    ack_latency: int or None
        Symbol times an ACK may be held back, fixed; ``None``: by ``max_payload_size``.
    symbols_per_clock: int
        Symbol times a clock stands for (4 on the link at Gen1, a word every 62.5 MHz clock).
    """

    link_up: In(1)
    tlp_end: In(1)
    tlp_status: In(TlpStatus)
    tlp_seq: In(12)
    accept: Out(1)
    discard: Out(1)
    tx_dllp: Out(stream.Signature(32))
    next_rcv_seq: Out(12)
    naks: Out(16)
    duplicates: Out(16)
    max_payload_size: In(16)

    def __init__(self, *, ack_latency: int | None = None, symbols_per_clock: int = 1):
        self._ack_latency = ack_latency
        self._symbols_per_clock = symbols_per_clock
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        nak_scheduled = Signal()
        nak_due = Signal()
        ack_pending = Signal()
        ack_now = Signal()
        if self._ack_latency is None:
            latency = Signal(range(max(ACK_LATENCY_SYMBOLS.values()) + 1))
            m.d.sync += latency.eq(by_payload_size(ACK_LATENCY_SYMBOLS, self.max_payload_size))
        else:
            latency = Const(self._ack_latency)
        timer = Signal(range(2 ** len(latency) + self._symbols_per_clock))  # symbol times
        nxt = self.next_rcv_seq
        behind = Signal(12)  # (NEXT_RCV_SEQ - seq) mod 4096
        m.d.comb += behind.eq(nxt - self.tlp_seq)

        def schedule_nak():
            with m.If(~nak_scheduled):
                m.d.sync += [nak_scheduled.eq(1), nak_due.eq(1)]

        with m.If(self.tlp_end):
            with m.Switch(self.tlp_status):
                with m.Case(TlpStatus.GOOD):
                    with m.If(self.tlp_seq == nxt):
                        m.d.comb += self.accept.eq(1)
                        m.d.sync += [nxt.eq(nxt + 1), nak_scheduled.eq(0), ack_pending.eq(1)]
                    with m.Elif(behind <= SEQ_MODULUS // 2):
                        m.d.comb += self.discard.eq(1)
                        m.d.sync += [ack_now.eq(1), self.duplicates.eq(self.duplicates + 1)]
                    with m.Else():
                        m.d.comb += self.discard.eq(1)
                        schedule_nak()
                with m.Case(TlpStatus.NULLIFIED):
                    m.d.comb += self.discard.eq(1)
                with m.Default():
                    m.d.comb += self.discard.eq(1)
                    schedule_nak()

        # >=: a smaller MPS written while an ACK waits must not let the timer run past it.
        with m.If(ack_pending & (timer < latency)):
            m.d.sync += timer.eq(timer + self._symbols_per_clock)
        ack_due = (ack_pending & (timer >= latency)) | ack_now
        acked = Signal(12)
        m.d.comb += acked.eq(nxt - 1)
        with m.If(nak_due):
            m.d.comb += [self.tx_dllp.valid.eq(1),
                         self.tx_dllp.payload.eq(_ack_word(DllpType.NAK, acked))]
        with m.Elif(ack_due):
            m.d.comb += [self.tx_dllp.valid.eq(1),
                         self.tx_dllp.payload.eq(_ack_word(DllpType.ACK, acked))]
        with m.If(self.tx_dllp.valid & self.tx_dllp.ready):
            with m.If(nak_due):
                m.d.sync += [nak_due.eq(0), self.naks.eq(self.naks + 1)]
            # A NAK acknowledges everything before NEXT_RCV_SEQ too; either way the ACK owed
            # is paid (unless a TLP accepted in this very clock owes a new one).
            with m.If(~self.accept):
                m.d.sync += ack_pending.eq(0)
            m.d.sync += [ack_now.eq(0), timer.eq(0)]

        with m.If(~self.link_up):
            m.d.sync += [nxt.eq(0), nak_scheduled.eq(0), nak_due.eq(0), ack_pending.eq(0),
                         ack_now.eq(0), timer.eq(0)]
        return m


def _ack_word(kind: DllpType, seq):
    """An ACK/NAK DLLP as the framer takes it: type, 0, seq[11:8], seq[7:0] in bytes 0..3."""
    return Cat(Const(kind.value, 8), Const(0, 8), seq[8:12], Const(0, 4), seq[:8])
