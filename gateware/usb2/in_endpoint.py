"""Always-ready bulk IN endpoint streaming a pattern."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb2
from luna.gateware.usb.usb2.endpoint import EndpointInterface

from ..common.pattern import (
    PATTERN_SHAPE,
    PATTERN_START,
    PatternPosition,
    next_position,
    pattern_byte,
)

__all__ = ["PatternInEndpoint"]


class PatternInEndpoint(wiring.Component):
    """Bulk IN endpoint that answers every IN token with data: never NAKs.

    The data is a pattern, a pure function of its stream position, so this endpoint double-buffers
    *positions* instead of bytes: ``committed`` is the :data:`PatternPosition` of the first byte
    not yet ACKed, ``live`` the position of the byte on the wire. On an IN token a packet is sent
    from ``committed``; the host's ACK moves ``committed`` to ``live`` (the next packet is ready
    that very cycle); a new token without an ACK resends the same packet with the same data toggle,
    so the pattern never advances past unacknowledged data. The two 97-bit positions replace two
    512-byte buffers, and a packet's length is chosen when it is sent, so SET_IN_TRANSFER takes
    effect at the next packet with the stream continuing exactly where it was.

    Transfer framing: with ``transfer_length`` N > 0 every transfer is N bytes; its last packet is
    short, or, when N is a multiple of the packet size and ``zlp`` is set, followed by a ZLP.
    N = 0 streams full packets.

    Attributes
    ----------
    pattern: Signal(PATTERN_SHAPE), input
        Pattern to stream.
    restart: Signal(), input
        Strobe: start over at byte 0 of the pattern and of a transfer (SET_PATTERN).
    reframe: Signal(), input
        Strobe: a new transfer starts at the next packet; the stream continues (SET_IN_TRANSFER).
    transfer_length: Signal(31), input
        Transfer length in bytes, 0 for endless.
    zlp: Signal(), input
        End transfers whose length is a multiple of the packet size with a ZLP.
    reset_toggle: Signal(), input
        Strobe: the next data packet is DATA0 (bus reset, SET_CONFIGURATION).
    token: Signal(), output
        Strobe: an IN token addressed to this endpoint arrived.
    nak: Signal(), output
        Strobe: this endpoint answered NAK. It has no path that does; the strobe is wired to the
        handshake output so telemetry shows that rather than assumes it.
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
    """

    pattern: In(PATTERN_SHAPE)
    restart: In(1)
    reframe: In(1)
    transfer_length: In(31)
    zlp: In(1)
    reset_toggle: In(1)
    token: Out(1)
    nak: Out(1)
    packet_start: Out(1)
    acked: Out(1)
    acked_length: Out(range(usb2.MAX_PACKET_SIZE + 1))

    def __init__(self, *, endpoint_number=usb2.EP_IN & 0x7F,
                 max_packet_size=usb2.MAX_PACKET_SIZE):
        self._endpoint_number = endpoint_number
        self._max_packet_size = max_packet_size
        super().__init__()
        self.interface = EndpointInterface()

    def elaborate(self, platform):
        m = Module()
        mps = self._max_packet_size
        interface = self.interface
        tokenizer, tx = interface.tokenizer, interface.tx

        committed = Signal(PatternPosition, init=PATTERN_START)
        live = Signal(PatternPosition, init=PATTERN_START)

        # Framing state, committed on ACK like the pattern position.
        transfer_position = Signal(31)   # bytes of the current transfer already ACKed
        zlp_owed = Signal()              # the transfer ended on a full packet and wants a ZLP
        packet_length = Signal(range(mps + 1))
        sent = Signal(range(mps + 1))
        data_toggle = Signal()

        for_us = tokenizer.endpoint == self._endpoint_number
        in_token_ready = for_us & tokenizer.is_in & tokenizer.ready_for_response
        clear_halt = (interface.clear_endpoint_halt_in.enable
                      & interface.clear_endpoint_halt_in.direction
                      & (interface.clear_endpoint_halt_in.number == self._endpoint_number))

        # Framing arithmetic is pipelined two registers deep: its inputs change only on an ACK or
        # a control request, and the next IN token is always many cycles later (token packet +
        # inter-packet delay), so the registered values are settled when they are used. This keeps
        # the 31-bit subtract/compare chain out of the token-to-response path (ECP5 timing).
        remaining = Signal(31)
        next_length = Signal(range(mps + 1))
        transfer_ends = Signal()  # the packet in flight is the last of its transfer
        m.d.usb += [
            remaining.eq(self.transfer_length - transfer_position),
            next_length.eq(Mux(zlp_owed, 0, Mux((self.transfer_length == 0) | (remaining >= mps),
                                                mps, remaining))),
            transfer_ends.eq((self.transfer_length != 0) & (remaining <= packet_length)),
        ]

        m.d.comb += [
            interface.tx_pid_toggle.eq(data_toggle),
            tx.payload.eq(pattern_byte(live, self.pattern)),
            self.token.eq(tokenizer.new_token & tokenizer.is_in & for_us),
            self.nak.eq(interface.handshakes_out.nak),
            self.acked_length.eq(packet_length),
        ]

        with m.If(self.reset_toggle | clear_halt):
            m.d.usb += data_toggle.eq(0)

        with m.FSM(domain="usb"):
            with m.State("READY"):
                m.d.usb += [live.eq(committed), sent.eq(0)]
                with m.If(in_token_ready):
                    m.d.comb += self.packet_start.eq(1)
                    m.d.usb += packet_length.eq(next_length)
                    with m.If(next_length == 0):
                        # LUNA's packet generator sends a ZLP for `last` without `first`.
                        m.d.comb += [tx.valid.eq(1), tx.last.eq(1)]
                        m.next = "WAIT_FOR_ACK"
                    with m.Else():
                        m.next = "SEND"

            with m.State("SEND"):
                last = sent == packet_length - 1
                m.d.comb += [tx.valid.eq(1), tx.first.eq(sent == 0), tx.last.eq(last)]
                with m.If(tx.ready):
                    m.d.usb += [sent.eq(sent + 1), *next_position(live, live)]
                    with m.If(last):
                        m.next = "WAIT_FOR_ACK"

            with m.State("WAIT_FOR_ACK"):
                with m.If(interface.handshakes_in.ack):
                    m.d.comb += self.acked.eq(1)
                    m.d.usb += [committed.eq(live), data_toggle.eq(~data_toggle)]
                    self._advance_framing(m, transfer_position, zlp_owed, packet_length,
                                          transfer_ends)
                    m.next = "READY"
                with m.Elif(tokenizer.new_token):
                    # No ACK before the next token: the host will ask for this packet again.
                    m.next = "READY"

        # Control requests win over traffic (the bus is idle on this endpoint meanwhile).
        with m.If(self.restart):
            start = PatternPosition.const(PATTERN_START)
            m.d.usb += [committed.eq(start), live.eq(start)]
        with m.If(self.restart | self.reframe):
            m.d.usb += [transfer_position.eq(0), zlp_owed.eq(0)]
        return m

    def _advance_framing(self, m, transfer_position, zlp_owed, packet_length, transfer_ends):
        """After an ACK: move through the transfer; start a new one (or owe a ZLP) at its end."""
        mps = self._max_packet_size
        position = transfer_position + packet_length
        with m.If(zlp_owed):
            m.d.usb += [zlp_owed.eq(0), transfer_position.eq(0)]
        with m.Elif(transfer_ends):
            m.d.usb += transfer_position.eq(0)
            with m.If(self.zlp & (packet_length == mps)):
                m.d.usb += zlp_owed.eq(1)
        with m.Else():
            m.d.usb += transfer_position.eq(position)
