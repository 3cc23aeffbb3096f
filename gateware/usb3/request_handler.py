"""Vendor request handler of the SuperSpeed device: :class:`busprobe.protocol.usb3.Request`."""

from types import SimpleNamespace

from amaranth import Array, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb3
from busprobe.protocol.patterns import Pattern
from luna.gateware.usb.usb3.application.request import SuperSpeedRequestHandlerInterface
from luna.gateware.utils import falling_edge_detected
from usb_protocol.types import USBRequestType

from ..common.pattern import PATTERN_SHAPE
from ..common.words import little_endian_words
from .skid_buffer import RegisteredReadyBuffer

__all__ = ["SuperSpeedProbeRequestHandler", "INFO_WORDS"]

#: The GET_INFO answer as little-endian words, padded to a whole word (the probe's: no
#: features; a personality's handler names its own).
INFO_WORDS = tuple(little_endian_words(usb3.pack_info()))
_WORDS = max(usb3.TELEMETRY_WORDS, len(INFO_WORDS))
_IN_REQUESTS = {usb3.Request.GET_INFO: usb3.INFO_SIZE,
                usb3.Request.GET_TELEMETRY: usb3.TELEMETRY_SIZE}


class SuperSpeedProbeRequestHandler(wiring.Component):
    """Answers the busprobe vendor requests on EP0 at SuperSpeed; stalls any other non-standard
    request.

    GET_INFO and GET_TELEMETRY answer in one data packet (both are shorter than the 512-byte
    control packet); GET_TELEMETRY snapshots every counter when the SETUP packet arrives, so the
    block is from one instant. A retried data stage (the host's ACK asks again) resends the same
    snapshot. The OUT requests take effect when the host sends the STATUS TP, as LUNA's standard
    SET_ADDRESS does. Class requests are stalled here; a subclass takes some with
    :meth:`_class` (answered from a word of its own, or acted on at the STATUS TP by
    :meth:`_class_status`).

    Attributes
    ----------
    telemetry: ArrayLayout(32, TELEMETRY_WORDS), input
        Live telemetry words, in protocol order.
    clear_telemetry: Signal(), output
        Strobe: CLEAR_TELEMETRY.
    set_pattern: Signal(), output
        Strobe: SET_PATTERN (and SET_DATA_MODE PATTERN, which restarts both streams the same
        way); ``pattern`` holds the new pattern from the next cycle on.
    pattern: Signal(PATTERN_SHAPE), output
        The selected pattern.
    data_mode: Signal(DataMode), output
        The data mode SET_DATA_MODE selected (PATTERN after reset), changed with a
        ``set_pattern`` strobe.
    set_in_transfer: Signal(), output
        Strobe: SET_IN_TRANSFER; ``in_transfer_length``/``in_zlp`` hold the new values from the
        next cycle on.
    in_transfer_length: Signal(31), output
        IN transfer length in bytes (0 = endless).
    in_zlp: Signal(), output
        End IN transfers that are a multiple of 1024 bytes with a ZLP.
    interface: SuperSpeedRequestHandlerInterface
        LUNA's connection to the SuperSpeed control endpoint (not part of the wiring signature).

    Parameters
    ----------
    features: Feature
        What GET_INFO names (:func:`busprobe.protocol.usb3.pack_info`).
    """

    telemetry: In(data.ArrayLayout(32, usb3.TELEMETRY_WORDS))
    clear_telemetry: Out(1)
    set_pattern: Out(1)
    pattern: Out(PATTERN_SHAPE)
    data_mode: Out(usb3.DataMode)
    set_in_transfer: Out(1)
    in_transfer_length: Out(31)
    in_zlp: Out(1)

    def __init__(self, *, features=usb3.NO_FEATURES):
        super().__init__()
        self.interface = SuperSpeedRequestHandlerInterface()
        self._info_words = tuple(little_endian_words(usb3.pack_info(features)))

    def _class(self, m, setup):
        """Which class requests this device takes: ``(take_in, take_out, word, length)``, the
        first two combinational from ``setup`` (an IN request with a data stage, an OUT one
        without), the IN answer a constant word of ``length`` bytes. None here."""
        return Const(0), Const(0), 0, 0

    def _class_status(self, m):
        """Carry out an OUT class request :meth:`_class` took (its STATUS TP came)."""

    def elaborate(self, platform):
        m = Module()
        interface = self.interface
        setup = interface.setup
        handshakes = interface.handshakes_out
        # Status-stage ACKs carry sequence 1, as LUNA's standard handler's (USB 3.2 §8.12.2).
        m.d.comb += handshakes.next_sequence.eq(1)

        reply = Array(Signal(32, name=f"reply_{i}") for i in range(_WORDS))
        reply_length = Signal(range(4 * _WORDS + 1))
        last_word = Signal(range(_WORDS))
        sending = Signal()
        m.d.comb += last_word.eq((reply_length - 1) >> 2)

        is_vendor = setup.type == USBRequestType.VENDOR
        request = setup.request
        argument = Signal(32)
        m.d.comb += argument.eq(setup.value | (setup.index << 16))
        # OUT requests without a data stage that this device accepts, by request code.
        accepted_out = Signal()
        with m.Switch(request):
            with m.Case(usb3.Request.CLEAR_TELEMETRY, usb3.Request.SET_IN_TRANSFER):
                m.d.comb += accepted_out.eq(1)
            with m.Case(usb3.Request.SET_PATTERN):
                m.d.comb += accepted_out.eq(setup.value < len(Pattern))
            with m.Case(usb3.Request.SET_DATA_MODE):
                m.d.comb += accepted_out.eq(
                    setup.value.matches(*(int(mode) for mode in usb3.SUPPORTED_DATA_MODES)))
        accepted_in = Signal()
        with m.Switch(request):
            for code in _IN_REQUESTS:
                with m.Case(code):
                    m.d.comb += accepted_in.eq(1)

        # The reply goes out through a buffer whose ready is a flip-flop, so the link's ready
        # does not fan out to the shift register (the ss clock's critical path on ECP5).
        m.submodules.reply_buffer = buffer = RegisteredReadyBuffer(domain="ss")
        reply_stream = buffer.sink
        m.d.comb += [
            interface.tx.stream_eq(buffer.source),
            # Read by LUNA when the buffer's first word goes valid, after `sending` may be over.
            interface.tx_length.eq(reply_length),
            interface.tx_sequence_number.eq(0),
        ]

        data_received = falling_edge_detected(m, interface.rx.valid, domain="ss")
        # The token strobes come combinationally from LUNA's header receiver through its TP
        # decoder and control endpoint; acted on a cycle later (the handshake it answers with is
        # queued by LUNA's generator whenever it comes), the path meets 125 MHz on ECP5.
        data_requested, status_requested = Signal(), Signal()
        m.d.ss += [data_requested.eq(interface.data_requested),
                   status_requested.eq(interface.status_requested)]
        m.d.comb += buffer.flush.eq(setup.received | data_requested)

        # The request is decoded into flip-flops every cycle and acted on in DECODE, the cycle
        # after the SETUP: from the setup packet's fields through these compares into the
        # reply snapshot's 1,200 enables was the ss clock's critical path on ECPIX-5 (119.1 MHz,
        # nextpnr seed 1). The fields stay put until the next SETUP.
        standard, take_in, take_out, is_info = Signal(), Signal(), Signal(), Signal()
        class_in, class_out = Signal(), Signal()
        class_accepts_in, class_accepts_out, class_word, class_bytes = self._class(m, setup)
        in_length = Signal.like(reply_length)
        m.d.ss += [
            standard.eq(setup.type == USBRequestType.STANDARD),
            is_info.eq(request == usb3.Request.GET_INFO),
            take_in.eq(is_vendor & setup.is_in_request & accepted_in & (setup.length != 0)),
            take_out.eq(is_vendor & ~setup.is_in_request & accepted_out & (setup.length == 0)),
            class_in.eq((setup.type == USBRequestType.CLASS) & setup.is_in_request
                        & class_accepts_in & (setup.length != 0)),
            class_out.eq((setup.type == USBRequestType.CLASS) & ~setup.is_in_request
                         & class_accepts_out & (setup.length == 0)),
        ]
        for code, size in _IN_REQUESTS.items():
            with m.If(request == code):
                m.d.ss += in_length.eq(Mux(setup.length < size, setup.length, size))

        def start_request():
            # A new SETUP packet ends whatever request was in progress, in any state;
            # called last in each state so its next state wins. (The reply in flight stops
            # now: the buffer is flushed in this cycle.)
            with m.If(setup.received):
                m.d.ss += sending.eq(0)
                m.next = "DECODE"

        # The reply word being offered and its framing, and the index of the word after it.
        head = SimpleNamespace(data=Signal(32, name="head_data"),
                               valid=Signal(4, name="head_valid"),
                               first=Signal(name="head_first"), last=Signal(name="head_last"))
        ahead = Signal(range(_WORDS + 1))

        def load_head(index, *, first):
            remaining = reply_length - (index << 2)
            m.d.ss += [head.data.eq(reply[index]),
                       head.valid.eq(Mux(remaining >= 4, 0b1111,
                                         Mux(remaining == 3, 0b0111,
                                             Mux(remaining == 2, 0b0011, 0b0001)))),
                       head.first.eq(first),
                       head.last.eq(index == last_word)]

        with m.FSM(domain="ss"):
            with m.State("IDLE"):
                start_request()

            with m.State("DECODE"):
                with m.If(standard):
                    m.next = "IDLE"  # LUNA's standard handler answers these
                with m.Elif(take_in):
                    m.d.ss += reply_length.eq(in_length)
                    with m.If(is_info):
                        m.d.ss += [reply[i].eq(Const(w, 32))
                                   for i, w in enumerate(self._info_words)]
                    with m.Else():
                        m.d.ss += [reply[i].eq(self.telemetry[i])
                                   for i in range(usb3.TELEMETRY_WORDS)]
                    m.next = "DATA_IN"
                with m.Elif(take_out | class_out):
                    m.next = "STATUS_OUT"
                if class_bytes:  # (the probe takes no class request)
                    with m.Elif(class_in):
                        m.d.ss += [reply_length.eq(Mux(setup.length < class_bytes,
                                                       setup.length, class_bytes)),
                                   reply[0].eq(class_word)]
                        m.next = "DATA_IN"
                with m.Else():
                    m.next = "STALL"
                start_request()

            with m.State("DATA_IN"):
                # Each IN token (ACK TP with NumP > 0) asks for the data packet, again on a retry.
                # The word offered is a register (``head``), loaded from the snapshot (kept for a
                # retry) by ``ahead``, the index of the word after it: the snapshot's 49-way
                # multiplexer ends in a flip-flop, not in the reply buffer's select logic (that
                # path was the ss clock's critical path on ECPIX-5, 122.77 MHz on nextpnr seed 2,
                # issue 44 item 7; a shift register loaded from the snapshot before that, its
                # shift enable fanned out to 1,568 flip-flops, 100.1 MHz).
                with m.If(sending):
                    m.d.comb += [reply_stream.valid.eq(head.valid),
                                 reply_stream.first.eq(head.first),
                                 reply_stream.last.eq(head.last),
                                 reply_stream.data.eq(head.data)]
                    with m.If(reply_stream.ready):
                        load_head(ahead, first=0)
                        m.d.ss += ahead.eq(ahead + 1)
                        with m.If(head.last):
                            m.d.ss += sending.eq(0)
                # After the advance above, so a request that comes while a reply is in flight
                # (the buffer is flushed with it) starts again from the first word.
                with m.If(data_requested):
                    load_head(0, first=1)
                    m.d.ss += [ahead.eq(1), sending.eq(1)]
                with m.If(status_requested):
                    m.d.comb += handshakes.send_ack.eq(1)
                    m.next = "IDLE"
                start_request()

            with m.State("STATUS_OUT"):
                with m.If(status_requested):
                    m.d.comb += handshakes.send_ack.eq(1)
                    with m.If(class_out):
                        self._class_status(m)
                    with m.Switch(Mux(class_out, 0, request)):
                        with m.Case(usb3.Request.CLEAR_TELEMETRY):
                            m.d.comb += self.clear_telemetry.eq(1)
                        with m.Case(usb3.Request.SET_PATTERN, usb3.Request.SET_DATA_MODE):
                            m.d.comb += self.set_pattern.eq(1)
                            with m.If(request == usb3.Request.SET_PATTERN):
                                m.d.ss += self.pattern.eq(setup.value)
                            with m.Else():
                                m.d.ss += self.data_mode.eq(setup.value)
                        with m.Case(usb3.Request.SET_IN_TRANSFER):
                            m.d.comb += self.set_in_transfer.eq(1)
                            m.d.ss += [
                                self.in_transfer_length.eq(argument & ~usb3.IN_ZLP_FLAG),
                                self.in_zlp.eq((argument & usb3.IN_ZLP_FLAG) != 0),
                            ]
                    m.next = "IDLE"
                start_request()

            with m.State("STALL"):
                with m.If(data_requested | status_requested | data_received):
                    m.d.comb += handshakes.send_stall.eq(1)
                    m.next = "IDLE"
                start_request()

        return m
