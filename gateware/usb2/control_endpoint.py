"""LUNA's control endpoint, shown only the tokens of endpoint 0."""

from amaranth import Elaboratable, Module
from luna.gateware.usb.usb2.endpoint import EndpointInterface

__all__ = ["Endpoint0Guard"]


class Endpoint0Guard(Elaboratable):
    """Sits between ``USBDevice`` and LUNA's ``USBControlEndpoint``; passes everything through
    except tokens for other endpoints.

    Upstream (luna-usb 0.2.3): ``USBSetupDecoder`` matches a SETUP token by its PID alone and
    ACKs the 8 bytes that follow, whatever the token's endpoint, so a SETUP to an endpoint the
    device does not have was answered (a device must not answer tokens for endpoints it lacks;
    the hostile-bus test in ``sim/usb2/hostile.py`` found it). Here a token for another
    endpoint reaches the control endpoint without its ``new_token``/``ready_for_response``
    strobes and with PID 0. (Host ACKs for other endpoints still reach it, as in LUNA: its
    handlers here only take an ACK right after sending, which the interleaved-control tests in
    ``sim/usb2/tests/usb2_cocotb.py`` check.)

    Attributes
    ----------
    interface: EndpointInterface
        Faces ``USBDevice`` (pass this object to ``USBDevice.add_endpoint``).

    Parameters
    ----------
    control: USBControlEndpoint
        The endpoint guarded; the device gets this guard in its place
        (``usb.add_endpoint(Endpoint0Guard(control))``).
    """

    def __init__(self, control):
        self.control = control
        self.interface = EndpointInterface()

    def elaborate(self, platform):
        m = Module()
        m.submodules.control = self.control
        outer, inner = self.interface, self.control.interface
        tokenizer = outer.tokenizer
        ours = tokenizer.endpoint == 0

        # Device -> endpoint.
        m.d.comb += [
            inner.data_crc.crc.eq(outer.data_crc.crc),
            inner.timer.tx_allowed.eq(outer.timer.tx_allowed),
            inner.timer.tx_timeout.eq(outer.timer.tx_timeout),
            inner.timer.rx_timeout.eq(outer.timer.rx_timeout),
            outer.handshakes_in.connect(inner.handshakes_in),
            outer.tokenizer.connect(inner.tokenizer),
            inner.clear_endpoint_halt_in.eq(outer.clear_endpoint_halt_in),
            outer.rx.connect(inner.rx),
            inner.rx_complete.eq(outer.rx_complete),
            inner.rx_ready_for_response.eq(outer.rx_ready_for_response),
            inner.rx_invalid.eq(outer.rx_invalid),
            inner.rx_pid_toggle.eq(outer.rx_pid_toggle),
            inner.speed.eq(outer.speed),
            inner.active_config.eq(outer.active_config),
            inner.active_address.eq(outer.active_address),
        ]
        # The guard: later assignments take precedence over the pass-through above.
        with m.If(~ours):
            m.d.comb += [
                inner.tokenizer.pid.eq(0),
                inner.tokenizer.new_token.eq(0),
                inner.tokenizer.ready_for_response.eq(0),
            ]

        # Endpoint -> device.
        m.d.comb += [
            outer.address_changed.eq(inner.address_changed),
            outer.new_address.eq(inner.new_address),
            outer.config_changed.eq(inner.config_changed),
            outer.new_config.eq(inner.new_config),
            outer.tx.stream_eq(inner.tx),
            outer.tx_pid_toggle.eq(inner.tx_pid_toggle),
            outer.handshakes_out.ack.eq(inner.handshakes_out.ack),
            outer.handshakes_out.nak.eq(inner.handshakes_out.nak),
            outer.handshakes_out.stall.eq(inner.handshakes_out.stall),
            outer.data_crc.start.eq(inner.data_crc.start),
            outer.timer.start.eq(inner.timer.start),
            outer.clear_endpoint_halt_out.eq(inner.clear_endpoint_halt_out),
        ]
        return m
