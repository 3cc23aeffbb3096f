"""USB 3.2 bulk streams: the Stream IDs and stream protocol states that the gateware, the
simulated host and the usbredir export share (USB 3.2 §8.12.1.4).

A bulk endpoint with streams carries a 16-bit Stream ID in every data packet header, in every
ACK TP (DW2 bits 15:0) and in the ERDY by which the device selects a stream. The host *primes*
a stream with an ACK TP (IN) or a data packet (OUT) that has Packets Pending set and names it;
the device answers NRDY (it will choose later) and later selects one primed stream with an ERDY
naming it; the host's ACK TP / data packet on that stream starts it, and the stream ends with the
transfer (an IN data packet with End Of Burst, an OUT data packet without Packets Pending) or an
NRDY. Both sides keep these states per endpoint (:class:`StreamState`).
"""

from __future__ import annotations

import enum

__all__ = ["StreamState", "NO_STREAM_ID", "PRIME_STREAM_ID", "NOSTREAM_STREAM_ID",
           "MAX_STREAMS_EXPONENT", "MAX_STREAMS", "valid_stream_id", "NAMED_PRIMES",
           "PIPE_PRIMES", "PRIMINGS"]

#: The Stream ID of an endpoint without streams (every packet of the non-stream endpoints).
#: With streams allocated it is reserved: a packet naming it is a protocol error (NRDY).
NO_STREAM_ID = 0
#: Reserved Stream IDs of USB 3.2 §8.12.1.4 (the host's Prime and NoStream values).
PRIME_STREAM_ID = 0xFFFE
NOSTREAM_STREAM_ID = 0xFFFF
#: How a host primes a stream endpoint (``sim:usb3?primes=``, the UAS ceiling): ``named``,
#: each transfer's stream by its own ID (OUT: with the transfer's first data packet, which a
#: device that selects drops); ``pipe``, the pipe once with :data:`PRIME_STREAM_ID`, after which
#: the device selects any stream (what device controllers report as a "prime": Linux's dwc3
#: and cdnsp drivers expect it, and a host's return to priming after a NoStream refusal).
NAMED_PRIMES, PIPE_PRIMES = "named", "pipe"
PRIMINGS = (NAMED_PRIMES, PIPE_PRIMES)
#: busprobe's stream endpoints: ``bmAttributes`` MaxStreams of their companion descriptors
#: (2**5 = 32 streams, Stream IDs 1..32; Linux asks for up to 256 and takes what is offered).
MAX_STREAMS_EXPONENT = 5
MAX_STREAMS = 1 << MAX_STREAMS_EXPONENT


class StreamState(enum.IntEnum):
    """The stream protocol state of a bulk endpoint (USB 3.2 §8.12.1.4, device and host)."""
    DISABLED = 0      # not configured: no stream can move
    PRIME_PIPE = 1    # configured, or a stream ended and none is primed: waiting for a prime
    IDLE = 2          # streams primed: the device will select one with ERDY
    START_STREAM = 3  # ERDY sent naming a stream: waiting for the host's packet on it
    MOVE_DATA = 4     # data moves on the current stream until EOB / last packet / NRDY


def valid_stream_id(stream_id: int, max_streams: int = MAX_STREAMS) -> bool:
    """A Stream ID a host may name on an endpoint with ``max_streams`` streams: 1..max."""
    return 1 <= stream_id <= max_streams
