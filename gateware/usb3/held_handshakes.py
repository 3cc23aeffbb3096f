"""When the bulk TPs wait for a data-in train: behind a host that answers an ERDY at once (and a
COMMAND IU's ACK behind any)."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.streams import StreamState

__all__ = ["HeldHandshakes", "QUICK_ANSWER_CYCLES"]

#: A host that answers the data pipe's ERDY (its ACK TP on the stream selected) in fewer ss
#: cycles than this, counted by the device in Start Stream, is a quick one. The simulated hosts
#: queue that ACK TP about 8 cycles after the ERDY (`ideal`), about 130 (`small-burst`) and
#: about 250 (`vl805`, 2 µs) in the link traces of 2026-12-06; the device's count adds the
#: link's way there and back, some 25 cycles.
QUICK_ANSWER_CYCLES = 64


class HeldHandshakes(wiring.Component):
    """Decides when the bulk handshake generator offers no TP: while the data IN endpoint's
    train of packets goes, behind a quick host, with another stream primed on that pipe.

    Queued reads behind a host that answers at once (`ideal`) switch streams with the lane idle.
    The host's ACK of a stream's last packet comes, then the next ERDY (27 cycles later), then
    the host's Start Stream and the first data packet (49 cycles after that). Otherwise the
    device's other answers (the status stream's ERDY, the ACK of the next COMMAND IU, the NRDYs
    to primes) go between two data packets of the train. Held until the train has gone, they
    fill that wait instead. Simulated (Verilator), `ideal`'s 4 KiB reads at QD 4 / 8 went from
    98.39 / 98.42 % of the bound with the engine to 99.26 / 99.27 %.

    Held unconditionally, they cost everywhere else. The status stream's ERDY then waits for
    the train's end, and a host that takes a microsecond or two to answer it starts the status
    stream that much later. Every queued 1 and 4 KiB read behind `small-burst` lost about 2 %,
    and every QD 1 read lost 2-5 %, `ideal`'s too: with no next stream there is no wait to
    fill. Hence the two conditions:

    - The data pipe's last ERDY was answered in fewer than :data:`QUICK_ANSWER_CYCLES`. The
      device measures this itself, as its cycles in Start Stream.
    - Another stream is primed, so a switch follows this train.

    A train holds them for one burst at the most (16 packets, about 34 µs), and only while its
    packets go.

    Attributes
    ----------
    state: Signal(StreamState), input
        The data IN endpoint's stream state.
    others_primed: Signal(), input
        The data IN endpoint has a stream primed besides the one moving.
    sending: Signal(), input
        The data IN endpoint is sending a packet.
    end_of_burst: Signal(), input
        That packet ends its transfer.
    hold: Signal(), output
        The bulk TPs wait (for :class:`.transaction.BulkHandshakeGenerator`).
    quick: Signal(), output
        The host answered the data pipe's last ERDY quickly (registered).
    train: Signal(), output
        The train is going: a packet is being sent, or it is between two packets of one
        transfer. Whatever the host, the COMMAND IU's ACK waits for it to go (the storage
        device's ``_handshake_waits``): otherwise an IU that comes during a train puts its
        ACK between two data packets, 5 cycles on the lane the reads are bound by.
    """

    state: In(StreamState)
    others_primed: In(1)
    sending: In(1)
    end_of_burst: In(1)
    hold: Out(1)
    quick: Out(1)
    train: Out(1)

    def elaborate(self, platform):
        m = Module()
        answer = Signal(range(QUICK_ANSWER_CYCLES + 1))  # saturating: slow is slow
        with m.If(self.state == StreamState.START_STREAM):
            m.d.ss += answer.eq(Mux(answer == QUICK_ANSWER_CYCLES, answer, answer + 1))
        with m.Elif(answer != 0):
            m.d.ss += [self.quick.eq(answer < QUICK_ANSWER_CYCLES), answer.eq(0)]
        others = Signal()
        m.d.ss += others.eq(self.others_primed)
        # Between two packets of the train the endpoint is not sending for a cycle or two (its
        # window compares are registered): the train goes on through them.
        between = Signal(2)
        m.d.ss += between.eq(Mux(self.sending & ~self.end_of_burst, 0b11, between >> 1))
        m.d.comb += self.train.eq(self.sending | (between != 0))
        m.d.comb += self.hold.eq(self.train & self.quick & others)
        return m
