"""busprobe's SuperSpeed bulk IN endpoint with bulk streams (USB 3.2 §8.12.1.4)."""

from amaranth import Mux, Signal
from amaranth.lib.wiring import In, Out
from busprobe.protocol.streams import NOSTREAM_STREAM_ID, PRIME_STREAM_ID, StreamState

from .in_endpoint import BurstInEndpoint
from .stream_protocol import OwnHandshakes, StreamLayer
from .transaction import HandshakeKind

__all__ = ["StreamInEndpoint"]


class StreamInEndpoint(StreamLayer, BurstInEndpoint):
    """:class:`.in_endpoint.BurstInEndpoint` moving its data on the streams the host primes.

    The burst endpoint sends and retries as before; this layer decides which of the host's
    ACK TPs it takes and which stream its packets carry (the device side of USB 3.2
    §8.12.1.4, :class:`~busprobe.protocol.streams.StreamState`):

    - *Prime Pipe / Idle*: an ACK TP asking for data (NumP > 0) with Packets Pending and a
      Stream ID 1..``max_streams`` primes that stream: it is queued (:class:`.PrimedStreams`)
      and answered NRDY. The burst endpoint is parked, so its next ERDY (all sent acknowledged,
      a packet buffered) goes out naming the oldest primed stream: *Start Stream*. With
      ``by_want`` (and a ``tagged`` burst endpoint: UAS) it names the stream of the next packet
      buffered, once the host has primed that one, or the pipe: the same ACK TP naming the
      reserved Prime Stream ID (0xFFFE) primes every stream (answered NRDY too).
    - *Start Stream*: the host's ACK TP on the selected stream starts *Move Data* (a prime of
      another stream, sent before the host saw the ERDY, is queued and answered NRDY); every
      data packet then carries that Stream ID (``stream_id``, into the DP header), and the
      endpoint takes only ACK TPs of that stream (a retry rewinds within it). An ACK TP naming
      NoStream (0xFFFF) instead is the host's refusal (no transfer on that stream): back to
      Prime Pipe, the pipe no longer primed, the stream selected again after the next prime.
    - The stream ends with the transfer's last packet (End Of Burst) or an NRDY (no data
      buffered: the stream goes back in front of the queue and is selected again by the next
      ERDY). The ACK TPs of the ended stream still on their way are taken (until every packet
      sent is acknowledged; Rty resumes the stream, a retry within it).

    Bad input is answered NRDY and counted (``events.stream_error``), and nothing else changes:
    an ACK TP asking for data that names Stream ID 0 (no stream) or one past ``max_streams``,
    a prime without Packets Pending, an ACK TP asking for data on another stream during Move
    Data. (USB 3.2 ends a stream with any NRDY; this one ends nothing the device does, so a
    host that took it as the end of the stream primes it again. Not tested yet.)

    Attributes
    ----------
    (and ``enabled``, ``state``, ``control_handshake``: :class:`.stream_protocol.StreamLayer`)
    ack_stream_id: Signal(16), input
        Stream ID of the ACK TP ``interface.handshakes_in`` announces
        (:attr:`.core.SuperSpeedCore.ack_stream_id`).
    stream_id: Signal(16), output
        Stream ID of the data packets sent (for :attr:`.core.SuperSpeedCore.stream_id`).
    others_primed: Signal(), output
        A stream is primed besides the one moving (:attr:`.PrimedStreams.some`).

    Parameters: ``max_streams`` (:class:`.stream_protocol.StreamLayer`) and the burst
    endpoint's.
    """

    ack_stream_id: In(16)
    stream_id: Out(16)
    others_primed: Out(1)

    _registered_primed = True  # its ERDY selects from flip-flops (a cycle late)

    def elaborate(self, platform):
        m, inner, inner_events, primed, states, phase, stream = \
            self._elaborate_behind_streams(platform)
        streaming = states.streaming
        m.d.comb += [self.stream_id.eq(stream), self.others_primed.eq(primed.some)]
        # Chosen by the device: the stream of the next packet buffered (``tagged``).
        m.d.comb += primed.want.eq(self.next_stream_id if self._by_want else self.want)

        tokens = self.interface.handshakes_in
        ack = tokens.ack_received & (tokens.endpoint_number == self._number) & tokens.direction
        named = self.ack_stream_id
        asks = tokens.number_of_packets != 0
        valid_id = (named >= 1) & (named <= self._max_streams)
        take = Signal()
        with m.If(streaming):
            m.d.comb += take.eq(named == stream)
        with m.Elif(states.enabled):
            # After the stream ended, the host's ACK TPs on it that were on their way (they may
            # still ask for packets) until everything sent is acknowledged; then one asking for
            # data is a prime of it again.
            m.d.comb += take.eq((named == stream)
                                & (~asks | tokens.retry_required | ~self.acknowledged))
        m.d.comb += self.take_ack.eq(take)

        # The protocol's own NRDYs, one for each ACK TP refused.
        own = OwnHandshakes(m, self.control_handshake, endpoint_number=self._number,
                            direction=1)

        def answer_nrdy():
            own.nrdy(m)

        # What the ACK TP asks of the stream layer (a phase change, a prime, an NRDY) is decided
        # a cycle after LUNA's receiver decodes it, from registers: decided at once, from the
        # link's header queue through LUNA's decode into the stream state and the handshake
        # generator, it was an ss timing path on ECPIX-5 (issue 44 item 7). ``take`` stays
        # live (it is registered by the burst endpoint with the fields it gates). The decision
        # reads the state of the cycle the ACK TP came in (registered with it); the header
        # packets carrying ACK TPs are five cycles apart at the least, so one is decided before
        # the next comes. A restart or a phase change in that cycle wins, as it did.
        ack_r, take_r, asks_r, valid_r, pending_r, retry_r = (Signal(name=f"ack_tp_{n}_r") for n in
                                                              ("ack", "take", "asks", "valid",
                                                               "pending", "retry"))
        named_r, phase_r = Signal(16), Signal.like(phase)
        pipe_r, refusal_r = Signal(), Signal()  # it names Prime / NoStream
        streaming_r, enabled_r, restarted_r, erdy_done_r = Signal(), Signal(), Signal(), Signal()
        erdy_done = self.handshake.done & (inner.request.kind == HandshakeKind.ERDY)
        m.d.ss += [ack_r.eq(ack), take_r.eq(take), asks_r.eq(asks), valid_r.eq(valid_id),
                   pending_r.eq(tokens.packets_pending), retry_r.eq(tokens.retry_required),
                   named_r.eq(named), phase_r.eq(phase), streaming_r.eq(streaming),
                   pipe_r.eq(named == PRIME_STREAM_ID), refusal_r.eq(named == NOSTREAM_STREAM_ID),
                   enabled_r.eq(states.enabled & self.streams), erdy_done_r.eq(erdy_done),
                   restarted_r.eq(self.interface.ep_reset | self.restart | ~self.enabled)]
        decided = ack_r & ~restarted_r
        error = Signal()
        m.d.comb += primed.prime_id.eq(named_r)
        with m.If(decided & take_r & (phase == phase_r)):
            with m.If(phase_r == StreamState.START_STREAM):
                m.d.ss += phase.eq(StreamState.MOVE_DATA)
            with m.Elif(~streaming_r & retry_r):
                m.d.ss += phase.eq(StreamState.MOVE_DATA)  # a retry rewinds within it
        with m.If(decided & ~take_r & enabled_r):
            with m.If(refusal_r & (phase_r == StreamState.START_STREAM)):
                # NoStream: the host has no transfer on the stream selected. Parked again, so
                # the next ERDY waits for the host's next prime.
                m.d.comb += [primed.reject.eq(1), self.park.eq(~erdy_done)]
                m.d.ss += phase.eq(StreamState.PRIME_PIPE)
            with m.Elif(asks_r & pipe_r & pending_r & (phase_r != StreamState.MOVE_DATA)):
                # The pipe primed (the Prime Stream ID): every stream may be selected.
                m.d.comb += [primed.prime_pipe.eq(1),
                             self.park.eq(~streaming_r & ~erdy_done_r & ~erdy_done)]
                answer_nrdy()
            with m.Elif(asks_r & valid_r & pending_r & (phase_r != StreamState.MOVE_DATA)):
                # A prime (in Start Stream: one the host sent before it saw the ERDY).
                # Parked outside a stream, so its next ERDY selects one; not in a cycle its
                # ERDY goes out, the ACK TP's or this one (the park would win over the ERDY's
                # un-parking, and the selected stream would never move: found by the
                # four-stream cocotb test).
                m.d.comb += [primed.prime.eq(1),
                             self.park.eq(~streaming_r & ~erdy_done_r & ~erdy_done)]
                answer_nrdy()
            with m.Elif(asks_r):
                m.d.comb += error.eq(1)
                answer_nrdy()

        # The burst endpoint's requests: its ERDY waits for a primed stream and names it.
        kind = inner.request.kind
        selecting = inner.valid & (kind == HandshakeKind.ERDY)
        m.d.comb += [
            self.handshake.request.eq(inner.request),
            self.handshake.request.stream_id.eq(Mux(kind == HandshakeKind.ERDY,
                                                    primed.selected, stream)),
            # The ERDY also waits for the NRDYs owed: each prime's NRDY answers it first, as
            # the host expects (found with a packet already buffered when the prime came).
            self.handshake.valid.eq(inner.valid & (~selecting | (~streaming & primed.any
                                                                 & (own.owed == 0)
                                                                 & ~own.owing))),
            inner.done.eq(self.handshake.done),
        ]
        with m.If(self.handshake.done & self.streams):
            with m.If(kind == HandshakeKind.ERDY):
                m.d.comb += primed.take.eq(1)
                m.d.ss += [stream.eq(primed.selected), phase.eq(StreamState.START_STREAM)]
            with m.Elif((kind == HandshakeKind.NRDY) & streaming):
                # No data buffered: the stream ends, and is the next one selected.
                m.d.comb += [primed.resume.eq(1), primed.resume_id.eq(stream)]
                m.d.ss += phase.eq(StreamState.PRIME_PIPE)
        with m.If(inner_events.eob & (phase == StreamState.MOVE_DATA)):
            m.d.ss += phase.eq(StreamState.PRIME_PIPE)  # the transfer's last packet

        # ``nrdy`` is the burst endpoint's alone: the NRDYs answering primes (and refused
        # packets, counted as stream errors) are the stream protocol's, not a device not ready.
        m.d.comb += [self.events.eq(inner_events),
                     self.events.stream_error.eq(error)]

        states.follow_configuration(m, self, primed, cleared=own.cleared)
        # Without streams the burst endpoint takes every ACK TP for it, its handshakes pass as
        # they are, and a transfer ends only where it does without streams.
        m.d.comb += self.last_ends.eq(self.streams)
        with m.If(~self.streams):
            m.d.comb += [self.take_ack.eq(1), self.stream_id.eq(0),
                         self.handshake.valid.eq(inner.valid),
                         self.handshake.request.stream_id.eq(0)]
        return m
