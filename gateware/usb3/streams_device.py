"""The busprobe SuperSpeed probe with bulk streams on its IN and OUT endpoints."""

from busprobe.protocol import usb3
from busprobe.protocol.streams import MAX_STREAMS, MAX_STREAMS_EXPONENT

from .descriptors import build_descriptors
from .device import Usb3ProbeDevice
from .stream_in_endpoint import StreamInEndpoint
from .stream_out_endpoint import StreamOutEndpoint

__all__ = ["Usb3StreamsDevice"]


class Usb3StreamsDevice(Usb3ProbeDevice):
    """:class:`.device.Usb3ProbeDevice` whose bulk endpoints move data on bulk streams.

    The same pattern source, checker, vendor requests and telemetry; the endpoints are
    :class:`.stream_in_endpoint.StreamInEndpoint` and
    :class:`.stream_out_endpoint.StreamOutEndpoint` (USB 3.2 §8.12.1.4), their companions
    advertise MaxStreams :data:`~busprobe.protocol.streams.MAX_STREAMS_EXPONENT`, and the
    stream protocol's own NRDY/ERDY go through two more ports of the handshake generator. The
    IN endpoint's Stream ID goes into every data packet header the device sends; the host's
    ACK TPs' Stream ID comes from the protocol layer. ``sim:usb3?design=streams``.
    """

    def _descriptors(self):
        return build_descriptors(max_streams_exponent=MAX_STREAMS_EXPONENT)

    def _bulk_endpoints(self):
        return (StreamInEndpoint(endpoint_number=usb3.EP_IN & 0xF, slots=usb3.MAX_BURST_PACKETS,
                                 max_streams=MAX_STREAMS),
                StreamOutEndpoint(endpoint_number=usb3.EP_OUT & 0xF,
                                  slots=usb3.OUT_BUFFER_PACKETS, max_streams=MAX_STREAMS))

    def _more_handshake_requests(self, endpoint_in, endpoint_out):
        return [endpoint_out.control_handshake, endpoint_in.control_handshake]

    def elaborate(self, platform):
        m = super().elaborate(platform)
        core, endpoint_in, endpoint_out = self.core, self.endpoint_in, self.endpoint_out
        configured = core.configuration != 0
        m.d.comb += [
            core.stream_id.eq(endpoint_in.stream_id),
            endpoint_in.ack_stream_id.eq(core.ack_stream_id),
            endpoint_in.enabled.eq(configured),
            endpoint_out.enabled.eq(configured),
        ]
        return m
