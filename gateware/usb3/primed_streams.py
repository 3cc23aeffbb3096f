"""The streams a host has primed on a bulk endpoint, in the order the device will select them."""

from amaranth import DomainRenamer, Module, ResetInserter, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

__all__ = ["PrimedStreams"]


class PrimedStreams(wiring.Component):
    """A queue of Stream IDs the host primed, each at most once, with one put back in front;
    or (``by_want``) the set of them, from which the device takes the one it wants.

    A host primes in one of two ways (USB 3.2 §8.12.1.4): naming a stream (a host-initiated
    selection, which the device refuses with NRDY and makes later: ``prime``), or the whole
    pipe with the reserved Prime Stream ID, after which the device may select any stream it
    has work for (``prime_pipe``; what device controllers report as a "prime" event, Linux's
    dwc3 and cdnsp drivers: Stream ID 0xFFFE). Either kind makes ``want`` selectable with
    ``by_want``; the host's NoStream answer to a selection (``reject``) un-primes the pipe
    until the host primes it again. Without ``by_want`` a pipe prime names nothing to queue.

    The device's stream protocol (:mod:`.stream_in_endpoint`, :mod:`.stream_out_endpoint`)
    pushes each stream the host primes and selects the oldest with its ERDY; a stream that ended
    before its transfer did (an NRDY in Move Data, a host that answered an ERDY on another
    stream) goes back in front, so it is selected next.

    Attributes
    ----------
    prime: Signal(), input
        Strobe: the host primed ``prime_id`` (ignored if it is queued already).
    prime_id: Signal(16), input
        A valid Stream ID, 1..``max_streams``.
    resume: Signal(), input
        Strobe: put ``resume_id`` back in front.
    resume_id: Signal(16), input
    take: Signal(), input
        Strobe: ``selected`` was selected (leaves the queue).
    flush: Signal(), input
        Strobe: forget every primed stream (the endpoint restarts).
    prime_pipe: Signal(), input
        Strobe: the host primed the pipe (the Prime Stream ID): with ``by_want`` any ``want``
        may be selected, until ``reject`` or ``flush``.
    reject: Signal(), input
        Strobe: the host answered the selection with NoStream (it has no transfer on that
        stream): the pipe is no longer primed.
    want: Signal(16), input
        With ``by_want``: the stream the device wants to move next (0: none).
    any: Signal(), output
        A stream is primed (with ``by_want``: ``want`` is).
    selected: Signal(16), output
        The stream the device selects next (valid with ``any``).
    some: Signal(), output
        Some stream is primed by its own Stream ID, whatever ``want`` (a flip-flop with
        ``by_want``): one selected and moving is no longer primed, so this says another one
        is. A primed pipe does not count: it says nothing of another transfer.

    Parameters
    ----------
    max_streams: int
        Stream IDs 1..max_streams, a power of two.
    by_want: bool
        The device chooses (UAS: the stream of the tag whose data or status it has) instead of
        taking the streams in the order they were primed.
    registered: bool
        With ``by_want``: ``any`` and ``selected`` are flip-flops, of the cycle before (a prime
        or a new ``want`` shows a cycle later; ``take`` takes ``selected``). They feed the
        handshake generator's arbitration (an IN endpoint's ERDY): the selection from 33 bits
        was an ss timing path on ECPIX-5 (issue 44 item 7). After a ``take`` or ``flush``
        they are stale for a cycle: the endpoint asks for no ERDY in that cycle.
    """

    prime: In(1)
    prime_id: In(16)
    resume: In(1)
    resume_id: In(16)
    take: In(1)
    flush: In(1)
    prime_pipe: In(1)
    reject: In(1)
    want: In(16)
    any: Out(1)
    selected: Out(16)
    some: Out(1)

    def __init__(self, *, max_streams, by_want=False, registered=False):
        super().__init__()
        self._max_streams, self._by_want = max_streams, by_want
        self._registered = registered and by_want

    def elaborate(self, platform):
        if self._by_want:
            return self._wanted()
        m = Module()
        depth = self._max_streams
        index_bits = depth.bit_length()  # IDs 1..max_streams
        m.submodules.fifo = fifo = ResetInserter({"ss": self.flush})(
            DomainRenamer("ss")(SyncFIFOBuffered(width=16, depth=depth)))
        queued = Signal(depth + 1)  # one bit per Stream ID: it is in the FIFO
        front, front_id = Signal(), Signal(16)  # a stream put back in front
        # In order of priming, the stream in front is whichever one is primed: ``some`` is ``any``.
        m.d.comb += [self.any.eq(front | fifo.r_rdy), self.selected.eq(fifo.r_data),
                     self.some.eq(self.any)]
        with m.If(front):
            m.d.comb += self.selected.eq(front_id)
        with m.If(self.take & front):
            m.d.ss += front.eq(0)
        with m.Elif(self.take & fifo.r_rdy):
            m.d.comb += fifo.r_en.eq(1)
            m.d.ss += queued.bit_select(fifo.r_data[:index_bits], 1).eq(0)
        already = (queued.bit_select(self.prime_id[:index_bits], 1)
                   | (front & (front_id == self.prime_id)))
        with m.If(self.prime & ~already & fifo.w_rdy):
            m.d.comb += [fifo.w_en.eq(1), fifo.w_data.eq(self.prime_id)]
            m.d.ss += queued.bit_select(self.prime_id[:index_bits], 1).eq(1)
        with m.If(self.resume):
            m.d.ss += [front.eq(1), front_id.eq(self.resume_id)]
        with m.If(self.flush):
            m.d.ss += [queued.eq(0), front.eq(0)]
        return m

    def _wanted(self):
        """One bit per Stream ID, primed or put back; ``want`` selected when its bit is set."""
        m = Module()
        depth = self._max_streams
        index_bits = depth.bit_length()
        primed = Signal(depth + 1)  # bit 0 (no stream) is never set
        pipe_primed = Signal()  # the host primed the pipe: any stream may be selected

        def bit(stream_id):
            in_range = stream_id[index_bits:] == 0
            named = primed.bit_select(stream_id[:index_bits], 1)
            # Any valid ID once the pipe is primed (1..max_streams: max_streams is a power of
            # two, so the bit below the index's top one is the only ID past it in range).
            valid = (stream_id[:index_bits] != 0) & ~(stream_id[index_bits - 1]
                                                     & (stream_id[:index_bits - 1] != 0))
            return (named | (pipe_primed & valid)) & in_range

        domain = "ss" if self._registered else "comb"
        m.d[domain] += [self.any.eq(bit(self.want)), self.selected.eq(self.want)]
        m.d.ss += self.some.eq(primed.any())
        with m.If(self.prime_pipe):
            m.d.ss += pipe_primed.eq(1)
        with m.If(self.reject | self.flush):
            m.d.ss += pipe_primed.eq(0)
        with m.If(self.prime & (self.prime_id[:index_bits] != 0)):
            m.d.ss += primed.bit_select(self.prime_id[:index_bits], 1).eq(1)
        with m.If(self.resume):
            m.d.ss += primed.bit_select(self.resume_id[:index_bits], 1).eq(1)
        with m.If(self.take):
            m.d.ss += primed.bit_select(self.selected[:index_bits], 1).eq(0)
        with m.If(self.flush):
            m.d.ss += primed.eq(0)
        return m
