"""The transmit side of the ACK/NAK protocol: sequence numbers, the replay buffer and its timer
(PCIe Base 3.0 §3.5.2.1)."""

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import data as layouts
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_dll import REPLAY_TIMEOUT_SYMBOLS, SEQ_MODULUS, DllpType

from .ack_nak import by_payload_size
from .word_framer import TLP_BYTE, unit_size

__all__ = ["ReplayBuffer", "DEFAULT_REPLAY_TIMEOUT"]

#: REPLAY_TIMER limit at the smallest Max_Payload_Size (after reset).
DEFAULT_REPLAY_TIMEOUT = REPLAY_TIMEOUT_SYMBOLS[128]
_MAX_TLP = 2 + 16 + 512 + 4  # largest TLP kept: 4-DW header, 512-byte payload, ECRC


class ReplayBuffer(wiring.Component):
    """Numbers TLPs, keeps each until it is ACKed, and sends them again on NAK or timeout.

    A TLP from the transaction layer goes to the framer as it arrives and into a circular
    buffer of its units (bytes on the one-symbol link, DWs on the four-symbol one) at the same
    time. An ACK or NAK for sequence number *s* frees every TLP up to *s*
    (and resets REPLAY_NUM and the timer when it frees one); a NAK then, or REPLAY_TIMER running
    out, replays every TLP still kept, oldest first, after the TLP being sent (if any). The
    fourth replay in a row without progress raises ``retrain`` (REPLAY_NUM rollover: the LTSSM
    goes to Recovery) and replays again once the link is back.

    Attributes
    ----------
    active: Signal(), input
        DL_Active; low forgets everything (NEXT_TRANSMIT_SEQ 0, ACKD_SEQ 4095).
    tlp: stream of ``unit``, input
        From the transaction layer; not ready while a replay runs or no room is left.
    source: stream of ``unit``, output; source_seq: Signal(12), output
        To the framer, with the sequence number of the TLP in progress.
    rx_dllp: stream of Signal(32), input (never stalled)
        Good DLLPs received (ACK and NAK are used).
    retrain: Signal(), output
        Strobe: REPLAY_NUM rolled over (from a register, the clock after).
    next_transmit_seq, acked_seq: Signal(12), output
    replays, timeouts, protocol_errors: Signal(16), output
        Replays started (by NAK or timeout), of which by timeout; ACK/NAKs naming a sequence
        number not sent and not yet acknowledged (a Data Link Protocol Error, §3.5.2.1).
    max_payload_size: Signal(16), input
        The negotiated Max_Payload_Size in bytes: the REPLAY_TIMER limit is
        :data:`~busprobe.protocol.pcie_dll.REPLAY_TIMEOUT_SYMBOLS` of it.

    Parameters
    ----------
    depth: int
        Bytes kept (a power of two).
    max_outstanding: int
        TLPs kept at most (a power of two).
    replay_timeout: int or None
        REPLAY_TIMER limit in symbol times, fixed; ``None``: by ``max_payload_size``.
    unit: StructLayout
        What a TLP moves in: :data:`~.word_framer.TLP_BYTE` (the default) or a DW layout with the
        same fields (``data`` 32 bits, ``last``, ``nullify``).
    symbols_per_clock: int
        Symbol times a clock stands for (REPLAY_TIMER counts symbol times): 4 on the link at
        Gen1 (a word every 62.5 MHz clock), as at Gen2 on a 125 MHz one.
    """

    def __init__(self, *, depth: int = 4096, max_outstanding: int = 8,
                 replay_timeout: int | None = None, unit: layouts.StructLayout = TLP_BYTE,
                 symbols_per_clock: int = 1):
        for name, value in (("depth", depth), ("max_outstanding", max_outstanding)):
            if value & (value - 1):
                raise ValueError(f"replay buffer {name} {value} is not a power of two")
        unit_bytes = unit_size(unit)
        self._unit_bytes, self._symbols_per_clock = unit_bytes, symbols_per_clock
        self._depth, self._slots, self._timeout = depth // unit_bytes, max_outstanding, \
            replay_timeout
        super().__init__({
            "active": In(1),
            "tlp": In(stream.Signature(unit)),
            "source": Out(stream.Signature(unit)),
            "source_seq": Out(12),
            "rx_dllp": In(stream.Signature(32, always_ready=True)),
            "retrain": Out(1),
            "next_transmit_seq": Out(12),
            "acked_seq": Out(12, init=SEQ_MODULUS - 1),
            "replays": Out(16),
            "timeouts": Out(16),
            "protocol_errors": Out(16),
            "max_payload_size": In(16),
        })

    def elaborate(self, platform):
        m = Module()
        depth, slots = self._depth, self._slots
        m.submodules.data = data = memory.Memory(shape=8 * self._unit_bytes, depth=depth,
                                                 init=[])
        m.submodules.ends = ends = memory.Memory(shape=range(depth), depth=slots, init=[])
        write = data.write_port()
        read = data.read_port()
        end_write = ends.write_port()
        end_read = ends.read_port(domain="comb")  # for the replay
        purge_read = ends.read_port(domain="comb")  # for ACK/NAK

        nxt, acked = self.next_transmit_seq, self.acked_seq
        outstanding = Signal(12)
        m.d.comb += outstanding.eq(nxt - acked - 1)
        m.d.sync += self.retrain.eq(0)
        wr_ptr = Signal(range(depth))  # where the next byte goes
        oldest = Signal(range(depth))  # where the oldest kept TLP starts
        used = Signal(range(depth))
        m.d.comb += used.eq(wr_ptr - oldest)
        # Registered, so the sequence compare's carry chain is not on one path with the
        # framer and the PHY: a clock late, each bound one tighter (a clock adds at most one
        # TLP and one unit), so at most ``slots - 1`` TLPs are kept, as before.
        room = Signal()
        m.d.sync += room.eq((outstanding < slots - 2)
                            & (used < depth - -(-_MAX_TLP // self._unit_bytes) - 1))

        rd_ptr = Signal(range(depth))  # the byte ``read.data`` shows
        rd_seq = Signal(12)  # the TLP being replayed
        # Sums wrap as the pointers and sequence numbers do: ``a + 1`` is one bit wider than
        # ``a`` in Amaranth, so compare these, never ``a + 1`` itself (the hostile-link fuzz
        # found a replay that never ended when the byte store wrapped to 0 at a TLP's end).
        rd_ptr_next = Signal(range(depth))
        rd_seq_next = Signal(12)
        first_kept = Signal(12)  # ACKD_SEQ + 1
        m.d.comb += [rd_ptr_next.eq(rd_ptr + 1), rd_seq_next.eq(rd_seq + 1),
                     first_kept.eq(acked + 1)]
        replay_pending = Signal()
        replay_num = Signal(2)
        if self._timeout is None:
            limit = Signal(range(max(REPLAY_TIMEOUT_SYMBOLS.values()) + 1))
            m.d.sync += limit.eq(by_payload_size(REPLAY_TIMEOUT_SYMBOLS, self.max_payload_size))
        else:
            limit = Const(self._timeout)
        timer = Signal(range(2 ** len(limit) + self._symbols_per_clock))
        sending_new = Signal()  # inside a new TLP (replays wait for its end)
        advance = Signal()
        load = Signal()
        load_addr = Signal(range(depth))
        m.d.comb += read.addr.eq(Mux(load, load_addr, Mux(advance, rd_ptr + 1, rd_ptr)))
        m.d.sync += rd_ptr.eq(read.addr)

        # ACK / NAK: free up to the sequence number named. -----------------------------------
        kind = self.rx_dllp.payload[:8]
        named = Signal(12)
        m.d.comb += named.eq(self.rx_dllp.payload[24:32] | (self.rx_dllp.payload[16:20] << 8))
        ahead = Signal(12)  # how many TLPs the ACK/NAK frees
        m.d.comb += ahead.eq(named - acked)
        is_ack_nak = self.rx_dllp.valid & ((kind == DllpType.ACK) | (kind == DllpType.NAK))
        is_nak = kind == DllpType.NAK
        m.d.comb += purge_read.addr.eq(named & (slots - 1))
        with m.If(is_ack_nak):
            with m.If((ahead != 0) & (ahead <= outstanding)):
                m.d.sync += [acked.eq(named), oldest.eq(purge_read.data), replay_num.eq(0),
                             timer.eq(0)]
            with m.Elif(ahead != 0):
                m.d.sync += self.protocol_errors.eq(self.protocol_errors + 1)
            with m.If(is_nak & ((ahead == 0) | (ahead <= outstanding))):
                m.d.sync += replay_pending.eq(1)

        # New TLPs, then replays; REPLAY_TIMER runs while TLPs are kept and none is replayed.
        with m.FSM():
            with m.State("SEND"):
                m.d.comb += [self.source.valid.eq(self.tlp.valid & (sending_new | room)),
                             self.source.payload.eq(self.tlp.payload),
                             self.tlp.ready.eq(self.source.ready & (sending_new | room)),
                             self.source_seq.eq(nxt)]
                taken = self.tlp.valid & self.tlp.ready
                m.d.comb += [write.addr.eq(wr_ptr), write.data.eq(self.tlp.payload.data),
                             write.en.eq(taken)]
                with m.If(taken):
                    m.d.sync += [wr_ptr.eq(wr_ptr + 1), sending_new.eq(~self.tlp.payload.last)]
                    with m.If(self.tlp.payload.last):
                        m.d.comb += [end_write.addr.eq(nxt & (slots - 1)),
                                     end_write.data.eq(wr_ptr + 1), end_write.en.eq(1)]
                        m.d.sync += nxt.eq(nxt + 1)
                with m.If((outstanding != 0) & ~is_ack_nak):
                    with m.If(timer >= limit):  # >=: the MPS may shrink while it runs
                        m.d.sync += [replay_pending.eq(1), timer.eq(0),
                                     self.timeouts.eq(self.timeouts + 1)]
                    with m.Else():
                        m.d.sync += timer.eq(timer + self._symbols_per_clock)
                with m.If(replay_pending & ~sending_new & ~(taken & ~self.tlp.payload.last)):
                    m.d.sync += [replay_pending.eq(0), self.replays.eq(self.replays + 1),
                                 replay_num.eq(replay_num + 1), timer.eq(0),
                                 rd_seq.eq(first_kept)]
                    with m.If(replay_num == 3):
                        m.d.sync += self.retrain.eq(1)  # a clock later, from a register
                    m.next = "LOAD"
            with m.State("LOAD"):  # the first byte of TLP rd_seq into read.data
                previous = Signal(12)
                m.d.comb += [previous.eq(rd_seq - 1), end_read.addr.eq(previous & (slots - 1)),
                             load.eq(1), load_addr.eq(Mux(rd_seq == first_kept, oldest,
                                                          end_read.data))]
                with m.If(rd_seq == nxt):
                    m.next = "SEND"  # all freed meanwhile, or nothing was kept
                with m.Else():
                    m.next = "REPLAY"
            with m.State("REPLAY"):
                m.d.comb += end_read.addr.eq(rd_seq & (slots - 1))
                last = rd_ptr_next == Mux(rd_seq_next == nxt, wr_ptr, end_read.data)
                m.d.comb += [self.source.valid.eq(1), self.source.payload.data.eq(read.data),
                             self.source.payload.last.eq(last), self.source_seq.eq(rd_seq),
                             advance.eq(self.source.ready)]
                with m.If(self.source.ready & last):
                    m.d.sync += rd_seq.eq(rd_seq_next)
                    with m.If(rd_seq_next == nxt):
                        m.next = "SEND"
                    with m.Else():
                        m.next = "LOAD"

        with m.If(~self.active):
            m.d.sync += [nxt.eq(0), acked.eq(SEQ_MODULUS - 1), wr_ptr.eq(0), oldest.eq(0),
                         replay_pending.eq(0), replay_num.eq(0), timer.eq(0),
                         sending_new.eq(0)]
        return m
