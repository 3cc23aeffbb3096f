"""busprobe's SuperSpeed bulk IN endpoint: a ring buffer sent in bursts of up to 16 packets."""

from amaranth import Array, C, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from luna.gateware.usb.usb3.protocol.endpoint import SuperSpeedEndpointInterface

from ..common.packet_stream import PacketStreamSignature
from .framed_packets import PACKET_BYTES, FramedPackets
from .in_transfer_framing import NextPacketFraming
from .ring_reader import RingPacketReader
from .skid_buffer import RegisteredReadyBuffer
from .telemetry import DIRECTION_EVENTS
from .transaction import HandshakeKind, HandshakeRequestSignature, registered_ack_tp

__all__ = ["BurstInEndpoint"]


class BurstInEndpoint(wiring.Component):
    """Bulk IN endpoint, wMaxPacketSize 1024, sending up to ``slots`` packets per burst.

    The 32-bit ``stream`` fills a ring buffer (one BRAM of ``slots`` × 1024 bytes) continuously;
    packets are cut from it when they are first sent, by the transfer framing of
    SET_IN_TRANSFER (full packets, then a short packet or a ZLP where the host's transfer ends),
    so a new transfer length takes effect at the next packet and the byte stream never breaks.
    Each packet's start, length and End Of Burst are kept by sequence number for retries. The
    host's ACK TPs drive the rest (USB 3.2 §8.10-8.11):

    - an ACK TP for this endpoint with sequence ``s`` and NumP ``n`` opens the window
      ``[s, s + n)``, and retires every packet before ``s`` (cumulative acknowledgement);
    - with Rty set, sending rewinds to ``s``, the first unacknowledged packet, once the packet
      on the wire (if any) ends;
    - the packet that ends a transfer carries EOB; the endpoint then waits, as after an NRDY,
      until all it sent is acknowledged and the next packet is buffered, and sends ERDY;
    - an ACK TP asking for data (NumP > 0) when the next packet is not buffered gets an NRDY;
    - while ``halt`` is set (SET_FEATURE(ENDPOINT_HALT)) nothing is sent and an ACK TP asking
      for data gets a STALL TP (§8.12.1.4); ``restart`` (CLEAR_FEATURE(ENDPOINT_HALT),
      SET_INTERFACE) starts the sequence numbers over at 0, as SET_CONFIGURATION does, and
      drops what was buffered.

    With ``framed`` (loopback, the null disk) the packets are the stream's own instead
    (:class:`.framed_packets.FramedPackets`: cut at ``last`` or 1024 bytes, each from a word of
    the ring), sent as they came; a short packet ends its transfer (EOB), and with ``tagged``
    (UAS) every ``last`` while ``last_ends``, its stream kept, its ERDY at its first beat.

    While the window is shut the next new packet's first words are read ahead (staged:
    :class:`.ring_reader.RingPacketReader`).

    Upstream work-around (luna-usb 0.2.3, ``usb3/endpoints/stream.py``): LUNA's
    ``SuperSpeedStreamInEndpoint`` neither bursts nor names its NRDY/ERDY (endpoint 0).

    Attributes
    ----------
    stream: PacketStreamSignature(4), input stream
        Data to send: whole 32-bit words cut into packets by the transfer framing, or with
        ``framed`` the stream's packets (``last``, ``keep``).
    framed: Signal(), input
        Send the stream's packets as they are (loopback); change it only with ``flush``.
    transfer_length: Signal(31), input
        IN transfer length in bytes (0: full packets forever); read when a transfer starts.
    zlp: Signal(), input
        End transfers that are a multiple of 1024 bytes with a zero-length packet.
    new_transfer: Signal(), input
        Strobe: the next new packet starts a transfer (SET_IN_TRANSFER).
    flush: Signal(), input
        Strobe: discard the data not sent yet and start a transfer (a pattern restart).
    halt: Signal(), input
        The endpoint is halted: STALL instead of data.
    restart: Signal(), input
        Strobe: the endpoint starts over (sequence number 0, nothing buffered).
    take_ack: Signal(), input
        The ACK TP ``interface.handshakes_in`` announces is for this endpoint's data (1 unless
        a stream protocol, :mod:`.stream_in_endpoint`, holds back one of another stream or a prime).
    park: Signal(), input
        Strobe: wait as after an NRDY (send nothing until this endpoint's next ERDY is sent).
    handshake: HandshakeRequestSignature, output
        NRDY/ERDY/STALL requests to :class:`.transaction.BulkHandshakeGenerator`.
    end_of_burst: Signal(), output
        EOB of the data packet being sent (to :class:`.core.SuperSpeedCore`).
    acknowledged, next_due: Signal(), output
        All sent is acknowledged; the transfer ended, the next one (one packet) buffered.
    events: DIRECTION_EVENTS, output
        Telemetry events.
    packet_stream_id, next_stream_id: Signal(16), input, output
        With ``tagged``: the stream of the packet coming in (read at its last beat); of the
        next new packet buffered.
    last_ends: Signal(), input
        With ``tagged``: a framed packet's ``last`` ends its transfer (End Of Burst).
    announce: Signal(), input
        With ``tagged`` and ``framed``: a packet of ``packet_stream_id`` is coming before its
        first beat (held until that beat is written): announced as one on its way.
    sending: Signal(), output
        A data packet is being sent (the device takes its header's EOB and Stream ID from here).
    may_send, starting, wants_to_send: Signal(), input, output, output
        A packet may start (init 1); one starts this cycle; one would start if it might. LUNA's
        endpoint multiplexer does not arbitrate (luna-usb 0.2.3, ``usb3/protocol/endpoint.py``):
        with two IN endpoints (UAS) the device grants one at a time (:mod:`.storage`).
    interface: SuperSpeedEndpointInterface
        LUNA's connection to the device (not part of the wiring signature).

    Parameters
    ----------
    endpoint_number: int
    slots: int
        Packets the ring holds, a power of two from 2 to 16 (the burst is at most 16).
    tagged: bool
        Framed packets carry a stream and ``last`` ends a transfer (see above).
    """

    stream: In(PacketStreamSignature(4))
    framed: In(1)
    transfer_length: In(31)
    zlp: In(1)
    new_transfer: In(1)
    flush: In(1)
    halt: In(1)
    restart: In(1)
    take_ack: In(1, init=1)
    park: In(1)
    handshake: Out(HandshakeRequestSignature())
    end_of_burst: Out(1)
    acknowledged: Out(1)
    next_due: Out(1)
    events: Out(DIRECTION_EVENTS)
    packet_stream_id: In(16)
    last_ends: In(1)
    announce: In(1)
    next_stream_id: Out(16)
    sending: Out(1)
    may_send: In(1, init=1)
    starting: Out(1)
    wants_to_send: Out(1)

    def __init__(self, *, endpoint_number=1, slots=16, tagged=False):
        if slots not in (2, 4, 8, 16):
            raise ValueError(f"slots must be a power of two from 2 to 16, not {slots}")
        super().__init__()
        self.interface = SuperSpeedEndpointInterface()
        self._number = endpoint_number
        self._slots = slots
        self._tagged = tagged

    def elaborate(self, platform):
        m = Module()
        slots, interface = self._slots, self.interface
        # Twice the window: a full window of unacknowledged packets and the next ones filling.
        ring_bytes = 2 * slots * PACKET_BYTES
        word_bits = (ring_bytes // 4 - 1).bit_length()
        m.submodules.ring = ring = Memory(shape=32, depth=ring_bytes // 4, init=[])
        write, read = ring.write_port(domain="ss"), ring.read_port(domain="ss")
        starts = Array(Signal(16, name=f"start_{i}") for i in range(slots))
        lengths = Array(Signal(11, name=f"length_{i}") for i in range(slots))
        eobs = Array(Signal(name=f"eob_{i}") for i in range(slots))

        def entry(sequence):
            return sequence[:(slots - 1).bit_length()]

        # Byte positions in the stream (mod 2**16): retired <= next_byte <= filled.
        filled, next_byte, retired = Signal(16), Signal(16), Signal(16)
        # Sequence numbers (mod 32): retire_seq <= send_seq <= never_sent.
        send_seq, retire_seq, retire_target = Signal(5), Signal(5), Signal(5)
        window_end, never_sent, rewind_seq = Signal(5), Signal(5), Signal(5)
        rewind, waiting = Signal(), Signal()  # waiting: after an NRDY or EOB, until ERDY

        # Fill: a word per cycle while the ring has room beyond the unacknowledged bytes; framed,
        # each packet's length (and tagged, its stream and ``last``) kept at its last beat.
        m.submodules.framed_lengths = framed_lengths = FramedPackets(tagged=self._tagged)
        # Registered, a word short of full: in loopback ``ready`` reaches the OUT endpoint's
        # block RAM read enable, and the subtract-compare must not lengthen that path.
        room = Signal()
        m.d.ss += room.eq((filled - retired)[:16] <= ring_bytes - 12)
        m.d.comb += [
            self.stream.ready.eq(room & (~self.framed | framed_lengths.room)),
            write.addr.eq(filled[2:2 + word_bits]),
            write.data.eq(self.stream.payload.data),
            write.en.eq(self.stream.valid & self.stream.ready),
            framed_lengths.beat.eq(write.en & self.framed),
            framed_lengths.last.eq(self.stream.payload.last),
            framed_lengths.keep.eq(self.stream.payload.keep),
            framed_lengths.stream_id.eq(self.packet_stream_id),
            framed_lengths.announce.eq(self.announce & self.framed),
            framed_lengths.drop.eq(self.flush | interface.ep_reset | self.restart),
        ]
        with m.If(write.en):
            m.d.ss += filled.eq(filled + 4)

        # The next new packet's framing; ``settling`` holds new packets back until its
        # registers have caught up.
        framing = NextPacketFraming(m, self, framed_lengths)
        new_length, new_eob, settling = framing.length, framing.eob, framing.settling
        m.d.comb += self.next_stream_id.eq(framing.stream)

        # ACK TPs retire packets, one per cycle, taken a cycle after LUNA's receiver decodes them.
        handshakes_in = registered_ack_tp(m, interface.handshakes_in)
        taken = Signal(init=1)  # take_ack, registered with the fields it gates
        m.d.ss += taken.eq(self.take_ack)
        ack = (handshakes_in.ack_received & (handshakes_in.endpoint_number == self._number)
               & handshakes_in.direction & taken)
        retiring = retire_seq != retire_target
        with m.If(retiring):
            m.d.comb += [self.events.acked.eq(1),
                         self.events.acked_bytes.eq(lengths[entry(retire_seq)])]
            m.d.ss += [retire_seq.eq(retire_seq + 1),
                       retired.eq(starts[entry(retire_seq)] + lengths[entry(retire_seq)])]

        # Sending: a new packet when the window reaches past what was ever sent, else a retry.
        is_new = send_seq == never_sent
        # +8: the aligner reads up to two words past an unaligned packet's last whole word.
        buffered = Signal()
        m.d.ss += buffered.eq(Mux(self.framed, framed_lengths.ready,
                                  (filled - next_byte)[:16] >= new_length + 8))
        # Tagged, a packet on its way is announced (ERDY; an ACK TP waits for it): the host's
        # answer (2 µs behind a VL805) overlaps the packet's fill (2.05 µs).
        coming = (self.framed & framed_lengths.coming) if self._tagged else C(0)
        # The window and ring-occupancy compares are registered; ``hold`` blocks the one cycle in
        # which they are stale (after a packet, an ACK TP, an ERDY or a rewind changed them).
        window_open, hold = Signal(), Signal()
        m.d.ss += window_open.eq((send_seq != window_end) & ((send_seq - retire_seq)[:5] < slots))
        can_send = (window_open & ~hold & ~waiting & ~rewind & ~self.halt
                    & (~is_new | (buffered & (settling == 0))))
        number, start, length, eob = Signal(5), Signal(16), Signal(11), Signal()
        resend = Signal()  # the packet being sent was sent before (a retry after Rty or rewind)
        m.d.comb += [
            interface.tx_endpoint_number.eq(self._number),
            interface.tx_direction.eq(1),
            interface.tx_sequence_number.eq(number),
            interface.tx_length.eq(length),
            self.end_of_burst.eq(eob),
        ]
        # Words reach LUNA through a skid pair, its ``ready`` a flip-flop (LUNA's ``ready`` into
        # SEND was an ss critical path on ECPIX-5, issue 44 item 7); the header fields stay put,
        # ``sending`` up and no packet starts, until LUNA has taken the last word.
        m.submodules.tx_buffer = tx_buffer = RegisteredReadyBuffer(domain="ss")
        tx = tx_buffer.sink
        m.d.comb += interface.tx.stream_eq(tx_buffer.source)
        draining = interface.tx.valid.any()

        def load_header():
            """The packet at ``send_seq`` into the header registers."""
            m.d.ss += number.eq(send_seq)
            with m.If(is_new):
                m.d.ss += [start.eq(next_byte), length.eq(new_length), eob.eq(new_eob)]
            with m.Else():
                m.d.ss += [start.eq(starts[entry(send_seq)]),
                           length.eq(lengths[entry(send_seq)]),
                           eob.eq(eobs[entry(send_seq)])]

        def start_packet():
            """The packet at ``send_seq`` starts: a new one takes its place in the sequence."""
            m.d.comb += [self.events.dp_start.eq(1), self.starting.eq(1)]
            m.d.ss += resend.eq(~is_new)
            load_header()
            with m.If(is_new):
                m.d.ss += [starts[entry(send_seq)].eq(next_byte),
                           lengths[entry(send_seq)].eq(new_length),
                           eobs[entry(send_seq)].eq(new_eob),
                           next_byte.eq(next_byte + new_length),
                           never_sent.eq(never_sent + 1)]
                framing.taken()
                with m.If(self.framed):
                    # The next framed packet starts on the next word of the ring.
                    m.d.comb += framed_lengths.take.eq(1)
                    m.d.ss += next_byte.eq(next_byte + Cat(C(0, 2), (new_length + 3)[2:]))

        # The next new packet is staged while the window is shut (.ring_reader). What is staged
        # stays the next new packet's until it starts: its bytes are buffered and not retired,
        # and its length and End Of Burst change only after a transfer request, a flush or a
        # restart, each of which sets ``settling`` and so unstages it (in READY a packet
        # starting in that very cycle is the one IDLE would have started). Never a retry.
        go = can_send & self.may_send & ~draining
        reader = RingPacketReader(
            m, read=read, tx=tx, zlp=interface.tx_zlp, start=start, length=length,
            word_bits=word_bits, go=go, may_stage=~draining,
            stageable=is_new & buffered & (settling == 0) & ~rewind & ~self.halt)
        done = reader.done
        m.d.comb += [self.wants_to_send.eq(can_send & reader.at_rest),
                     self.sending.eq(reader.busy | draining)]
        with m.If(reader.starting):
            start_packet()
        with m.Elif(reader.staging):
            load_header()

        burst_length = Signal(5)
        with m.If(done):
            m.d.comb += [self.events.dps.eq(1), self.events.eob.eq(eob),
                         # Decided when the packet started: a resend of the newest packet sent
                         # has number + 1 == never_sent too, so the numbers cannot tell it.
                         self.events.retry.eq(resend),
                         self.events.burst_dp.eq(1),
                         self.events.burst_length.eq(Mux(burst_length == 31, 31,
                                                         burst_length + 1))]
            m.d.ss += [send_seq.eq(number + 1),
                       burst_length.eq(Mux(burst_length == 31, 31, burst_length + 1))]
            with m.If(eob):
                m.d.ss += waiting.eq(1)
        idle = ~reader.in_send & ~draining & ~done
        with m.If(rewind & idle):
            m.d.ss += [send_seq.eq(rewind_seq), rewind.eq(0)]
        # A restart (or SET_CONFIGURATION) moves the sequence numbers too: the registered
        # window would still be open (an ACK TP may have opened it while the endpoint was halted).
        m.d.ss += hold.eq(done | ack | (rewind & idle) | self.handshake.done | retiring
                          | interface.ep_reset | self.restart)
        with m.If(idle & ((send_seq == window_end) | waiting)):  # the burst has ended
            m.d.ss += burst_length.eq(0)

        # NRDY when asked for data that is not buffered; ERDY once it is.
        request, asking = self.handshake.request, Signal()
        m.d.comb += [request.endpoint_number.eq(self._number), request.direction.eq(1),
                     request.number_of_packets.eq(slots)]  # ERDY: a burst is buffered or filling
        with m.If(ack):
            m.d.comb += [self.events.ack_tp.eq(1),
                         self.events.nump.eq(handshakes_in.number_of_packets)]
            m.d.ss += [retire_target.eq(handshakes_in.next_sequence),
                       window_end.eq(handshakes_in.next_sequence
                                     + handshakes_in.number_of_packets)]
            with m.If(self.halt):
                with m.If((handshakes_in.number_of_packets != 0) & ~asking):
                    m.d.ss += [asking.eq(1), request.kind.eq(HandshakeKind.STALL)]
            with m.Elif(handshakes_in.retry_required):
                m.d.ss += [rewind.eq(1), rewind_seq.eq(handshakes_in.next_sequence),
                           waiting.eq(0)]
            with m.Elif((handshakes_in.number_of_packets != 0) & ~waiting & ~asking
                        & (handshakes_in.next_sequence == never_sent) & ~buffered & ~coming):
                m.d.ss += [asking.eq(1), request.kind.eq(HandshakeKind.NRDY)]
        all_acknowledged = (retire_seq == send_seq) & (retire_target == send_seq)
        m.d.comb += [self.acknowledged.eq(all_acknowledged),
                     self.next_due.eq((waiting | (done & eob)) & buffered & new_eob)]
        with m.If(waiting & ~asking & all_acknowledged & (buffered | coming) & (settling == 0)
                  & idle & ~self.halt):
            m.d.ss += [asking.eq(1), request.kind.eq(HandshakeKind.ERDY)]
        m.d.comb += self.handshake.valid.eq(asking)
        with m.If(self.handshake.done):
            m.d.ss += asking.eq(0)
            with m.If(request.kind == HandshakeKind.NRDY):
                m.d.comb += self.events.nrdy.eq(1)
                m.d.ss += waiting.eq(1)
            with m.Elif(request.kind == HandshakeKind.ERDY):
                m.d.comb += self.events.erdy.eq(1)
                # The host answers ERDY with an ACK TP that opens the window again.
                m.d.ss += [waiting.eq(0), window_end.eq(send_seq)]

        with m.If(self.park):
            m.d.ss += waiting.eq(1)
        with m.If(self.new_transfer | self.flush):
            framing.restart()
        with m.If(self.flush):
            # The ring is written in whole words: the new data starts at the next word boundary.
            aligned = (next_byte + 3) & ~3
            m.d.ss += [filled.eq(aligned), next_byte.eq(aligned)]
        with m.If(interface.ep_reset | self.restart):
            m.d.ss += [state.eq(0) for state in (
                filled, next_byte, retired, send_seq, retire_seq, retire_target, window_end,
                never_sent, waiting, rewind, asking)]
            framing.restart()
        return m
