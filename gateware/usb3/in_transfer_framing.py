"""How :class:`.in_endpoint.BurstInEndpoint` cuts its next new packet: its length, End Of
Burst and (tagged) stream, from SET_IN_TRANSFER's framing or from the framed packets."""

from amaranth import Mux, Signal

from .framed_packets import PACKET_BYTES

__all__ = ["NextPacketFraming"]


class NextPacketFraming:
    """The framing of the IN endpoint's next new packet, registered (31-bit compares miss
    125 MHz on ECPIX-5), added to the endpoint's module.

    Unframed, a transfer of ``transfer_length`` bytes is cut into full packets and a short
    packet (or, with ``zlp``, a zero-length packet after an exact multiple of 1024 bytes);
    ``transfer_length`` 0 sends full packets forever. Framed (loopback, the null disk), the
    packet is the one :class:`.framed_packets.FramedPackets` holds at the head: a short one ends
    its transfer, and so does (tagged, while ``last_ends``) one that ended with ``last``.

    Attributes
    ----------
    length: Signal(11)
        Bytes in the next new packet.
    eob: Signal()
        It ends its transfer (End Of Burst).
    stream: Signal(16)
        Tagged: its stream (of the packet on its way, before one is buffered).
    settling: Signal(2)
        Nonzero for the cycles in which the registers have not caught up yet (after a packet
        started, a transfer request or a flush): no new packet may start then.

    Parameters
    ----------
    m: Module
        The endpoint's module.
    endpoint: BurstInEndpoint
        Its ``framed``, ``transfer_length``, ``zlp`` and ``last_ends`` are read.
    framed_lengths: FramedPackets
    """

    def __init__(self, m, endpoint, framed_lengths):
        self._m = m
        self.length, self.eob, self.stream = Signal(11), Signal(), Signal(16)
        self.settling = Signal(2)
        # Bytes of the transfer not yet cut into packets, once its first packet has started.
        self._left, self._started, self._zlp_due = Signal(31), Signal(), Signal()
        self._endpoint = endpoint
        self._remaining = Mux(self._started, self._left, endpoint.transfer_length)
        self._endless = endpoint.transfer_length == 0
        length, eob, left = self.length, self.eob, self._remaining
        with m.If(endpoint.framed):
            # A short packet ends the OUT transfer it came from, so the IN transfer too.
            length_read = framed_lengths.length
            ends = framed_lengths.ends & endpoint.last_ends  # 0 unless tagged
            m.d.ss += [length.eq(length_read),
                       eob.eq((length_read != PACKET_BYTES) | ends),
                       self.stream.eq(Mux(framed_lengths.ready, framed_lengths.stream,
                                          framed_lengths.coming_stream))]
        with m.Elif(self._endless):
            m.d.ss += [length.eq(PACKET_BYTES), eob.eq(0)]
        with m.Elif(self._zlp_due):
            m.d.ss += [length.eq(0), eob.eq(1)]
        with m.Else():
            m.d.ss += [length.eq(Mux(left < PACKET_BYTES, left, PACKET_BYTES)),
                       eob.eq((left < PACKET_BYTES) | ((left == PACKET_BYTES) & ~endpoint.zlp))]
        with m.If(self.settling != 0):
            m.d.ss += self.settling.eq(self.settling - 1)

    def taken(self):
        """The next new packet starts (called inside the endpoint's condition)."""
        m, left = self._m, self._remaining
        m.d.ss += self.settling.eq(2)
        with m.If(~self._endpoint.framed & ~self._endless):
            with m.If(self.eob):
                m.d.ss += [self._started.eq(0), self._zlp_due.eq(0)]
            with m.Else():
                m.d.ss += [self._started.eq(1), self._left.eq(left - self.length),
                           self._zlp_due.eq((left == PACKET_BYTES) & self._endpoint.zlp)]

    def restart(self):
        """A transfer starts over (a transfer request, a flush, a restart)."""
        self._m.d.ss += [self._started.eq(0), self._zlp_due.eq(0), self.settling.eq(2)]
