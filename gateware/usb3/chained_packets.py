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

An IN endpoint's ERDY is the exception (``urgent``): while one is in the header buffers with
only header packets ahead of it (or the data packet being sent), those packets and it go ahead
of the link commands, chained instead of yielding the lane. The host's next transaction
waits for that ERDY (a read's next stream behind a fast host: docs/DESIGN.md §3.6) and answers
it with one ACK TP, while an LGOOD or LCRD may wait a few headers (the link partner's timer,
tPendingHP, is 3 µs). Not an OUT endpoint's: the host answers it with data packets, each
needing a header credit, an LCRD the ERDY would have overtaken (measured: queued 1 KiB writes
behind ``ideal`` lost 1 %).
"""

from amaranth import Mux, Signal
from luna.gateware.usb.usb3.physical.coding import EPF, SHP, get_word_for_symbols
from luna.gateware.usb.usb3.protocol.transaction import ERDYHeaderPacket
from usb_protocol.types.superspeed import HeaderPacketType, TransactionPacketSubtype

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
    urgent: Signal(), output
        An IN endpoint's ERDY is in the header buffers, behind header packets only: it and
        they are due ahead of link commands (see the module).
    """

    @classmethod
    def adopt(cls, transmitter):
        transmitter.__class__ = cls
        transmitter.yield_lane = Signal()
        transmitter.urgent = Signal()
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

        # A packet's last word, which dequeues it (LUNA's dequeue_send).
        sending = state == encoding["WAIT_FOR_SEND"]
        sent = sending & raw.done & ~retry_pending

        # At the end of a packet with another one queued (packets_to_send counts the one just
        # sent, dequeued this cycle), stay in WAIT_FOR_SEND instead of passing DISPATCH_PACKET.
        chain = (sent & (self.packets_to_send >= 2) & self.enable & self.bringup_complete
                 & ~self.retry_required & ~self.yield_lane)
        with m.If(chain):
            m.d.ss += state.eq(encoding["WAIT_FOR_SEND"])
        m.d.ss += raw.chained.eq(chain)

        # Positions in the header buffers (0: none; n: the n-th packet still to send, counting
        # the one being sent until its ``done`` dequeues it) of the last IN ERDY queued, of the
        # last data packet queued and of the last data packet queued before that ERDY.
        size = len(self.packets_to_send)
        erdy_at, data_at, data_before = (Signal(size + 1, name=n)
                                         for n in ("erdy_at", "data_at", "data_before"))
        queued = self.queue.valid & self.queue.ready
        header = ERDYHeaderPacket()  # the header taken, read as an ERDY (its type is any's)
        m.d.comb += header.eq(self.queue.header)
        kind = header.type
        erdy = ((kind == HeaderPacketType.TRANSACTION)
                & (header.subtype == TransactionPacketSubtype.ERDY) & header.direction)
        position = self.packets_to_send + 1 - sent

        def moved(at):
            return Mux(sent & (at != 0), at - 1, at)

        with m.If(self.retry_required | ~self.enable):
            m.d.ss += [erdy_at.eq(0), data_at.eq(0), data_before.eq(0)]
        with m.Else():
            m.d.ss += [
                erdy_at.eq(Mux(queued & erdy, position, moved(erdy_at))),
                data_at.eq(Mux(queued & (kind == HeaderPacketType.DATA), position,
                               moved(data_at))),
                data_before.eq(Mux(queued & erdy, moved(data_at), moved(data_before))),
            ]
        # Urgent unless a data packet not yet started is ahead of the ERDY: link commands wait
        # for a few headers, never for a data packet they would not have waited for anyway.
        # (Not once the ERDY itself is on the lane: what follows it waits as before.)
        m.d.comb += self.urgent.eq((erdy_at != 0) & ~((erdy_at == 1) & sending)
                                   & ((data_before == 0) | ((data_before == 1) & sending)))
        return m
