"""Always-ready bulk IN endpoint: a block-RAM ring of packets filled from a packet stream."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb2
from luna.gateware.usb.usb2.endpoint import EndpointInterface

from ..common.packet_stream import PacketStreamSignature

__all__ = ["StreamInEndpoint"]


class StreamInEndpoint(wiring.Component):
    """Bulk IN endpoint sending what a packet stream gives it; never NAKs a stream that keeps up.

    The buffer is one block RAM used as a ring of ``buffer_packets`` packets, each byte stored
    with the stream's ``last`` bit. Two read pointers make it a multi-buffer: ``committed`` is
    the first byte the host has not ACKed, ``live`` the byte on the wire. A packet goes out from
    ``committed``; the host's ACK moves ``committed`` to ``live`` (freeing the packet for the
    writer); a new token without an ACK resends the same bytes with the same data toggle. The
    writer fills the free part of the ring from ``stream`` meanwhile, so with a source that is
    always valid the next packet is ready the cycle the last one is ACKed, and the first one from
    the first cycle after reset.

    Packet length is chosen as the packet is sent: ``max_packet_size``, less where the transfer
    ends (``transfer_length``) or where the stream closed a packet with ``last``. With
    ``transfer_length`` N > 0 every transfer is N bytes; its last packet is short, or, when N is a
    multiple of the packet size and ``zlp`` is set, followed by a ZLP; a packet the stream closes
    short ends the transfer early, and the next one starts afresh. N = 0 leaves the framing to
    the stream (full packets, and whatever ``last`` closes). A token that finds less than a
    full packet and no ``last`` in the ring is NAKed, unless ``cut_through`` says the stream is
    a generator (valid whenever the ring has room): then a packet starts as soon as two bytes
    are in, because the writer, one byte per cycle, stays ahead of the transmitter, which takes
    at most one — a ring just flushed answers the host's first token without a NAK.

    Attributes
    ----------
    stream: PacketStreamSignature(1), input
        The data to send (see :mod:`~gateware.common.packet_stream`).
    cut_through: Signal(), input
        The stream never stalls while the ring has room (a pattern generator): packets may start
        before they are all in the ring.
    flush: Signal(), input
        Strobe: forget every byte buffered and not yet ACKed (SET_PATTERN, SET_DATA_MODE).
    reframe: Signal(), input
        Strobe: a new transfer starts at the next packet; buffered data stays (SET_IN_TRANSFER).
    transfer_length: Signal(31), input
        Transfer length in bytes, 0 for framing by the stream only.
    zlp: Signal(), input
        End transfers whose length is a multiple of the packet size with a ZLP.
    reset_toggle: Signal(), input
        Strobe: the next data packet is DATA0 (bus reset, SET_CONFIGURATION).
    halt: Signal(), input
        The endpoint is halted (SET_FEATURE(ENDPOINT_HALT)): every IN token is answered with
        STALL and nothing is sent; the ring keeps its data for when the halt is cleared (the
        toggle restarts then, on CLEAR_FEATURE(ENDPOINT_HALT)).
    token: Signal(), output
        Strobe: an IN token addressed to this endpoint arrived.
    nak: Signal(), output
        Strobe: this endpoint answered NAK (the stream had not filled a packet).
    packet_start: Signal(), output
        Strobe: a data packet (or ZLP, or a retry) starts.
    acked: Signal(), output
        Strobe: the host ACKed the packet just sent; its length is ``acked_length``.
    acked_length: Signal(range(max_packet_size + 1)), output
        Payload length of the packet ACKed.
    interface: EndpointInterface
        Connection to LUNA's ``USBDevice`` (not part of the wiring signature).

    Parameters
    ----------
    endpoint_number: int
        Endpoint number (not address).
    max_packet_size: int
        wMaxPacketSize of the endpoint.
    buffer_packets: int
        Ring size in full packets (a power of two, at least 2).
    """

    stream: In(PacketStreamSignature(1))
    cut_through: In(1)
    flush: In(1)
    reframe: In(1)
    transfer_length: In(31)
    zlp: In(1)
    reset_toggle: In(1)
    halt: In(1)
    token: Out(1)
    nak: Out(1)
    packet_start: Out(1)
    acked: Out(1)
    acked_length: Out(range(usb2.MAX_PACKET_SIZE + 1))

    def __init__(self, *, endpoint_number=usb2.EP_IN & 0x7F,
                 max_packet_size=usb2.MAX_PACKET_SIZE, buffer_packets=4):
        depth = buffer_packets * max_packet_size
        if max_packet_size & (max_packet_size - 1):
            raise ValueError("the IN endpoint's max packet size must be a power of two")
        if buffer_packets < 2 or depth & (depth - 1):
            raise ValueError("the IN ring must hold a power of two of at least two packets")
        self._endpoint_number = endpoint_number
        self._max_packet_size = max_packet_size
        self._depth = depth
        super().__init__()
        self.interface = EndpointInterface()

    def elaborate(self, platform):
        m = Module()
        mps, depth = self._max_packet_size, self._depth
        interface = self.interface
        tokenizer, tx = interface.tokenizer, interface.tx

        # One bit beyond the address tells a full ring from an empty one.
        pointer = range(2 * depth)
        written = Signal(pointer)
        committed = Signal(pointer)
        live = Signal(pointer)
        closed = Signal(range(depth + 1))   # bytes with `last` between committed and written

        m.submodules.ring = ring = Memory(shape=9, depth=depth, init=[])
        write = ring.write_port(domain="usb")
        read = ring.read_port(domain="usb")

        # -- writer: the free part of the ring, from the stream -----------------------------
        level = Signal(pointer)
        m.d.comb += [
            level.eq(written - committed),
            self.stream.ready.eq(level < depth),
            write.addr.eq(written),
            write.data.eq(self.stream.p.as_value()),
            write.en.eq(self.stream.valid & self.stream.ready),
        ]
        wrote_last = write.en & self.stream.p.last
        with m.If(write.en):
            m.d.usb += written.eq(written + 1)

        # -- sender ----------------------------------------------------------------------------
        zlp_owed = Signal()              # the transfer ended on a full packet and wants a ZLP
        packet_length = Signal(range(mps + 1))
        sent = Signal(range(mps + 1))
        # `sent == packet_length - 1`, kept as a register: compared combinationally it put a
        # 10-bit subtract-and-compare in front of LUNA's transmitter (ECP5 critical path).
        final_byte = Signal()
        sent_last = Signal()             # the packet in flight was closed by the stream
        data_toggle = Signal()

        for_us = tokenizer.endpoint == self._endpoint_number
        in_token_ready = for_us & tokenizer.is_in & tokenizer.ready_for_response
        clear_halt = (interface.clear_endpoint_halt_in.enable
                      & interface.clear_endpoint_halt_in.direction
                      & (interface.clear_endpoint_halt_in.number == self._endpoint_number))

        # The transfer is counted in whole packets: `packets` of it are ACKed, and the packet
        # at `last_index` (the short tail, or the last full packet) ends it. Counting packets
        # rather than bytes needs no 31-bit subtracter, comparator or reload multiplexer: the
        # count only increments or restarts. The framing values are registered: their inputs
        # change only on an ACK or a control request, and the next IN token is always many
        # cycles later (token packet + inter-packet delay), so they have settled when used; this
        # keeps the wide compare out of the token-to-response path (ECP5 timing).
        shift = mps.bit_length() - 1
        full, tail = self.transfer_length[shift:], self.transfer_length[:shift]
        framed = self.transfer_length != 0
        has_tail = tail != 0
        packets = Signal(len(full))
        last_index = Signal(len(full))
        m.d.comb += last_index.eq(full - ~has_tail)
        # `>=`, not `==`: the count never passes `last_index`, and a compare maps to the carry
        # chain where an equality would take a tree of LUTs.
        at_last = framed & (packets >= last_index)
        next_length = Signal(range(mps + 1))
        transfer_ends = Signal()   # the packet in flight is the last of its transfer
        ready = Signal()           # a packet can go out: a full one, or one the stream closed
        m.d.usb += [
            next_length.eq(Mux(zlp_owed, 0, Mux(at_last & has_tail, tail, mps))),
            transfer_ends.eq(at_last),
            ready.eq(zlp_owed | (level >= next_length) | (closed != 0)
                     | (self.cut_through & (level >= 2))),
        ]

        # The byte at `live` goes out from `byte`, a register, while the RAM already reads the
        # byte after it: a block RAM's output is slow (4 ns of a 10 ns cycle on ECP5) and LUNA's
        # transmitter and data CRC follow the payload, so the RAM output feeds only `byte`.
        # PRIME fills `byte` between the token and the first byte.
        byte = Signal(9)
        byte_last = byte[8]
        m.d.comb += [
            read.addr.eq(live + 1),
            interface.tx_pid_toggle.eq(data_toggle),
            tx.payload.eq(byte[0:8]),
            self.token.eq(tokenizer.new_token & tokenizer.is_in & for_us),
            self.nak.eq(interface.handshakes_out.nak),
            self.acked_length.eq(packet_length),
        ]

        with m.If(self.reset_toggle | clear_halt):
            m.d.usb += data_toggle.eq(0)

        acked_closed = Signal()
        with m.FSM(domain="usb"):
            with m.State("READY"):
                m.d.comb += read.addr.eq(committed)
                m.d.usb += [live.eq(committed), sent.eq(0), sent_last.eq(0)]
                with m.If(in_token_ready):
                    with m.If(self.halt):
                        m.d.comb += interface.handshakes_out.stall.eq(1)
                    with m.Elif(~ready):
                        m.d.comb += interface.handshakes_out.nak.eq(1)
                    with m.Else():
                        m.d.comb += self.packet_start.eq(1)
                        m.d.usb += [packet_length.eq(next_length),
                                    final_byte.eq(next_length == 1)]
                        with m.If(next_length == 0):
                            # LUNA's packet generator sends a ZLP for `last` without `first`.
                            m.d.comb += [tx.valid.eq(1), tx.last.eq(1)]
                            m.next = "WAIT_FOR_ACK"
                        with m.Else():
                            m.next = "PRIME"

            with m.State("PRIME"):
                m.d.usb += byte.eq(read.data)
                m.next = "SEND"

            with m.State("SEND"):
                last = final_byte | byte_last
                m.d.comb += [tx.valid.eq(1), tx.first.eq(sent == 0), tx.last.eq(last)]
                with m.If(tx.ready):
                    m.d.comb += read.addr.eq(live + 2)
                    m.d.usb += [byte.eq(read.data), sent.eq(sent + 1), live.eq(live + 1),
                                final_byte.eq(sent + 2 == packet_length)]
                    with m.If(last):
                        m.d.usb += [packet_length.eq(sent + 1), sent_last.eq(byte_last)]
                        m.next = "WAIT_FOR_ACK"

            with m.State("WAIT_FOR_ACK"):
                with m.If(interface.handshakes_in.ack):
                    m.d.comb += [self.acked.eq(1), acked_closed.eq(sent_last)]
                    m.d.usb += [committed.eq(live), data_toggle.eq(~data_toggle)]
                    self._advance_framing(m, packets, zlp_owed, packet_length, transfer_ends)
                    m.next = "READY"
                with m.Elif(tokenizer.new_token):
                    # No ACK before the next token: the host will ask for this packet again.
                    m.next = "READY"

        with m.If(wrote_last & ~acked_closed):
            m.d.usb += closed.eq(closed + 1)
        with m.Elif(acked_closed & ~wrote_last):
            m.d.usb += closed.eq(closed - 1)

        # Control requests win over traffic (the bus is idle on this endpoint meanwhile).
        with m.If(self.flush):
            m.d.usb += [written.eq(0), committed.eq(0), live.eq(0), closed.eq(0)]
        with m.If(self.flush | self.reframe):
            m.d.usb += [packets.eq(0), zlp_owed.eq(0)]
        return m

    def _advance_framing(self, m, packets, zlp_owed, packet_length, transfer_ends):
        """After an ACK: count the packet; start a new transfer (or owe a ZLP) at its end.

        A short packet ends the transfer wherever it falls, as it does for the host (USB 2.0
        §5.8.3): one the stream closed early starts the next transfer afresh."""
        full_packet = packet_length == self._max_packet_size
        with m.If(zlp_owed):
            m.d.usb += [zlp_owed.eq(0), packets.eq(0)]
        with m.Elif(transfer_ends | ~full_packet):
            m.d.usb += [packets.eq(0), zlp_owed.eq(transfer_ends & self.zlp & full_packet)]
        with m.Else():
            m.d.usb += packets.eq(packets + 1)
