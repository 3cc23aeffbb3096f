"""Transaction packets (ACK, NRDY, ERDY, STALL) of busprobe's bulk endpoints.

Upstream work-around (luna-usb 0.2.3, ``usb3/protocol/transaction.py``,
``TransactionPacketGenerator``), in this one place: LUNA's generator always advertises
``number_of_packets = 1`` in ACK and ERDY ("eventually support bursting?"), sends an NRDY when
asked for an ERDY (``send_erdy`` moves to the ``SEND_NRDY`` state), and fixes NRDY/ERDY's
direction to IN; its endpoint multiplexer also forwards only ``send_ack``/``send_stall``. The bulk
endpoints therefore never use LUNA's handshake path: they request packets here, and
:class:`BulkHandshakeGenerator` feeds the protocol layer's header arbiter beside LUNA's generator
(which keeps serving EP0, where one packet per ACK is right).
"""

import enum
from types import SimpleNamespace

from amaranth import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from luna.gateware.usb.usb3.link.header import HeaderQueue
from luna.gateware.usb.usb3.protocol.transaction import (
    ACKHeaderPacket,
    ERDYHeaderPacket,
    NRDYHeaderPacket,
    STALLHeaderPacket,
)
from usb_protocol.types.superspeed import HeaderPacketType, TransactionPacketSubtype

__all__ = ["HandshakeKind", "HANDSHAKE_REQUEST", "HandshakeRequestSignature",
           "BulkHandshakeGenerator", "registered_ack_tp"]


class HandshakeKind(enum.IntEnum):
    ACK = 0
    NRDY = 1
    ERDY = 2
    STALL = 3   # the endpoint is halted (USB 3.2 §8.12.1.4)


#: What an endpoint asks to be sent.
HANDSHAKE_REQUEST = data.StructLayout({
    "kind": HandshakeKind,
    "endpoint_number": 4,
    "direction": 1,           # 1 = IN endpoint
    "retry": 1,               # ACK: ask the host to resend from ``sequence``
    "sequence": 5,            # ACK: next expected data sequence number
    "number_of_packets": 5,   # ACK/ERDY: NumP, 0..16
    "stream_id": 16,          # ACK/ERDY: the Stream ID (0 on an endpoint without streams)
})


def HandshakeRequestSignature():
    """``valid``/``request`` from the endpoint, ``done`` (one cycle, the packet was queued) back."""
    return wiring.Signature({"valid": Out(1), "request": Out(HANDSHAKE_REQUEST), "done": In(1)})


class BulkHandshakeGenerator(wiring.Component):
    """Turns the bulk endpoints' requests into transaction header packets, one at a time.

    Attributes
    ----------
    requests: list of HandshakeRequestSignature, flipped
        One port per endpoint; a lower index wins when two ask in the same cycle. A request must
        stay valid until ``done``; its fields may change meanwhile (the packet sent has the values
        of the cycle ``done`` is high in).
    address: Signal(7), input
        Device address for the packets' DW0.
    hold: Signal(), input
        Offer no header while high: the request taken waits (:mod:`.held_handshakes`).
    defer: Signal(ports), input
        A port whose bit is high is not taken while it is; the others are, and a request
        already taken goes on (the storage device's COMMAND IU ACK during a data-in train).
    header_source: HeaderQueue
        Header packets to the protocol layer's arbiter (not part of the wiring signature).

    Parameters
    ----------
    ports: int
        Number of request ports.
    """

    def __init__(self, *, ports=2):
        super().__init__({
            "requests": In(HandshakeRequestSignature()).array(ports),
            "address": In(7),
            "hold": In(1),
            "defer": In(ports),
        })
        self.header_source = HeaderQueue()

    def elaborate(self, platform):
        m = Module()
        queue = self.header_source
        # Whose request is being offered. The header follows that request as it is until the
        # link takes it, so an ACK carries the endpoint's latest sequence and NumP.
        pending = Signal(HANDSHAKE_REQUEST)
        owner = Signal(range(len(self.requests)))
        busy = Signal()
        with m.Switch(owner):
            for index, port in enumerate(self.requests):
                with m.Case(index):
                    m.d.comb += pending.eq(port.request)

        with m.If(~busy):
            for index in reversed(range(len(self.requests))):
                with m.If(self.requests[index].valid & ~self.defer[index]):
                    m.d.ss += [owner.eq(index), busy.eq(1)]
        with m.Elif(~self.hold):
            m.d.comb += queue.valid.eq(1)
            with m.If(queue.ready):
                m.d.ss += busy.eq(0)
                for index, port in enumerate(self.requests):
                    m.d.comb += port.done.eq(owner == index)

        ack, nrdy, erdy = ACKHeaderPacket(), NRDYHeaderPacket(), ERDYHeaderPacket()
        stall = STALLHeaderPacket()
        for packet in (ack, nrdy, erdy, stall):
            m.d.comb += [
                packet.type.eq(HeaderPacketType.TRANSACTION),
                packet.device_address.eq(self.address),
                packet.endpoint_number.eq(pending.endpoint_number),
                packet.direction.eq(pending.direction),
            ]
        m.d.comb += [
            ack.subtype.eq(TransactionPacketSubtype.ACK),
            ack.retry.eq(pending.retry),
            ack.data_sequence.eq(pending.sequence),
            ack.number_of_packets.eq(pending.number_of_packets),
            ack.stream_id.eq(pending.stream_id),
            nrdy.subtype.eq(TransactionPacketSubtype.NRDY),
            erdy.subtype.eq(TransactionPacketSubtype.ERDY),
            erdy.number_of_packets.eq(pending.number_of_packets),
            stall.subtype.eq(TransactionPacketSubtype.STALL),
        ]
        with m.Switch(pending.kind):
            with m.Case(HandshakeKind.ACK):
                m.d.comb += queue.header.eq(ack)
            with m.Case(HandshakeKind.NRDY):
                m.d.comb += queue.header.eq(nrdy)
            with m.Case(HandshakeKind.ERDY):
                # LUNA's ERDYHeaderPacket has no DW2 layout; USB 3.2 (§8.5) puts the Stream ID
                # of the stream the device selects in its bits 15:0.
                m.d.comb += [queue.header.eq(erdy), queue.header.dw2[:16].eq(pending.stream_id)]
            with m.Case(HandshakeKind.STALL):
                m.d.comb += queue.header.eq(stall)
        return m


def registered_ack_tp(m, handshakes_in, domain="ss"):
    """The fields of the ACK TP LUNA's receiver announces on ``handshakes_in``, registered: an
    endpoint takes it a cycle after the decode (straight from the link's header queue, with the
    endpoint's decision behind it, the path is too long for 125 MHz). Returns them by name."""
    fields = {}
    for name in ("ack_received", "endpoint_number", "direction", "next_sequence",
                 "number_of_packets", "retry_required"):
        fields[name] = Signal.like(getattr(handshakes_in, name), name=f"ack_tp_{name}")
        m.d[domain] += fields[name].eq(getattr(handshakes_in, name))
    return SimpleNamespace(**fields)
