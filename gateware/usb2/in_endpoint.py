"""Always-ready bulk IN endpoint streaming a pattern."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb2
from luna.gateware.usb.usb2.endpoint import EndpointInterface
from luna.gateware.usb.usb2.transfer import USBInTransferManager

from ..common.pattern import PATTERN_SHAPE, PatternByteSource

__all__ = ["PatternInEndpoint"]


class PatternInEndpoint(wiring.Component):
    """Bulk IN endpoint that always has a packet of the selected pattern ready.

    A :class:`~busprobe.gateware.common.pattern.PatternByteSource` fills LUNA's double-buffered
    :class:`USBInTransferManager` (two packet buffers: one is sent and kept for a retry until it
    is ACKed while the other fills at one byte per clock). Filling 512 bytes takes 512 cycles,
    less than one IN token + 512-byte data packet + handshake on the wire, so in steady state the
    next packet is complete when the previous one is ACKed and no IN token is NAKed. A packet that
    is not ACKed is resent from its buffer: the pattern never advances past unacknowledged data.

    Transfer framing (``SET_IN_TRANSFER``): with ``transfer_length`` N > 0 the stream's ``last``
    marks every N-th byte, so each transfer ends with a short packet, or, when N is a multiple of
    the packet size and ``zlp`` is set, with a zero-length packet; N = 0 streams full packets.

    Attributes
    ----------
    pattern: Signal(PATTERN_SHAPE), input
        Pattern to stream.
    restart: Signal(), input
        Strobe: drop buffered data and start over at byte 0 of the pattern and of a transfer.
    transfer_length: Signal(31), input
        Transfer length in bytes, 0 for endless.
    zlp: Signal(), input
        End transfers whose length is a multiple of the packet size with a ZLP.
    reset_toggle: Signal(), input
        Strobe: the next data packet is DATA0 (bus reset, SET_CONFIGURATION, CLEAR_FEATURE(HALT)).
    token: Signal(), output
        Strobe: an IN token addressed to this endpoint arrived.
    nak: Signal(), output
        Strobe: this endpoint answered an IN token with NAK.
    packet_start: Signal(), output
        Strobe: this endpoint started sending a data packet (including a ZLP or a retry).
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
        interface = self.interface

        m.submodules.source = source = PatternByteSource(domain="usb")
        m.submodules.manager = manager = USBInTransferManager(self._max_packet_size)

        # Byte position inside the current transfer, for the `last` marker.
        transfer_position = Signal(31)
        end_of_transfer = ((self.transfer_length != 0)
                           & (transfer_position == self.transfer_length - 1))
        byte_taken = manager.transfer_stream.ready & ~self.restart

        clear_halt = (interface.clear_endpoint_halt_in.enable
                      & interface.clear_endpoint_halt_in.direction
                      & (interface.clear_endpoint_halt_in.number == self._endpoint_number))

        m.d.comb += [
            source.pattern.eq(self.pattern),
            source.restart.eq(self.restart),
            source.stream.ready.eq(byte_taken),

            # Nothing enters the buffers in the cycle they are discarded.
            manager.transfer_stream.valid.eq(~self.restart),
            manager.transfer_stream.payload.eq(source.stream.payload),
            manager.transfer_stream.last.eq(end_of_transfer),
            manager.discard.eq(self.restart),
            manager.generate_zlps.eq(self.zlp),
            manager.start_with_data1.eq(0),
            manager.reset_sequence.eq(self.reset_toggle | clear_halt),
            manager.active.eq(interface.tokenizer.endpoint == self._endpoint_number),

            interface.tokenizer.connect(manager.tokenizer),
            interface.handshakes_in.connect(manager.handshakes_in),
            manager.handshakes_out.connect(interface.handshakes_out),
            interface.tx.stream_eq(manager.packet_stream),
            interface.tx_pid_toggle.eq(manager.data_pid),
        ]

        self._add_traffic_taps(m, manager)

        with m.If(self.restart):
            m.d.usb += transfer_position.eq(0)
        with m.Elif(byte_taken):
            m.d.usb += transfer_position.eq(transfer_position + 1)
            with m.If(end_of_transfer):
                m.d.usb += transfer_position.eq(0)
        return m

    def _add_traffic_taps(self, m, manager):
        """Telemetry strobes, from what this endpoint puts on the bus and hears back."""
        tokenizer, tx = self.interface.tokenizer, self.interface.tx

        in_packet = Signal()  # between the first and the last byte of a data packet
        length = Signal(range(self._max_packet_size + 1))
        awaiting_ack = Signal()
        pending_length = Signal.like(length)

        data_start = tx.valid & tx.first & ~in_packet
        # LUNA marks a ZLP as `last` without `first` outside a packet.
        zlp_start = tx.valid & tx.last & ~tx.first & ~in_packet
        byte_sent = tx.valid & tx.ready

        m.d.comb += [
            self.token.eq(tokenizer.new_token & tokenizer.is_in
                          & (tokenizer.endpoint == self._endpoint_number)),
            self.nak.eq(manager.handshakes_out.nak),
            self.packet_start.eq(data_start | zlp_start),
            self.acked.eq(awaiting_ack & self.interface.handshakes_in.ack),
            self.acked_length.eq(pending_length),
        ]

        with m.If(data_start):
            m.d.usb += [in_packet.eq(1), length.eq(0)]
        with m.If(byte_sent):
            m.d.usb += length.eq(Mux(data_start, 1, length + 1))
            with m.If(tx.last):
                m.d.usb += [in_packet.eq(0), awaiting_ack.eq(1),
                            pending_length.eq(Mux(data_start, 1, length + 1))]
        with m.Elif(zlp_start):
            m.d.usb += [awaiting_ack.eq(1), pending_length.eq(0)]
        with m.Elif(self.acked | tokenizer.new_token):
            # A new token without an ACK first means the packet will be retried.
            m.d.usb += awaiting_ack.eq(0)
