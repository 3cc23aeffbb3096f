"""Always-ready bulk OUT endpoint: LUNA's stream OUT endpoint, room for back-to-back packets."""

from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb2
from luna.gateware.usb.usb2.endpoint import EndpointInterface
from luna.gateware.usb.usb2.endpoints.stream import USBStreamOutEndpoint

__all__ = ["SinkOutEndpoint"]


class SinkOutEndpoint(wiring.Component):
    """Bulk OUT endpoint that ACKs back-to-back packets and hands their bytes on at line rate.

    Wraps LUNA's :class:`USBStreamOutEndpoint` with a buffer of ``buffer_packets`` full packets
    (LUNA's default of 2×MPS−1 bytes NAKs the second of two back-to-back packets). The buffer is
    drained one byte per clock — as fast as a 60 MHz ULPI link can fill it — so it never holds more
    than about one packet and no OUT or PING is NAKed.

    The wrapper sits between the device and the LUNA endpoint so it can reset the data toggle
    (LUNA's endpoint only does so on CLEAR_FEATURE(ENDPOINT_HALT); the spec also requires it after
    a bus reset and SET_CONFIGURATION) and watch the traffic for telemetry.

    Attributes
    ----------
    reset_toggle: Signal(), input
        Strobe: expect DATA0 next (bus reset, SET_CONFIGURATION).
    stream: stream.Signature(8, always_ready=True), output
        Payload bytes of the packets received and ACKed, in order.
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
    stream: Out(stream.Signature(8, always_ready=True))
    token: Out(1)
    ping: Out(1)
    nak: Out(1)
    nyet: Out(1)
    acked: Out(1)
    acked_length: Out(range(usb2.MAX_PACKET_SIZE + 1))

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

        m.d.comb += [
            outer.tokenizer.connect(inner.tokenizer),
            outer.rx.connect(inner.rx),
            inner.rx_complete.eq(outer.rx_complete),
            inner.rx_ready_for_response.eq(outer.rx_ready_for_response),
            inner.rx_invalid.eq(outer.rx_invalid),
            inner.rx_pid_toggle.eq(outer.rx_pid_toggle),
            inner.handshakes_out.connect(outer.handshakes_out),

            self.stream.valid.eq(endpoint.stream.valid),
            self.stream.payload.eq(endpoint.stream.payload),
            endpoint.stream.ready.eq(1),
        ]

        # Our toggle reset reaches LUNA's endpoint as the CLEAR_FEATURE(ENDPOINT_HALT) it obeys.
        with m.If(self.reset_toggle):
            m.d.comb += [
                inner.clear_endpoint_halt_in.enable.eq(1),
                inner.clear_endpoint_halt_in.direction.eq(0),
                inner.clear_endpoint_halt_in.number.eq(self._endpoint_number),
            ]
        with m.Else():
            m.d.comb += inner.clear_endpoint_halt_in.eq(outer.clear_endpoint_halt_in)

        self._add_traffic_taps(m)
        return m

    def _add_traffic_taps(self, m):
        """Telemetry strobes; mirrors the endpoint's data toggle to tell new data from retries."""
        outer = self.interface
        tokenizer = outer.tokenizer
        for_us = tokenizer.endpoint == self._endpoint_number

        length = Signal(range(self._max_packet_size + 1))
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
            self.acked_length.eq(length),
        ]

        with m.If(tokenizer.new_token):
            m.d.usb += length.eq(0)
        with m.Elif(tokenizer.is_out & for_us & outer.rx.valid & outer.rx.next):
            m.d.usb += length.eq(length + 1)

        with m.If(self.reset_toggle | clear_halt):
            m.d.usb += expected_toggle.eq(0)
        with m.Elif(self.acked):
            m.d.usb += expected_toggle.eq(~expected_toggle)
