"""The stream-side contract of busprobe's bulk endpoints: packets as a stream of words.

Every bulk endpoint (USB 2.0 and USB 3.0) meets the rest of the design through one of these
streams, so a pattern source, a checker, a loopback FIFO, the BOT framer or a user's own logic
attach to any of them the same way.

A beat carries ``width`` bytes in ``data`` (first byte in the low bits). ``last`` marks the
final beat of a packet:

- into an IN endpoint, ``last`` closes the packet being filled after this beat: a short packet,
  or, on the beat that fills it, a full packet (no ZLP follows: ZLPs come from the endpoint's
  transfer framing). A full packet closes on its own without ``last``;
- out of an OUT endpoint, ``last`` is set on the final beat of every data packet received and
  ACKed, full or short. Retried and duplicate packets never appear; a ZLP carries no beat.

With ``width`` > 1 a beat also carries ``keep``, one bit per byte: the low ``n`` bits set for
``n`` valid bytes; only a ``last`` beat may have fewer than ``width``.
"""

from amaranth import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["packet_layout", "PacketStreamSignature", "RegisteredPacketStream"]


def packet_layout(width=1):
    """Payload layout of a packet stream ``width`` bytes wide."""
    fields = {"data": 8 * width, "last": 1}
    if width > 1:
        fields["keep"] = width
    return data.StructLayout(fields)


def PacketStreamSignature(width=1, **kwargs):
    """``amaranth.lib.stream.Signature`` of a packet stream (``kwargs`` as the stream's)."""
    return stream.Signature(packet_layout(width), **kwargs)


class RegisteredPacketStream(wiring.Component):
    """A packet stream passed on through registers both ways, a beat a cycle: the usual skid
    pair (a main register the consumer reads, a skid register catching the beat offered while
    the consumer stopped). The producer's ``ready`` is a flip-flop ("the skid register is
    empty") and the consumer's ``ready`` reaches only the two registers, so no path runs from
    one side to the other. Beats keep their order and every stop pattern keeps a beat a cycle;
    each beat comes a cycle later.

    Attributes
    ----------
    sink: PacketStreamSignature(width), input stream
    source: PacketStreamSignature(width), output stream
    flush: Signal(), input
        Strobe: drop the beats held (and the one offered this cycle).

    Parameters
    ----------
    width: int
        Bytes a beat.
    domain: str
    """

    def __init__(self, *, width, domain="sync"):
        self._domain = domain
        super().__init__({"sink": In(PacketStreamSignature(width)),
                          "source": Out(PacketStreamSignature(width)), "flush": In(1)})

    def elaborate(self, platform):
        m = Module()
        sync = m.d[self._domain]
        sink, source = self.sink, self.source
        main, skid = Signal.like(sink.payload), Signal.like(sink.payload)
        main_full, skid_full = Signal(), Signal()
        m.d.comb += [sink.ready.eq(~skid_full), source.valid.eq(main_full),
                     source.payload.eq(main)]
        offered = sink.valid & ~skid_full
        with m.If(self.flush):
            sync += [main_full.eq(0), skid_full.eq(0)]
        with m.Elif(~main_full | source.ready):
            # The main register is free this cycle: refilled from the skid, else the sink.
            with m.If(skid_full):
                sync += [main.eq(skid), skid_full.eq(0)]  # the sink waits (not ready)
            with m.Else():
                sync += [main.eq(sink.payload), main_full.eq(sink.valid)]
        with m.Elif(offered):
            sync += [skid.eq(sink.payload), skid_full.eq(1)]
        return m
