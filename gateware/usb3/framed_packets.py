"""The framed packets a bulk IN endpoint's ring holds: each one's length (and, tagged, its
stream and whether its ``last`` ends a transfer), in the order they were written."""

from amaranth import Cat, DomainRenamer, Module, Mux, ResetInserter, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

__all__ = ["FramedPackets", "FRAMED_PACKETS", "PACKET_BYTES"]

PACKET_BYTES = 1024
#: Framed packets the ring holds at once (their lengths wait in a FIFO this deep).
FRAMED_PACKETS = 32


class FramedPackets(wiring.Component):
    """Cuts the beats written into the ring into packets (at ``last`` or 1024 bytes) and keeps
    each packet's length until the endpoint takes it to send.

    Attributes
    ----------
    beat: Signal(), input
        A framed beat was written into the ring, with ``last``, ``keep`` and ``stream_id``.
    last: Signal(), input
    keep: Signal(4), input
    stream_id: Signal(16), input
        With ``tagged``: the stream of the packet being written (read at its last beat).
    drop: Signal(), input
        Strobe: forget every packet (a flush or restart of the endpoint).
    room: Signal(), output
        Registered, three short of full: another packet may start.
    ready: Signal(), output
        A packet is kept: its ``length``, ``ends`` (tagged: ``last`` ended it) and ``stream``.
    length: Signal(11), output
    ends: Signal(), output
    stream: Signal(16), output
    coming: Signal(), output
        Registered: a packet is kept or on its way (a beat of it in the ring): the endpoint may
        announce it before it is whole. With ``tagged``, ``coming_stream`` is the stream of the
        packet being written.
    coming_stream: Signal(16), output
    take: Signal(), input
        Strobe: the endpoint took the packet in front.

    Parameters
    ----------
    tagged: bool
        Keep each packet's stream and whether ``last`` ended it.
    """

    beat: In(1)
    last: In(1)
    keep: In(4)
    stream_id: In(16)
    drop: In(1)
    room: Out(1)
    ready: Out(1)
    length: Out(11)
    ends: Out(1)
    stream: Out(16)
    coming: Out(1)
    coming_stream: Out(16)
    announce: In(1)
    take: In(1)

    def __init__(self, *, tagged=False):
        super().__init__()
        self._tagged = tagged

    def elaborate(self, platform):
        m = Module()
        tagged = self._tagged
        m.submodules.fifo = fifo = ResetInserter({"ss": self.drop})(DomainRenamer("ss")(
            SyncFIFOBuffered(width=11 + (17 if tagged else 0), depth=FRAMED_PACKETS)))
        m.d.ss += self.room.eq(fifo.w_level < FRAMED_PACKETS - 3)
        filling = Signal(11)  # bytes of the packet being written
        beat_bytes = sum(self.keep[i] for i in range(4))
        closes = self.last | (filling + beat_bytes == PACKET_BYTES)
        # Registered on the way in: the length's adder stays out of the ring's write path.
        closed, closed_length = Signal(), Signal(11)
        closed_last, closed_stream = Signal(), Signal(16)
        m.d.comb += [fifo.w_en.eq(closed),
                     fifo.w_data.eq(Cat(closed_length, closed_last, closed_stream)
                                    if tagged else closed_length),
                     self.ready.eq(fifo.r_rdy), self.length.eq(fifo.r_data[:11]),
                     fifo.r_en.eq(self.take)]
        if tagged:
            m.d.comb += [self.ends.eq(fifo.r_data[11]), self.stream.eq(fifo.r_data[12:])]
        m.d.ss += closed.eq(0)
        with m.If(self.beat):
            m.d.ss += [filling.eq(Mux(closes, 0, filling + beat_bytes)),
                       closed.eq(closes), closed_length.eq(filling + beat_bytes),
                       closed_last.eq(self.last), closed_stream.eq(self.stream_id)]
        with m.If(self.drop):
            m.d.ss += [closed.eq(0), filling.eq(0)]
        # ``closed`` and the FIFO's level cover the cycles between a packet's last beat and
        # ``ready``: no gap in which a packet on its way looks like none.
        in_flight = (filling != 0) | closed | (fifo.w_level != 0)
        m.d.ss += self.coming.eq((in_flight | self.announce) & ~self.drop)
        if tagged:
            with m.If(self.beat | (self.announce & ~in_flight)):
                m.d.ss += self.coming_stream.eq(self.stream_id)
        return m
