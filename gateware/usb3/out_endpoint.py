"""busprobe's SuperSpeed bulk OUT endpoint: packet buffers advertised as the NumP window."""

from types import SimpleNamespace

from amaranth import Array, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from luna.gateware.usb.usb3.protocol.endpoint import SuperSpeedEndpointInterface

from ..common.packet_stream import PacketStreamSignature
from .telemetry import DIRECTION_EVENTS
from .transaction import HandshakeKind, HandshakeRequestSignature

__all__ = ["BurstOutEndpoint", "BURST_GAP_CYCLES"]

WORDS_PER_PACKET = 1024 // 4
#: An OUT burst ends when no data packet starts this many ss cycles (256 ns) after the last one
#: ended, or with a packet carrying End Of Burst (back to back, packets are ~10 cycles apart).
BURST_GAP_CYCLES = 32


class BurstOutEndpoint(wiring.Component):
    """Bulk OUT endpoint, wMaxPacketSize 1024, accepting bursts of up to ``slots`` packets.

    Each data packet (DP) for the endpoint is written into the buffer of its sequence number
    (slot = sequence mod ``slots``) and answered, when its CRC-32 is checked, with an ACK TP
    (USB 3.2 §8.10-8.11):

    - in sequence and good: ACK with the next sequence number and NumP = the buffers free now
      (the host may send that many more packets without waiting);
    - corrupted (``rx_invalid``) or out of sequence: dropped, ACK with Rty and the expected
      sequence number;
    - no buffer free (the host ignored the window): dropped, NRDY; after an NRDY or an ACK with
      NumP 0, ERDY as soon as a buffer is free;
    - while ``halt`` is set (SET_FEATURE(ENDPOINT_HALT)): dropped, STALL TP (§8.12.1.4);
      ``restart`` (CLEAR_FEATURE(ENDPOINT_HALT), SET_INTERFACE) starts the sequence numbers
      over at 0, as SET_CONFIGURATION does.

    Good packets leave, in order, as a 32-bit packet stream at one word per cycle (faster than
    the link fills them, so the buffers are free again by the next burst).

    Attributes
    ----------
    stream: PacketStreamSignature(4), output stream
        The packets received (``gateware.common.packet_stream``: ``last`` on each packet's final
        beat, ``keep`` for a partial last word; a ZLP has no beat).
    take_dp: Signal(), input
        The data packet whose header ``interface.rx_header`` holds is for this endpoint's data
        (1 unless a stream protocol, :mod:`.stream_out_endpoint`, holds back one of another
        stream or a prime); read as the packet starts and when it completes.
    handshake: HandshakeRequestSignature, output
        ACK/NRDY/ERDY/STALL requests to :class:`.transaction.BulkHandshakeGenerator`.
    flush: Signal(), input
        Strobe: drop the packets not drained yet (a pattern restart).
    halt: Signal(), input
        The endpoint is halted: every data packet is dropped and answered with STALL.
    restart: Signal(), input
        Strobe: the endpoint starts over (sequence number 0, nothing buffered).
    events: DIRECTION_EVENTS, output
        Telemetry events.
    interface: SuperSpeedEndpointInterface
        LUNA's connection to the device (not part of the wiring signature).

    Parameters
    ----------
    endpoint_number: int
    slots: int
        Packet buffers, a power of two from 2 to 16 (NumP is at most 16).
    """

    stream: Out(PacketStreamSignature(4))
    take_dp: In(1, init=1)
    handshake: Out(HandshakeRequestSignature())
    flush: In(1)
    halt: In(1)
    restart: In(1)
    events: Out(DIRECTION_EVENTS)

    #: Take the link's data beats through a register (a cycle late; the packet's header is
    #: held for the packet): the stream layer (:mod:`.stream_out_endpoint`) decides ``take_dp``
    #: from registered compares with the header, so its 16-bit Stream ID compare stays out of
    #: the path from a packet's first beat into the buffer writes (an ``ss`` timing path on
    #: the ECPIX-5, issue 44 item 7).
    _REGISTERED_RX = False

    def __init__(self, *, endpoint_number=2, slots=16):
        if slots not in (2, 4, 8, 16):
            raise ValueError(f"slots must be a power of two from 2 to 16, not {slots}")
        super().__init__()
        self.interface = SuperSpeedEndpointInterface()
        self._number = endpoint_number
        self._slots = slots

    def elaborate(self, platform):
        m = Module()
        slots, interface = self._slots, self.interface
        slot_bits = (slots - 1).bit_length()
        m.submodules.buffers = buffers = Memory(shape=32, depth=slots * WORDS_PER_PACKET,
                                                init=[])
        write, read = buffers.write_port(domain="ss"), buffers.read_port(domain="ss")
        lengths = Array(Signal(11, name=f"length_{i}") for i in range(slots))

        expected, drained = Signal(5), Signal(5)  # sequence numbers (mod 32)
        # Buffers free now (for the ACK's NumP), and the same a cycle late for the decisions:
        # the next DP starts several cycles after a commit, so the late copy is never stale
        # when a DP is accepted, and it keeps the subtract out of the long paths.
        free, free_late = Signal(range(slots + 1)), Signal(range(slots + 1), init=slots)
        m.d.comb += free.eq(slots - (expected - drained)[:5])
        m.d.ss += free_late.eq(free)

        # Receiving.
        rx, header = interface.rx, interface.rx_header
        if self._REGISTERED_RX:
            beat = SimpleNamespace(valid=Signal(4, name="rx_valid_r"),
                                   first=Signal(name="rx_first_r"),
                                   last=Signal(name="rx_last_r"),
                                   data=Signal(32, name="rx_data_r"))
            m.d.ss += [beat.valid.eq(rx.valid), beat.first.eq(rx.first),
                       beat.last.eq(rx.last), beat.data.eq(rx.data)]
            rx = beat
        self._rx = rx  # the beats the endpoint follows (for a stream layer)
        for_us = ((header.endpoint_number == self._number) & ~header.setup
                  & ~header.direction & self.take_dp)
        receiving, accepting, out_of_sequence = Signal(), Signal(), Signal()
        word, count = Signal(8), Signal(11)
        starting = rx.valid.any() & rx.first & for_us
        in_sequence = (header.data_sequence == expected) & ~self.halt
        beat_bytes = sum(rx.valid[i] for i in range(4))
        with m.If(starting):
            m.d.comb += self.events.dps.eq(1)
            m.d.ss += [receiving.eq(1), accepting.eq(in_sequence & (free_late != 0)),
                       out_of_sequence.eq(~in_sequence), word.eq(0), count.eq(0)]
            with m.If(in_sequence & (free_late != 0)):
                m.d.comb += self.events.dp_start.eq(1)
        writing = Mux(starting, in_sequence & (free_late != 0), accepting & receiving)
        with m.If(rx.valid.any() & (starting | receiving)):
            m.d.comb += [
                write.addr.eq(Cat(Mux(starting, 0, word), expected[:slot_bits])),
                write.data.eq(rx.data),
                write.en.eq(writing),
            ]
            m.d.ss += [word.eq(Mux(starting, 1, word + 1)),
                       count.eq(Mux(starting, 0, count) + beat_bytes)]

        # The link's CRC verdict strobes come out of its CRC compare combinationally: registered
        # here (a cycle late is harmless, the next DP's header takes longer) to meet 125 MHz.
        complete, invalid = Signal(), Signal()
        m.d.ss += [complete.eq(interface.rx_complete), invalid.eq(interface.rx_invalid)]
        # A ZLP for us has no payload beats: its header and the CRC verdict arrive together, so
        # what its header decides is registered with the verdict (LUNA holds the header until
        # the next): from the header through these compares into the UAS engine's
        # ``out_acked_length`` was ECPIX-5's ss path (117.14 MHz, issue 44 item 7).
        zero_length, zlp_accepted, zlp_out_of_sequence = Signal(), Signal(), Signal()
        m.d.ss += [zero_length.eq(~receiving & for_us & (header.data_length == 0)),
                   zlp_accepted.eq(in_sequence & (free_late != 0)),
                   zlp_out_of_sequence.eq(~in_sequence)]
        ours = receiving | zero_length
        good = complete & ours
        bad = invalid & ours
        accepted = Mux(receiving, accepting, zlp_accepted)
        sequence_error = Mux(receiving, out_of_sequence, zlp_out_of_sequence)

        # Handshakes: one request at a time; its fields are the state when the link takes it.
        request, asking, retry_flag = self.handshake.request, Signal(), Signal()
        waiting = Signal()  # after NRDY or an ACK with NumP 0: ERDY when a buffer frees
        m.d.comb += [request.endpoint_number.eq(self._number), request.direction.eq(0),
                     request.sequence.eq(expected), request.retry.eq(retry_flag),
                     request.number_of_packets.eq(free), self.handshake.valid.eq(asking)]
        kind = request.kind
        event = Signal()  # this cycle needs an ACK (sent after it, with its outcome)
        with m.If(good | bad):
            m.d.ss += receiving.eq(0)
            with m.If(self.halt):
                m.d.ss += [asking.eq(1), kind.eq(HandshakeKind.STALL)]
            with m.Elif(good & accepted):
                m.d.comb += [self.events.acked.eq(1),
                             self.events.acked_bytes.eq(Mux(receiving, count, 0)), event.eq(1)]
                m.d.ss += [lengths[expected[:slot_bits]].eq(Mux(receiving, count, 0)),
                           expected.eq(expected + 1), retry_flag.eq(0)]
            with m.Elif(good & sequence_error):
                m.d.comb += [self.events.sequence_error.eq(1), event.eq(1)]
                m.d.ss += retry_flag.eq(1)
            with m.Elif(good):  # in sequence but no buffer: the host overran the window
                m.d.ss += [asking.eq(1), kind.eq(HandshakeKind.NRDY)]
            with m.If(bad & ~self.halt):
                m.d.comb += [self.events.retry.eq(1), event.eq(1)]
                m.d.ss += retry_flag.eq(1)
        with m.If(event):
            m.d.ss += [asking.eq(1), kind.eq(HandshakeKind.ACK)]
        with m.If(waiting & ~asking & ~event & (free_late != 0) & ~self.halt):
            m.d.ss += [asking.eq(1), kind.eq(HandshakeKind.ERDY)]
        with m.If(self.handshake.done):
            m.d.ss += asking.eq(event)
            with m.Switch(kind):
                with m.Case(HandshakeKind.ACK):
                    m.d.comb += [self.events.ack_tp.eq(1), self.events.nump.eq(free)]
                    m.d.ss += waiting.eq(free == 0)
                with m.Case(HandshakeKind.NRDY):
                    m.d.comb += self.events.nrdy.eq(1)
                    m.d.ss += waiting.eq(1)
                with m.Case(HandshakeKind.ERDY):
                    m.d.comb += self.events.erdy.eq(1)
                    m.d.ss += waiting.eq(0)

        # Bursts, for the telemetry.
        burst_length, gap = Signal(5), Signal(range(BURST_GAP_CYCLES + 1))
        with m.If(good & accepted):
            grown = Mux(burst_length == 31, 31, burst_length + 1)
            m.d.comb += [self.events.burst_dp.eq(1), self.events.burst_length.eq(grown)]
            m.d.ss += [burst_length.eq(grown), gap.eq(0)]
        with m.Elif(receiving):
            m.d.ss += gap.eq(0)
        with m.Elif(burst_length != 0):
            m.d.ss += gap.eq(gap + 1)
            with m.If((gap == BURST_GAP_CYCLES) | header.end_of_burst):
                m.d.ss += [burst_length.eq(0), gap.eq(0)]

        # Draining, a word per cycle.
        length, beat = Signal(11), Signal(9)
        beats = (length + 3)[2:11]
        m.d.comb += read.addr.eq(Cat(beat[:8], drained[:slot_bits]))
        # A read port's enable resets to 1 (amaranth.lib.memory): held low unless a state reads,
        # or a stalled beat's word would be replaced by the next one.
        m.d.comb += read.en.eq(0)
        # Registered, so it is a cycle stale: the NEXT state after each packet lets it catch up.
        undrained = Signal()
        m.d.ss += undrained.eq(drained != expected)
        def abort_on_flush():
            # A flush (SET_PATTERN) may come while a packet drains (the host's control
            # transfer is quicker than a 1024-byte drain): that packet is dropped too, or
            # the drain would step past the flushed sequence number into empty buffers. NEXT,
            # not IDLE: ``undrained`` is a cycle stale.
            with m.If(self.flush | interface.ep_reset | self.restart):
                m.next = "NEXT"

        with m.FSM(domain="ss"):
            with m.State("IDLE"):
                with m.If(undrained):
                    m.d.ss += [length.eq(lengths[drained[:slot_bits]]), beat.eq(0)]
                    m.next = "START"
                abort_on_flush()
            with m.State("START"):
                with m.If(length == 0):
                    m.d.ss += drained.eq(drained + 1)
                    m.next = "NEXT"
                with m.Else():
                    m.d.comb += read.en.eq(1)
                    m.d.ss += beat.eq(1)
                    m.next = "SEND"
                abort_on_flush()
            with m.State("SEND"):
                at_last = beat == beats
                remainder = length[:2]
                m.d.comb += [
                    self.stream.valid.eq(1),
                    self.stream.payload.data.eq(read.data),
                    self.stream.payload.last.eq(at_last),
                    self.stream.payload.keep.eq(Mux(at_last & (remainder != 0),
                                                    Mux(remainder == 1, 0b0001,
                                                        Mux(remainder == 2, 0b0011, 0b0111)),
                                                    0b1111)),
                ]
                with m.If(self.stream.ready):
                    m.d.comb += read.en.eq(~at_last)
                    m.d.ss += beat.eq(beat + 1)
                    with m.If(at_last):
                        m.d.ss += drained.eq(drained + 1)
                        m.next = "NEXT"
                abort_on_flush()
            with m.State("NEXT"):
                m.next = "IDLE"
                abort_on_flush()

        with m.If(self.flush):
            m.d.ss += drained.eq(expected)
        with m.If(interface.ep_reset | self.restart):
            m.d.ss += [expected.eq(0), drained.eq(0), receiving.eq(0), asking.eq(0),
                       waiting.eq(0), retry_flag.eq(0)]
        return m
