"""What both stream endpoints (:mod:`.stream_in_endpoint`, :mod:`.stream_out_endpoint`) put
around their burst endpoint: its requests and events routed through the stream layer, the
primed streams, and the stream protocol state with its Disabled / Prime Pipe / Idle."""

from amaranth import Mux, Signal
from amaranth.lib.wiring import In, Out
from busprobe.protocol.streams import MAX_STREAMS, StreamState

from .primed_streams import PrimedStreams
from .telemetry import DIRECTION_EVENTS
from .transaction import HandshakeKind, HandshakeRequestSignature

__all__ = ["StreamLayer", "StreamPhase", "OwnHandshakes"]


class StreamLayer:
    """Mixin of a stream endpoint, listed before the burst endpoint it extends.

    Attributes
    ----------
    enabled: Signal(), input
        The endpoint is configured (Disabled while low: nothing is primed).
    state: Signal(StreamState), output
    control_handshake: HandshakeRequestSignature, output
        The stream protocol's own NRDYs / ERDYs (a second port of the handshake generator).
    streams: Signal(), input
        Bulk streams in use (init 1). Low, the layer stands aside and the burst endpoint works
        as it does without streams, every packet on Stream ID 0 (the null disk's Bulk-Only
        alternate setting shares these endpoints with its UAS one); drive ``enabled`` low too.
    want: Signal(16), input
        With ``by_want`` (an OUT endpoint): the stream the device wants to move next, selected
        once the host has primed it (0: none). An IN endpoint with ``by_want`` wants the
        stream of the next packet it has buffered.

    Parameters
    ----------
    max_streams: int
        Stream IDs 1..max_streams (the companion's MaxStreams is its log2).
    by_want: bool
        The device chooses the stream (UAS: the tag whose data or status it has), instead of
        taking the primed streams first come, first served.
    **kwargs
        The burst endpoint's.
    """

    enabled: In(1)
    state: Out(StreamState)
    control_handshake: Out(HandshakeRequestSignature())
    streams: In(1, init=1)
    want: In(16)

    #: :class:`.PrimedStreams`'s ``registered`` (an IN endpoint's: its ERDY's arbitration).
    _registered_primed = False

    def __init__(self, *, max_streams=MAX_STREAMS, by_want=False, **kwargs):
        super().__init__(**kwargs)
        self._max_streams, self._by_want = max_streams, by_want

    def _elaborate_behind_streams(self, platform):
        """Elaborate the burst endpoint with stand-ins for its ``handshake`` port and
        ``events`` (as :mod:`.core` does with LUNA's layers), so the stream layer routes them;
        returns the module, the stand-ins, the :class:`.PrimedStreams` (a submodule) and the
        :class:`StreamPhase`."""
        handshake, events = self.handshake, self.events
        self.handshake = inner = HandshakeRequestSignature().create(path=("inner_handshake",))
        self.events = inner_events = Signal(DIRECTION_EVENTS, name="inner_events")
        try:
            m = super().elaborate(platform)
        finally:
            self.handshake, self.events = handshake, events
        m.submodules.primed = primed = PrimedStreams(max_streams=self._max_streams,
                                                     by_want=self._by_want,
                                                     registered=self._registered_primed)
        states = StreamPhase(m, self, primed)
        return m, inner, inner_events, primed, states, states.phase, states.stream


class StreamPhase:
    """The stream protocol state of an endpoint.

    ``phase`` is a register holding Disabled, Start Stream, Move Data, or Prime Pipe for any
    state outside a stream; ``state`` (the endpoint's output) reads that one as Idle while a
    stream is primed. ``stream`` is the stream selected last.
    """

    def __init__(self, m, endpoint, primed):
        self.phase, self.stream = Signal(StreamState), Signal(16)
        phase = self.phase
        self.streaming = (phase == StreamState.START_STREAM) | (phase == StreamState.MOVE_DATA)
        self.enabled = phase != StreamState.DISABLED
        m.d.comb += endpoint.state.eq(phase)
        with m.If(~self.streaming & self.enabled):
            m.d.comb += endpoint.state.eq(Mux(primed.any, StreamState.IDLE,
                                              StreamState.PRIME_PIPE))

    def follow_configuration(self, m, endpoint, primed, *, cleared=()):
        """Disabled while the endpoint is not configured; Prime Pipe, nothing primed and
        ``cleared`` zeroed when it is (re)started (USB 3.2 §8.12.1.4)."""
        phase = self.phase
        with m.If(~endpoint.enabled):
            m.d.ss += phase.eq(StreamState.DISABLED)
        with m.Elif(phase == StreamState.DISABLED):
            m.d.ss += phase.eq(StreamState.PRIME_PIPE)
        restarting = endpoint.interface.ep_reset | endpoint.restart
        m.d.comb += primed.flush.eq(restarting | ~endpoint.enabled)
        with m.If(restarting):
            m.d.ss += [phase.eq(Mux(endpoint.enabled, StreamState.PRIME_PIPE,
                                    StreamState.DISABLED)), self.stream.eq(0),
                       *(signal.eq(0) for signal in cleared)]


class OwnHandshakes:
    """The stream layer's own handshakes on its ``control_handshake`` port: an NRDY for every
    packet it refuses, however close together they come (a count owed: the host matches each
    prime with its answer), and at most one ERDY selecting a stream, sent after them.

    Attributes
    ----------
    sent_nrdy, sent_erdy: Value
        This cycle the port's ``done`` took an NRDY / the ERDY.
    erdy_pending: Signal()
    """

    def __init__(self, m, port, *, endpoint_number, direction):
        self.owed, self.erdy_pending, self.erdy_stream = Signal(3), Signal(), Signal(16)
        self._owe = Signal()
        nrdy = self.owed != 0
        m.d.comb += [
            port.valid.eq(nrdy | self.erdy_pending),
            port.request.kind.eq(Mux(nrdy, HandshakeKind.NRDY, HandshakeKind.ERDY)),
            port.request.endpoint_number.eq(endpoint_number),
            port.request.direction.eq(direction),
            port.request.stream_id.eq(Mux(nrdy, 0, self.erdy_stream)),
        ]
        self.sent_nrdy, self.sent_erdy = port.done & nrdy, port.done & ~nrdy
        m.d.ss += self.owed.eq(self.owed + self._owe - self.sent_nrdy)
        with m.If(self.sent_erdy):
            m.d.ss += self.erdy_pending.eq(0)

    def nrdy(self, m):
        """Owe one more NRDY."""
        m.d.comb += self._owe.eq(1)

    @property
    def owing(self):
        """An NRDY is owed from this cycle on (the count has not caught up yet)."""
        return self._owe

    def select(self, m, stream):
        """Send an ERDY naming ``stream``."""
        m.d.ss += [self.erdy_pending.eq(1), self.erdy_stream.eq(stream)]

    @property
    def cleared(self):
        return [self.owed, self.erdy_pending]
