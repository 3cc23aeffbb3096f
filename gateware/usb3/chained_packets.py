"""LUNA's link-layer packet transmitter sending queued packets back to back.

Upstream limitation (luna-usb 0.2.3, ``usb3/link/transmitter.py``; no upstream issue names it):
after each packet the ``PacketTransmitter``'s dispatch FSM goes back to ``DISPATCH_PACKET`` for a
cycle, and its ``RawPacketTransmitter`` to ``IDLE`` for another before it sends the next
packet's start framing: two cycles of logical idle between any two packets, even with the next
one waiting in the header buffers. On the device's upstream lane behind a fast host those are
the lane's own idle cycles (docs/DESIGN.md §6.10: an ACK TP then an ERDY, an NRDY then a data
packet), and the upstream lane is what bounds UAS reads.

:class:`ChainedPacketTransmitter` sends the next packet straight after the last when one is
waiting and the lane is wanted by nobody else: no link command queued (the link's arbiter only
hands the lane over where the holder drops ``valid``, so a chain must not keep LGOODs and LCRDs
waiting) and no SKP pair owed (the same). Otherwise, and after a retry request, it takes LUNA's
two cycles, which is where the arbiter gives the lane to the others. A packet that does not
follow another leaves exactly when it would upstream.
"""

from amaranth import Signal
from luna.gateware.usb.usb3.physical.coding import EPF, SHP, get_word_for_symbols

from .header_crc import WordCrcPacketTransmitter, _WordCrcRawTransmitter

__all__ = ["ChainedPacketTransmitter"]


class _ChainedRawTransmitter(_WordCrcRawTransmitter):
    """The raw transmitter, sending a chained packet's start framing from ``IDLE``.

    Attributes
    ----------
    chained: Signal(), input
        The packet asked for follows the last one without a break: its start framing goes out
        in ``IDLE``, the cycle its header is latched, instead of in ``SEND_HPSTART`` a cycle
        later. A flip-flop, high only in the cycle after ``done`` (the FSM is back in ``IDLE``,
        ``generate`` held): nothing else of the state goes into the lane's word (timing).
    """

    def elaborate(self, platform):
        m = super().elaborate(platform)
        # The FSM LUNA's elaborate built (Amaranth keeps it by name, as .data_receiver reads
        # its receiver's); this assignment comes after the FSM's own, so it wins.
        fsm = m._generated["fsm"]
        data, ctrl = get_word_for_symbols(SHP, SHP, SHP, EPF)
        with m.If(self.chained):
            m.d.comb += [self.source.valid.eq(1), self.source.data.eq(data),
                         self.source.ctrl.eq(ctrl)]
            with m.If(self.source.ready):
                m.d.ss += fsm.state.eq(fsm.encoding["SEND_DW0"])
        return m


class ChainedPacketTransmitter(WordCrcPacketTransmitter):
    """LUNA's ``PacketTransmitter`` (with :class:`.header_crc.WordCrcPacketTransmitter`'s header
    CRC) that sends a waiting packet straight after the one it finishes.

    :meth:`adopt` turns the link layer's transmitter (not elaborated yet) into one.

    Attributes
    ----------
    yield_lane: Signal(), input
        Something else wants the lane at the next packet boundary (a link command queued, a
        SKP pair owed): the transmitter pauses there as LUNA's does.
    """

    @classmethod
    def adopt(cls, transmitter):
        transmitter.__class__ = cls
        transmitter.yield_lane = Signal()
        return transmitter

    def elaborate(self, platform):
        m = super().elaborate(platform)
        raw = m.submodules.packet_tx
        raw.__class__ = _ChainedRawTransmitter
        raw.chained = Signal()
        fsm = m._generated["fsm"]  # the dispatch FSM, as above
        state, encoding = fsm.state, fsm.encoding

        # LUNA's retry_pending is local to its elaborate; kept here the same way: set by a
        # retry request, cleared when the last retransmission is done or the link is down.
        retry_pending = Signal()
        with m.If(self.retry_required):
            m.d.ss += retry_pending.eq(1)
        with m.If((state == encoding["WAIT_FOR_RETRY"]) & raw.done & (self.packets_to_send == 1)):
            m.d.ss += retry_pending.eq(0)
        with m.If(~self.enable):
            m.d.ss += retry_pending.eq(0)

        # At the end of a packet with another one queued (packets_to_send counts the one just
        # sent, dequeued this cycle), stay in WAIT_FOR_SEND instead of passing DISPATCH_PACKET.
        chain = ((state == encoding["WAIT_FOR_SEND"]) & raw.done & (self.packets_to_send >= 2)
                 & self.enable & self.bringup_complete
                 & ~retry_pending & ~self.retry_required & ~self.yield_lane)
        with m.If(chain):
            m.d.ss += state.eq(encoding["WAIT_FOR_SEND"])
        m.d.ss += raw.chained.eq(chain)
        return m
