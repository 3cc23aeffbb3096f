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

from amaranth.lib import data, stream

__all__ = ["packet_layout", "PacketStreamSignature"]


def packet_layout(width=1):
    """Payload layout of a packet stream ``width`` bytes wide."""
    fields = {"data": 8 * width, "last": 1}
    if width > 1:
        fields["keep"] = width
    return data.StructLayout(fields)


def PacketStreamSignature(width=1, **kwargs):
    """``amaranth.lib.stream.Signature`` of a packet stream (``kwargs`` as the stream's)."""
    return stream.Signature(packet_layout(width), **kwargs)
