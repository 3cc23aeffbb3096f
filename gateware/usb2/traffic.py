"""What the USB 2.0 telemetry is fed: the endpoints' traffic strobes, the receive monitor's
drops, and the whole set of its inputs."""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb2

__all__ = ["EndpointTrafficSignature", "RxDropsSignature", "telemetry_inputs"]


class EndpointTrafficSignature(wiring.Signature):
    """Traffic strobes of one endpoint, as the endpoint drives them (all outputs of the endpoint).

    Members
    -------
    token: Signal(), strobe: a token (IN or OUT) addressed to the endpoint.
    nak: Signal(), strobe: the endpoint answered NAK.
    packet_start: Signal(), strobe: a data packet started (OUT: its token).
    acked: Signal(), strobe: a data packet was delivered and ACKed.
    acked_length: Signal(range(MAX_PACKET_SIZE + 1)): its payload length.
    """

    def __init__(self):
        super().__init__({
            "token": Out(1),
            "nak": Out(1),
            "packet_start": Out(1),
            "acked": Out(1),
            "acked_length": Out(range(usb2.MAX_PACKET_SIZE + 1)),
        })


class RxDropsSignature(wiring.Signature):
    """What :class:`~.rx_monitor.RxPacketMonitor` saw (all strobes, driven by the monitor).

    Members
    -------
    packet: a packet was received.
    bad_pid, malformed, crc_error, foreign: it was dropped, and why.
    """

    def __init__(self):
        super().__init__({name: Out(1) for name in
                          ("packet", "bad_pid", "malformed", "crc_error", "foreign")})


def telemetry_inputs():
    """The events and registers the USB 2.0 telemetry counts (wiring signature members)."""
    return {
        "clear": In(1),
        "sof": In(1),
        "ep_in": In(EndpointTrafficSignature()),
        "ep_out": In(EndpointTrafficSignature()),
        "ping": In(1),
        "nyet": In(1),
        "rx": In(RxDropsSignature()),
        "out_duplicate": In(1),
        "pattern_errors": In(32),
        "first_error_offset": In(32),
    }
