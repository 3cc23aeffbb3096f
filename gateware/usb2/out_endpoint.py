"""Always-ready bulk OUT endpoint: LUNA's stream OUT endpoint, room for back-to-back packets."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb2
from luna.gateware.usb.usb2.endpoint import EndpointInterface
from luna.gateware.usb.usb2.endpoints.stream import USBStreamOutEndpoint

from ..common.packet_stream import PacketStreamSignature

__all__ = ["StreamOutEndpoint"]


class StreamOutEndpoint(wiring.Component):
    """Bulk OUT endpoint that ACKs back-to-back packets and hands them on as a packet stream.

    Wraps LUNA's :class:`USBStreamOutEndpoint` with a block-RAM buffer of ``buffer_packets``
    full packets (LUNA's default of 2×MPS−1 bytes NAKs the second of two back-to-back packets).
    A sink that takes one byte per clock — as fast as a 60 MHz ULPI link fills the buffer — keeps
    it under about one packet, so no OUT or PING is NAKed; a slower sink makes the endpoint NAK,
    and no byte is lost.

    The wrapper sits between the device and the LUNA endpoint so it can reset the data toggle
    (LUNA's endpoint only does so on CLEAR_FEATURE(ENDPOINT_HALT); the spec also requires it after
    a bus reset and SET_CONFIGURATION) and watch the traffic for telemetry.

    Attributes
    ----------
    reset_toggle: Signal(), input
        Strobe: expect DATA0 next (bus reset, SET_CONFIGURATION).
    halt: Signal(), input
        The endpoint is halted (SET_FEATURE(ENDPOINT_HALT)): every OUT and PING is answered
        with STALL and its data dropped (the toggle restarts on CLEAR_FEATURE(ENDPOINT_HALT)).
    flush: Signal(), input
        Strobe: drop every packet received and not yet handed on (SET_DATA_MODE, SET_PATTERN).
        LUNA's FIFO has no flush: it is read out and dropped, and OUT and PING are NAKed until
        it is empty (at most four packets, 2,048 cycles), so no packet the host sends after
        the request is lost.
    stream: PacketStreamSignature(1), output
        The packets received and ACKed, in order, ``last`` on each one's final byte (see
        :mod:`~gateware.common.packet_stream`).
    token: Signal(), output
        Strobe: an OUT token addressed to this endpoint arrived.
    ping: Signal(), output
        Strobe: a PING token addressed to this endpoint arrived.
    nak: Signal(), output
        Strobe: this endpoint answered an OUT or PING with NAK.
    nyet: Signal(), output
        Strobe: this endpoint answered an OUT with NYET (LUNA's handshake generator has no NYET, so
        this endpoint never sends one; the strobe makes that visible rather than assumed).
    acked: Signal(), output
        Strobe: a data packet was accepted (ACKed with the expected data toggle); its length is
        ``acked_length``. Duplicates (toggle mismatch, ACKed and dropped) are not counted.
    acked_length: Signal(range(max_packet_size + 1)), output
        Payload length of the packet accepted.
    duplicate: Signal(), output
        Strobe: a data packet arrived with the toggle of the one before (its ACK was lost, or
        the host is wrong): ACKed, and dropped (§8.6.3).
    interface: EndpointInterface
        Connection to LUNA's ``USBDevice`` (not part of the wiring signature).

    Parameters
    ----------
    endpoint_number: int
        Endpoint number.
    max_packet_size: int
        wMaxPacketSize of the endpoint.
    buffer_packets: int
        Buffer size in full packets (at least 2).
    """

    reset_toggle: In(1)
    halt: In(1)
    flush: In(1)
    stream: Out(PacketStreamSignature(1))
    token: Out(1)
    ping: Out(1)
    nak: Out(1)
    nyet: Out(1)
    acked: Out(1)
    acked_length: Out(range(usb2.MAX_PACKET_SIZE + 1))
    duplicate: Out(1)

    def __init__(self, *, endpoint_number=usb2.EP_OUT, max_packet_size=usb2.MAX_PACKET_SIZE,
                 buffer_packets=4):
        if buffer_packets < 2:
            raise ValueError("the OUT buffer must hold at least two full packets")
        self._endpoint_number = endpoint_number
        self._max_packet_size = max_packet_size
        self._buffer_size = buffer_packets * max_packet_size
        super().__init__()
        self.interface = EndpointInterface()

    def elaborate(self, platform):
        m = Module()
        outer = self.interface
        m.submodules.endpoint = endpoint = USBStreamOutEndpoint(
            endpoint_number=self._endpoint_number, max_packet_size=self._max_packet_size,
            buffer_size=self._buffer_size)
        inner = endpoint.interface

        draining = Signal()
        refused = self.halt | draining
        reject, rejected, received = self._unwanted_data(m, refused=refused)
        tokenizer = outer.tokenizer
        for_us = tokenizer.endpoint == self._endpoint_number
        # A halted endpoint STALLs OUT data and PINGs (§9.4.5), one being drained NAKs them;
        # LUNA's endpoint has neither, so it sees the data as rejected (dropped, unanswered)
        # and its own answers are held back.
        answer_due = for_us & ((tokenizer.is_out & outer.rx_ready_for_response)
                               | (tokenizer.is_ping & tokenizer.ready_for_response))
        # Our answer goes out a cycle after LUNA's would (its handshake generator takes the
        # strobe when it comes), so nothing is added in front of it on the token's path.
        refusing = Signal()
        m.d.usb += refusing.eq(answer_due & refused)
        m.d.comb += [
            outer.tokenizer.connect(inner.tokenizer),
            outer.rx.connect(inner.rx),
            # A data packet LUNA would wrongly keep reaches it as one with a bad CRC: discarded,
            # never answered (see _unwanted_data).
            inner.rx_complete.eq(outer.rx_complete & ~reject),
            inner.rx_ready_for_response.eq(outer.rx_ready_for_response & ~rejected),
            inner.rx_invalid.eq(outer.rx_invalid | (outer.rx_complete & reject)),
            inner.rx_pid_toggle.eq(outer.rx_pid_toggle),
            outer.handshakes_out.ack.eq(inner.handshakes_out.ack & ~refused),
            outer.handshakes_out.nak.eq((inner.handshakes_out.nak & ~refused)
                                        | (refusing & ~self.halt)),
            outer.handshakes_out.nyet.eq(inner.handshakes_out.nyet),
            outer.handshakes_out.stall.eq(refusing & self.halt),

            self.stream.valid.eq(endpoint.stream.valid & ~draining),
            self.stream.p.data.eq(endpoint.stream.payload),
            endpoint.stream.ready.eq(self.stream.ready | draining),
        ]
        with m.If(self.flush):
            m.d.usb += draining.eq(1)
        with m.Elif(~endpoint.stream.valid):
            m.d.usb += draining.eq(0)
        # LUNA marks only the end of a short packet; every other packet is exactly full.
        in_packet = Signal(range(self._max_packet_size))
        packet_end = endpoint.stream.last | (in_packet == self._max_packet_size - 1)
        m.d.comb += self.stream.p.last.eq(packet_end)
        with m.If(endpoint.stream.valid & endpoint.stream.ready):
            m.d.usb += in_packet.eq(0)
            with m.If(~packet_end):
                m.d.usb += in_packet.eq(in_packet + 1)

        # Our toggle reset reaches LUNA's endpoint as the CLEAR_FEATURE(ENDPOINT_HALT) it obeys.
        with m.If(self.reset_toggle):
            m.d.comb += [
                inner.clear_endpoint_halt_in.enable.eq(1),
                inner.clear_endpoint_halt_in.direction.eq(0),
                inner.clear_endpoint_halt_in.number.eq(self._endpoint_number),
            ]
        with m.Else():
            m.d.comb += inner.clear_endpoint_halt_in.eq(outer.clear_endpoint_halt_in)

        self._add_traffic_taps(m, received)
        return m

    def _unwanted_data(self, m, *, refused):
        """``(reject, rejected, received)``: the data packet ending now must be dropped; the last
        one was; the bytes of the data packet since the last token (up to one past
        wMaxPacketSize). Everything is dropped while ``refused`` (halted, or draining).

        Upstream (luna-usb 0.2.3), two gaps, both found by ``sim/usb2/hostile.py``:

        - ``USBStreamOutEndpoint`` keeps and ACKs a data packet of any length, so babble (more
          than wMaxPacketSize bytes, §8.4.4) would enter the stream;
        - it takes any data packet while the last token it saw was an OUT for it, so a second
          data packet, or one after a token for another device (the token detector drops
          those and keeps the old token), is taken as the next packet of the stream
          (https://github.com/greatscottgadgets/luna/issues/135). A data packet belongs only
          to the OUT token right before it (§8.5).
        """
        tokenizer, interface = self.interface.tokenizer, self.interface
        for_us = tokenizer.is_out & (tokenizer.endpoint == self._endpoint_number)
        received = Signal(range(self._max_packet_size + 2))
        armed = Signal()  # an OUT token for us came, and no data packet yet
        rejected = Signal()
        packet_end = interface.rx_complete | interface.rx_invalid
        with m.If(tokenizer.new_token):
            m.d.usb += [received.eq(0), armed.eq(for_us), rejected.eq(0)]
        with m.Else():
            with m.If(interface.rx.valid & interface.rx.next
                      & (received <= self._max_packet_size)):
                m.d.usb += received.eq(received + 1)
            with m.If(packet_end):
                m.d.usb += armed.eq(0)
        reject = (received > self._max_packet_size) | ~armed | refused
        with m.If(interface.rx_complete & reject):
            m.d.usb += rejected.eq(1)
        return reject, rejected | (received > self._max_packet_size), received

    def _add_traffic_taps(self, m, received):
        """Telemetry strobes; mirrors the endpoint's data toggle to tell new data from retries.

        An ACKed packet's length is ``received``: LUNA ACKs only a packet that was not
        rejected, so it followed an OUT token for this endpoint and was not babble."""
        outer = self.interface
        tokenizer = outer.tokenizer
        for_us = tokenizer.endpoint == self._endpoint_number

        expected_toggle = Signal()
        clear_halt = (outer.clear_endpoint_halt_in.enable
                      & ~outer.clear_endpoint_halt_in.direction
                      & (outer.clear_endpoint_halt_in.number == self._endpoint_number))

        data_response = tokenizer.is_out & for_us & outer.rx_ready_for_response
        m.d.comb += [
            self.token.eq(tokenizer.new_token & tokenizer.is_out & for_us),
            self.ping.eq(tokenizer.new_token & tokenizer.is_ping & for_us),
            self.nak.eq(outer.handshakes_out.nak),
            self.nyet.eq(outer.handshakes_out.nyet),
            self.acked.eq(data_response & outer.handshakes_out.ack
                          & (outer.rx_pid_toggle[0] == expected_toggle)),
            self.acked_length.eq(received),
            self.duplicate.eq(data_response & outer.handshakes_out.ack
                              & (outer.rx_pid_toggle[0] != expected_toggle)),
        ]

        with m.If(self.reset_toggle | clear_halt):
            m.d.usb += expected_toggle.eq(0)
        with m.Elif(self.acked):
            m.d.usb += expected_toggle.eq(~expected_toggle)
