"""Vendor request handler of the USB 2.0 device: :class:`busprobe.protocol.usb2.Request`."""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern
from luna.gateware.usb.usb2.request import USBRequestHandler
from usb_protocol.types import USBRequestRecipient, USBRequestType, USBStandardRequests

from ..common.pattern import PATTERN_SHAPE
from .control_replies import ControlReplies
from .descriptors import CONTROL_MAX_PACKET_SIZE

__all__ = ["ProbeRequestHandler", "is_interface_request", "is_descriptor_request"]


def is_interface_request(setup):
    """GET_INTERFACE or SET_INTERFACE: standard requests LUNA's handler STALLs (luna-usb 0.2.3
    has no case for them), which USB 2.0 §9.4.4 requires a configured device to answer. The
    device skiplists them from LUNA's handler and :class:`ProbeRequestHandler` answers."""
    return ((setup.type == USBRequestType.STANDARD)
            & (setup.recipient == USBRequestRecipient.INTERFACE)
            & ((setup.request == USBStandardRequests.GET_INTERFACE)
               | (setup.request == USBStandardRequests.SET_INTERFACE)))


def is_descriptor_request(setup):
    """GET_DESCRIPTOR: :class:`ProbeRequestHandler` answers it from the snapshot RAM (see
    :mod:`.control_replies`); the device skiplists it from LUNA's standard handler."""
    return ((setup.type == USBRequestType.STANDARD)
            & (setup.request == USBStandardRequests.GET_DESCRIPTOR))


class ProbeRequestHandler(wiring.Component, USBRequestHandler):
    """Answers the busprobe vendor requests on EP0; stalls any other vendor request.

    Also answers GET_INTERFACE (alternate setting 0) and SET_INTERFACE to setting 0 of
    interface 0, and stalls any other (see :func:`is_interface_request`); and GET_DESCRIPTOR,
    stalling a descriptor the device lacks (see :func:`is_descriptor_request`).

    GET_TELEMETRY starts a snapshot (:class:`~.telemetry.Usb2Telemetry`) when the SETUP packet
    arrives, so the block the host reads is the same in every packet of the data stage and in a
    retry; an IN token that comes before the snapshot is whole (0.7 µs) is NAKed. Every data
    stage is read from the snapshot RAM: the telemetry, and after it the constant answers
    (:class:`~.control_replies.ControlReplies`).
    Actions of the OUT requests take effect when the host ACKs the status stage, like LUNA's
    standard SET_ADDRESS.

    Attributes
    ----------
    capture_telemetry: Signal(), output
        Strobe: snapshot the telemetry now (GET_TELEMETRY's SETUP).
    read_address: Signal(range(replies.depth)), output
        Snapshot RAM word to read next.
    read_data: Signal(32), input
        The word ``read_address`` gave, a cycle later.
    snapshot_ready: Signal(), input
        The snapshot RAM holds a whole snapshot.
    clear_telemetry: Signal(), output
        Strobe: CLEAR_TELEMETRY.
    set_pattern: Signal(), output
        Strobe: SET_PATTERN; ``pattern`` holds the new pattern from the next cycle on.
    pattern: Signal(PATTERN_SHAPE), output
        The selected pattern.
    set_in_transfer: Signal(), output
        Strobe: SET_IN_TRANSFER; ``in_transfer_length``/``in_zlp`` hold the new values from the
        next cycle on.
    in_transfer_length: Signal(31), output
        IN transfer length in bytes (0 = endless).
    in_zlp: Signal(), output
        End IN transfers that are a multiple of the packet size with a ZLP.
    set_interface: Signal(), output
        Strobe: SET_INTERFACE completed; the interface's data toggles restart (§9.1.1.5).
    set_data_mode: Signal(), output
        Strobe: SET_DATA_MODE; ``data_mode`` holds the new mode from the next cycle on.
    data_mode: Signal(DataMode), output
        What the bulk endpoints carry.
    interface: RequestHandlerInterface
        LUNA's connection to the control endpoint (not part of the wiring signature).

    Parameters
    ----------
    features: usb2.Feature
        What the bitstream has: SET_DATA_MODE accepts BOT only with :attr:`~usb2.Feature.BOT`.
    replies: ControlReplies
        Where the constant answers are in the snapshot RAM (default: those of ``features`` and
        the busprobe descriptors); the telemetry must hold the same.
    """

    def __init__(self, *, features=usb2.NO_FEATURES, replies=None):
        self._features = usb2.Feature(features)
        self._replies = replies if replies is not None else ControlReplies(features=features)
        wiring.Component.__init__(self, {
            "capture_telemetry": Out(1),
            "read_address": Out(range(self._replies.depth)),
            "read_data": In(32),
            "snapshot_ready": In(1),
            "clear_telemetry": Out(1),
            "set_pattern": Out(1),
            "pattern": Out(PATTERN_SHAPE),
            "set_in_transfer": Out(1),
            "in_transfer_length": Out(31),
            "in_zlp": Out(1),
            "set_interface": Out(1),
            "set_data_mode": Out(1),
            "data_mode": Out(usb2.DataMode),
        })
        USBRequestHandler.__init__(self)

    def elaborate(self, platform):
        m = Module()
        interface = self.interface
        setup = interface.setup

        replies = self._replies
        for_interface = is_interface_request(setup)
        for_descriptor = is_descriptor_request(setup)
        vendor = setup.type == USBRequestType.VENDOR
        claimed = vendor | for_interface | for_descriptor
        m.d.comb += interface.claim.eq(claimed)

        request = Signal(8)
        # Data stages are at most the telemetry block long: byte counts fit `span`, not 16 bits.
        span = range(max(usb2.TELEMETRY_SIZE, replies.longest) + 1)
        # The block a new SETUP asks for (from `dispatch`); registered at the SETUP as where the
        # data stage starts in the RAM and how many bytes it carries: min(block, wLength).
        block_word = Signal(range(replies.depth))
        block_length = Signal(span)
        base_word = Signal(range(replies.depth))
        limit = Signal(span)
        packet_start = Signal(span)     # first byte of the packet being sent / retried
        position = Signal(span)
        sending = Signal()
        expecting_ack = Signal()
        # Packet bounds are registered: they change only on a SETUP or an ACK, always long
        # before the host's next IN token, and this keeps the 16-bit arithmetic out of the
        # path into the packet generator (it was the ECP5 critical path).
        packet_end = Signal(span)
        last_position = Signal(span)
        nothing_left = Signal()
        remaining = limit - packet_start
        next_end = Mux(remaining > CONTROL_MAX_PACKET_SIZE,
                       packet_start + CONTROL_MAX_PACKET_SIZE, limit)
        m.d.usb += [
            packet_end.eq(next_end),
            last_position.eq(next_end - 1),
            nothing_left.eq(packet_start >= limit),
        ]

        # The bytes offered come from `word`, a register; the RAM meanwhile reads the word after
        # it, addressed from registers only, so LUNA's transmit-ready chain ends at `position`
        # and `word` instead of running on through the RAM's address (it was the ECP5 critical
        # path: tx.ready -> position + 1 -> RAM address -> read data). `loading` counts the two
        # cycles the first word of a packet takes to arrive (address, then RAM read).
        tx = interface.tx
        word = Signal(32)
        loading = Signal(2)
        read_ahead = Signal()       # the RAM reads the word after `word`
        m.d.comb += [
            self.read_address.eq(base_word + position[2:] + read_ahead),
            tx.payload.eq(word.word_select(position[0:2], 8)),
        ]

        def send(word, length):
            """Answer with ``length`` bytes from RAM word ``word``."""
            m.d.comb += [block_word.eq(word), block_length.eq(length)]
            m.next = "SEND_DATA"

        def dispatch():
            """On a new SETUP for us, pick the state that handles it."""
            is_in = setup.is_in_request
            no_data = ~setup.is_in_request & (setup.length == 0)
            with m.If(setup.received & claimed):
                m.d.usb += [request.eq(setup.request), packet_start.eq(0),
                            interface.tx_data_pid.eq(1), sending.eq(0), expecting_ack.eq(0),
                            base_word.eq(block_word),
                            limit.eq(Mux(setup.length < block_length, setup.length,
                                         block_length))]
            with m.If(setup.received & for_interface):
                only_setting_zero = (setup.value == 0) & (setup.index == 0)
                m.next = "STALL"
                with m.If(setup.request == USBStandardRequests.GET_INTERFACE):
                    with m.If(is_in & only_setting_zero & (setup.length != 0)):
                        send(replies.zero.word, replies.zero.length)
                with m.Elif(no_data & only_setting_zero):   # SET_INTERFACE
                    m.next = "STATUS_ACTION"
            with m.Elif(setup.received & for_descriptor):
                m.next = "STALL"
                with m.Switch(setup.value):
                    for (kind, index), reply in replies.descriptors.items():
                        with m.Case((kind << 8) | index):
                            with m.If(is_in):
                                send(reply.word, reply.length)
            with m.Elif(setup.received & vendor):
                with m.Switch(setup.request):
                    with m.Case(usb2.Request.GET_INFO):
                        m.next = "STALL"
                        with m.If(is_in):
                            send(replies.info.word, replies.info.length)
                    with m.Case(usb2.Request.GET_TELEMETRY):
                        m.d.comb += self.capture_telemetry.eq(is_in)
                        m.next = "STALL"
                        with m.If(is_in):
                            send(0, usb2.TELEMETRY_SIZE)
                    with m.Case(usb2.Request.CLEAR_TELEMETRY, usb2.Request.SET_IN_TRANSFER):
                        m.next = "STATUS_ACTION"
                        with m.If(~no_data):
                            m.next = "STALL"
                    with m.Case(usb2.Request.SET_PATTERN):
                        m.next = "STATUS_ACTION"
                        with m.If(~no_data | (setup.value > max(Pattern))):
                            m.next = "STALL"
                    with m.Case(usb2.Request.SET_DATA_MODE):
                        m.next = "STALL"
                        modes = usb2.data_modes(self._features)
                        with m.If(no_data & setup.value.matches(*modes)):
                            m.next = "STATUS_ACTION"
                    with m.Default():
                        m.next = "STALL"

        with m.FSM(domain="usb"):
            with m.State("IDLE"):
                dispatch()

            with m.State("SEND_DATA"):
                with m.If(interface.data_requested & ~self.snapshot_ready):
                    m.d.comb += interface.handshakes_out.nak.eq(1)
                with m.Elif(interface.data_requested):
                    m.d.usb += [position.eq(packet_start), read_ahead.eq(0), loading.eq(2),
                                sending.eq(0)]
                with m.Elif(loading != 0):
                    m.d.usb += loading.eq(loading - 1)
                    with m.If(loading == 1):
                        m.d.usb += [word.eq(self.read_data), read_ahead.eq(1), sending.eq(1)]
                with m.If(sending):
                    with m.If(nothing_left):
                        m.d.comb += self.send_zlp()
                        m.d.usb += [sending.eq(0), expecting_ack.eq(1)]
                    with m.Else():
                        last = position == last_position
                        m.d.comb += [tx.valid.eq(1), tx.first.eq(position == packet_start),
                                     tx.last.eq(last)]
                        with m.If(tx.ready):
                            m.d.usb += position.eq(position + 1)
                            # The RAM has read the next word since `read_ahead` was set: this
                            # byte and the one before it share a word (a packet starts on one).
                            with m.If(position[0:2] == 3):
                                m.d.usb += word.eq(self.read_data)
                            with m.If(last):
                                m.d.usb += [sending.eq(0), expecting_ack.eq(1)]
                with m.If(interface.handshakes_in.ack & expecting_ack):
                    m.d.usb += [packet_start.eq(packet_end), expecting_ack.eq(0),
                                interface.tx_data_pid.eq(~interface.tx_data_pid)]
                with m.If(interface.status_requested):
                    m.d.comb += interface.handshakes_out.ack.eq(1)
                    m.next = "IDLE"
                dispatch()

            with m.State("STATUS_ACTION"):
                with m.If(interface.status_requested):
                    m.d.comb += self.send_zlp()
                with m.If(interface.handshakes_in.ack):
                    self._act(m, request, setup)
                    m.next = "IDLE"
                dispatch()

            with m.State("STALL"):
                with m.If(interface.data_requested | interface.status_requested):
                    m.d.comb += interface.handshakes_out.stall.eq(1)
                    m.next = "IDLE"
                dispatch()
        return m

    def _act(self, m, request, setup):
        """Carry out an OUT request once its status stage is ACKed."""
        with m.Switch(request):
            with m.Case(usb2.Request.CLEAR_TELEMETRY):
                m.d.comb += self.clear_telemetry.eq(1)
            with m.Case(usb2.Request.SET_PATTERN):
                m.d.comb += self.set_pattern.eq(1)
                m.d.usb += self.pattern.eq(setup.value)
            with m.Case(USBStandardRequests.SET_INTERFACE):
                m.d.comb += self.set_interface.eq(1)
            with m.Case(usb2.Request.SET_DATA_MODE):
                m.d.comb += self.set_data_mode.eq(1)
                m.d.usb += self.data_mode.eq(setup.value)
            with m.Case(usb2.Request.SET_IN_TRANSFER):
                argument = setup.value | (setup.index << 16)
                m.d.comb += self.set_in_transfer.eq(1)
                m.d.usb += [
                    self.in_transfer_length.eq(argument & ~usb2.IN_ZLP_FLAG),
                    self.in_zlp.eq((argument & usb2.IN_ZLP_FLAG) != 0),
                ]
