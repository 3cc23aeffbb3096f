"""busprobe's SuperSpeed bulk OUT endpoint with bulk streams (USB 3.2 §8.12.1.4)."""

from amaranth import Mux, Signal
from busprobe.protocol.streams import NOSTREAM_STREAM_ID, PRIME_STREAM_ID, StreamState

from .out_endpoint import BurstOutEndpoint
from .stream_protocol import OwnHandshakes, StreamLayer
from .transaction import HandshakeKind

__all__ = ["StreamOutEndpoint"]


class StreamOutEndpoint(StreamLayer, BurstOutEndpoint):
    """:class:`.out_endpoint.BurstOutEndpoint` taking its data on the streams the host primes.

    The burst endpoint buffers, acknowledges and retries as before; this layer decides which
    data packets it takes and which stream its ACK TPs name (the device side of USB 3.2
    §8.12.1.4, :class:`~busprobe.protocol.streams.StreamState`):

    - *Prime Pipe / Idle*: a data packet naming a Stream ID 1..``max_streams`` primes that
      stream: it is dropped, queued (:class:`.PrimedStreams`) and answered NRDY. When a buffer is
      free the device selects the oldest primed stream with an ERDY naming it (NumP = the
      buffers free): *Start Stream*. With ``by_want`` (UAS) it selects ``want``, the tag
      whose data the device takes next, once the host has primed it, or the pipe: a data
      packet naming the reserved Prime Stream ID (0xFFFE) primes every stream (dropped, NRDY).
    - *Start Stream*: the host's data packet on the selected stream starts *Move Data* (one on
      another stream, sent before the host saw the ERDY, is a prime); the endpoint takes only
      packets of that stream, and every ACK TP (and the burst endpoint's flow-control ERDY)
      names it. A data packet naming NoStream (0xFFFF) instead is the host's refusal (no
      transfer on that stream): dropped without an answer, back to Prime Pipe, the pipe no
      longer primed.
    - The stream ends with the packet the host sends without Packets Pending (its transfer's
      last), once it is acknowledged.

    Bad input is dropped, answered NRDY and counted (``events.stream_error``): a data packet
    naming Stream ID 0 or one past ``max_streams``, or another stream than the one moving.

    Attributes
    ----------
    (and ``enabled``, ``state``, ``control_handshake``: :class:`.stream_protocol.StreamLayer`)

    Parameters: ``max_streams`` (:class:`.stream_protocol.StreamLayer`) and the burst
    endpoint's.
    """

    _REGISTERED_RX = True

    def elaborate(self, platform):
        m, inner, inner_events, primed, states, phase, stream = \
            self._elaborate_behind_streams(platform)
        streaming = states.streaming

        # Data packets for this endpoint, followed as the burst endpoint follows them: decided
        # as they start, acted on with the CRC verdict (registered, as there).
        interface = self.interface
        header, rx = interface.rx_header, self._rx  # the beats a cycle late (_REGISTERED_RX)
        named = header.stream_id
        for_us = (header.endpoint_number == self._number) & ~header.setup & ~header.direction
        # take = streaming & (named == stream), with the compare registered: the header is
        # held from the cycle before the packet's first beat (registered) reaches the endpoint;
        # the stream register changes only with an ERDY sent (to ``erdy_stream``) or a restart
        # (to 0, not streaming).
        own = OwnHandshakes(m, self.control_handshake, endpoint_number=self._number,
                            direction=0)
        same_stream, same_erdy, sent_erdy = Signal(), Signal(), Signal()
        m.d.ss += [same_stream.eq(named == stream), same_erdy.eq(named == own.erdy_stream),
                   sent_erdy.eq(own.sent_erdy)]
        take = streaming & Mux(sent_erdy, same_erdy, same_stream)
        m.d.comb += self.take_dp.eq(take)
        starting = rx.valid.any() & rx.first & for_us
        receiving, taken = Signal(), Signal()
        with m.If(starting):
            m.d.ss += [receiving.eq(1), taken.eq(take)]
        complete, invalid = Signal(), Signal()
        m.d.ss += [complete.eq(interface.rx_complete), invalid.eq(interface.rx_invalid)]
        # A zero-length packet has no beats: decided with its CRC verdict, from what was
        # registered the cycle before (LUNA's receiver shows its header from the cycle of the
        # DPP's CRC word, a cycle before the verdict), as the burst endpoint decides its own.
        zero_length, zlp_taken = Signal(), Signal()
        m.d.ss += [zero_length.eq(~receiving & for_us & (header.data_length == 0)),
                   zlp_taken.eq(take)]
        ended = (complete | invalid) & (receiving | zero_length)
        refused = complete & (receiving | zero_length) & ~Mux(receiving, taken, zlp_taken)
        with m.If(ended):
            m.d.ss += receiving.eq(0)
        with m.If(starting & take & (phase == StreamState.START_STREAM)):
            m.d.ss += phase.eq(StreamState.MOVE_DATA)

        # The protocol's own NRDYs (refused packets) and ERDYs (selecting a stream): ``own``.
        free = inner.request.number_of_packets  # the burst endpoint's buffers free now
        m.d.comb += self.control_handshake.request.number_of_packets.eq(free)
        error = Signal()
        valid_id = (named >= 1) & (named <= self._max_streams)
        m.d.comb += [primed.prime_id.eq(named), primed.want.eq(self.want)]
        refusal = (named == NOSTREAM_STREAM_ID) & (phase == StreamState.START_STREAM)
        with m.If(refused & states.enabled & self.streams & refusal):
            # NoStream: the host has no transfer on the stream selected; it waits for a prime.
            m.d.comb += primed.reject.eq(1)
            m.d.ss += phase.eq(StreamState.PRIME_PIPE)
        with m.Elif(refused & states.enabled & self.streams):
            own.nrdy(m)
            with m.If((named == PRIME_STREAM_ID) & (phase != StreamState.MOVE_DATA)):
                m.d.comb += primed.prime_pipe.eq(1)  # the pipe primed: any stream
            with m.Elif(valid_id & (phase != StreamState.MOVE_DATA)):
                # A prime (in Start Stream: one the host sent before it saw the ERDY).
                m.d.comb += primed.prime.eq(1)
            with m.Else():
                m.d.comb += error.eq(1)
        # The stream a write just finished stays unselectable until ``want`` leaves it: the
        # engine's ``want`` names it for a few cycles after its last packet's ACK, and behind
        # a pipe prime every stream is selectable (a tag comes back only after its status).
        finished = Signal(16)
        with m.If(self.want != finished):
            m.d.ss += finished.eq(0)
        with m.If(~own.erdy_pending & ~streaming & primed.any & (free != 0) & ~self.halt
                  & states.enabled & ~receiving & ~refused & (primed.selected != finished)):
            own.select(m, primed.selected)
        with m.If(own.sent_erdy):
            m.d.comb += primed.take.eq(1)
            m.d.ss += [stream.eq(own.erdy_stream), phase.eq(StreamState.START_STREAM)]

        # The burst endpoint's requests name the stream; its flow-control ERDY (a buffer free
        # after NumP 0) only within the stream: outside one, selecting is this layer's.
        kind = inner.request.kind
        swallowed = inner.valid & (kind == HandshakeKind.ERDY) & ~streaming & self.streams
        m.d.comb += [
            self.handshake.request.eq(inner.request),
            self.handshake.request.stream_id.eq(stream),
            self.handshake.valid.eq(inner.valid & ~swallowed),
            inner.done.eq(self.handshake.done | swallowed),
        ]
        # The transfer's last packet (no Packets Pending) ends the stream once acknowledged.
        with m.If(inner_events.acked & ~header.packet_pending
                  & (phase == StreamState.MOVE_DATA)):
            m.d.ss += [phase.eq(StreamState.PRIME_PIPE), finished.eq(stream)]

        # ``nrdy`` is the burst endpoint's alone: the NRDYs answering primes (and refused
        # packets, counted as stream errors) are the stream protocol's, not a device not ready.
        m.d.comb += [self.events.eq(inner_events),
                     self.events.erdy.eq((inner_events.erdy & ~swallowed) | own.sent_erdy),
                     self.events.stream_error.eq(error)]

        states.follow_configuration(m, self, primed, cleared=own.cleared)
        # Without streams the burst endpoint takes every data packet for it, on Stream ID 0.
        with m.If(~self.streams):
            m.d.comb += [self.take_dp.eq(1), self.handshake.request.stream_id.eq(0)]
        return m
