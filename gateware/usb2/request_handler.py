"""The request handler of the USB 2.0 device's EP0: every standard request it answers and the
busprobe vendor requests (:class:`busprobe.protocol.usb2.Request`)."""

import enum
from types import SimpleNamespace

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern
from luna.gateware.usb.usb2.request import USBRequestHandler
from usb_protocol.types import (
    USBRequestType,
)

from ..common.pattern import PATTERN_SHAPE
from ..common.setup_fields import index_is
from .control_replies import ControlReplies
from .descriptors import CONTROL_MAX_PACKET_SIZE
from .standard_requests import Action as _Action
from .standard_requests import standard_request

__all__ = ["ProbeRequestHandler"]


class _State(enum.Enum):
    """Where the handler is in a control transfer."""

    IDLE = 0
    SEND_DATA = 1
    STATUS_ACTION = 2
    STALL = 3


class ProbeRequestHandler(wiring.Component, USBRequestHandler):
    """EP0's only request handler: the standard requests of USB 2.0 chapter 9 as a bulk device
    answers them, and the busprobe vendor requests; every other request is stalled (a Request
    Error, §9.2.7).

    Standard (§9.4), in the Address state (address set, configuration 0) and the Configured
    state; an interface or endpoint is one the device has in that state, interface 0 and the
    bulk endpoints only once configured, endpoint 0 always (wIndex 0x00 or 0x80):

    - GET_STATUS of the device (bus-powered, no remote wakeup: 0), of an interface (0) or of an
      endpoint (bit 0: halted);
    - SET_FEATURE(ENDPOINT_HALT) of a bulk endpoint halts it (``halt_in``/``halt_out``: it
      STALLs every token until cleared), CLEAR_FEATURE(ENDPOINT_HALT) of any endpoint clears
      it and restarts its data toggle at DATA0; SET_CONFIGURATION, SET_INTERFACE and leaving
      the Configured state clear every halt too (§9.1.1.5). No other feature exists here: the
      device has no remote wakeup, and TEST_MODE, which a high-speed device should support,
      needs the PHY's test modes, which LUNA does not drive (it is stalled, as is every other
      feature selector and every interface feature);
    - SET_ADDRESS, GET_DESCRIPTOR (device, configuration 0, strings, the device qualifier and
      the other-speed configuration; any other is stalled), GET_CONFIGURATION,
      SET_CONFIGURATION (0 or 1: the device has one configuration), GET_INTERFACE and
      SET_INTERFACE (alternate setting 0 of interface 0);
    - SET_DESCRIPTOR and SYNCH_FRAME (no isochronous endpoint) are stalled, as is a request to a
      recipient it is not defined for, or with a data stage it does not have (the OUT data
      stage is stalled).

    Where chapter 9 leaves the answer open (the Default state, a non-zero wIndex of a device
    request, wLength other than the one defined) it answers as it would have otherwise.
    LUNA's standard handler is not used: its data stages came from a ROM of LUTs and a
    serializer of their own, and two handlers need LUNA's multiplexer between them; here
    every data stage is a block of the snapshot RAM.

    GET_TELEMETRY starts a snapshot (:class:`~.telemetry.Usb2Telemetry`) when the SETUP packet
    arrives, so the block the host reads is the same in every packet of the data stage and in a
    retry; an IN token that comes before the snapshot is whole (0.7 µs) is NAKed. Every data
    stage is read from the snapshot RAM: the telemetry, and after it the constant answers
    (:class:`~.control_replies.ControlReplies`).
    A request without a data stage takes effect when the host ACKs its status stage (USB 2.0
    §9.4.6: the address changes only then).

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
    alternate: Signal(), output
        Interface 0's alternate setting in force (SET_INTERFACE; 0 again on SET_CONFIGURATION
        and when leaving the Configured state).
    halt_in: Signal(), output
        The bulk IN endpoint is halted (SET_FEATURE(ENDPOINT_HALT)): it STALLs every token.
    halt_out: Signal(), output
        The bulk OUT endpoint is halted.
    interface: RequestHandlerInterface
        LUNA's connection to the control endpoint (not part of the wiring signature).

    Parameters
    ----------
    features: usb2.Feature
        What the bitstream has: SET_DATA_MODE accepts BOT only with :attr:`~usb2.Feature.BOT`.
    replies: ControlReplies
        Where the constant answers are in the snapshot RAM (default: those of ``features`` and
        the busprobe descriptors); the telemetry must hold the same.
    alternates: int
        Alternate settings interface 0 has (1 or 2; the null disk's second is UAS).
    """

    def __init__(self, *, features=usb2.NO_FEATURES, replies=None, alternates=1):
        self._features = usb2.Feature(features)
        self.alternates = alternates
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
            "alternate": Out(1),
            "set_data_mode": Out(1),
            "data_mode": Out(usb2.DataMode),
            "halt_in": Out(1),
            "halt_out": Out(1),
        })
        USBRequestHandler.__init__(self)

    def elaborate(self, platform):
        m = Module()
        interface = self.interface
        setup = interface.setup

        replies = self._replies
        m.d.comb += interface.claim.eq(1)
        action = Signal(_Action)
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

        # The SETUP's decision (which state, which action, which block) is one tree outside
        # the state machine, taken in whatever state the SETUP finds it: an FSM that called the
        # dispatch in each state built a copy of that tree per state.
        state = Signal(_State)
        target = Signal(_State, init=_State.STALL)
        next_action = Signal(_Action)

        def send(word, length):
            """Answer with ``length`` bytes from RAM word ``word``."""
            m.d.comb += [block_word.eq(word), block_length.eq(length),
                         target.eq(_State.SEND_DATA)]

        def acknowledge(what):
            """Answer the status stage with a ZLP; do ``what`` when the host ACKs it."""
            m.d.comb += [next_action.eq(what), target.eq(_State.STATUS_ACTION)]

        stalling = Signal()
        m.d.usb += stalling.eq(0)
        m.d.comb += interface.handshakes_out.stall.eq(stalling)
        with m.Switch(state):
            with m.Case(_State.SEND_DATA):
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
                    m.d.usb += state.eq(_State.IDLE)

            with m.Case(_State.STATUS_ACTION):
                with m.If(interface.status_requested):
                    m.d.comb += self.send_zlp()
                    m.d.usb += expecting_ack.eq(1)
                # Only the ACK of this ZLP: one for another endpoint's packet may come first.
                with m.If(interface.handshakes_in.ack & expecting_ack):
                    self._act(m, action, setup)
                    m.d.usb += state.eq(_State.IDLE)

            with m.Case(_State.STALL):
                # An OUT data stage too: no request here has one (SET_DESCRIPTOR, a vendor
                # request with data), and without an answer the host would retry until it
                # gives up. The STALL goes out a cycle later, from a flip-flop (LUNA's
                # handshake generator takes the strobe when it comes): nothing in front of
                # it on the token's path.
                with m.If(interface.data_requested | interface.status_requested
                          | interface.rx_ready_for_response):
                    m.d.usb += [stalling.eq(1), state.eq(_State.IDLE)]

        # Every halt ends when the endpoints restart (§9.1.1.5): leaving the Configured state
        # (a bus reset, SET_CONFIGURATION 0), SET_CONFIGURATION and SET_INTERFACE.
        with m.If((interface.active_config == 0) | interface.config_changed
                  | self.set_interface):
            m.d.usb += [self.halt_in.eq(0), self.halt_out.eq(0)]
        with m.If((interface.active_config == 0) | interface.config_changed):
            m.d.usb += self.alternate.eq(0)

        # A new SETUP restarts the handler whatever it was doing (after the state machine: it
        # takes precedence).
        with m.If(setup.received):
            m.d.usb += [state.eq(target), action.eq(next_action), packet_start.eq(0),
                        interface.tx_data_pid.eq(1), sending.eq(0), expecting_ack.eq(0),
                        base_word.eq(block_word),
                        limit.eq(Mux(setup.length < block_length, setup.length, block_length))]
            length_zero = setup.length == 0
            request = SimpleNamespace(
                setup=setup, send=send, acknowledge=acknowledge, is_in=setup.is_in_request,
                no_data=~setup.is_in_request & length_zero, length_zero=length_zero)
            with m.If(setup.type == USBRequestType.STANDARD):
                standard_request(self, m, request, self._replies)
            with m.Elif(setup.type == USBRequestType.VENDOR):
                self._vendor(m, request)
            with m.Elif(setup.type == USBRequestType.CLASS):
                self._class(m, request)
        return m

    def _class(self, m, request):
        """Dispatch a class request (as :meth:`_vendor`): the probe has no class interface, so
        every one is stalled; a personality with one (the null disk's BOT) overrides this."""

    def _vendor(self, m, request):
        """Dispatch a busprobe vendor request (as :meth:`_standard`)."""
        replies = self._replies
        setup, send, acknowledge = request.setup, request.send, request.acknowledge
        is_in, no_data = request.is_in, request.no_data
        with m.Switch(setup.request):
            with m.Case(usb2.Request.GET_INFO):
                with m.If(is_in):
                    send(replies.info.word, replies.info.length)
            with m.Case(usb2.Request.GET_TELEMETRY):
                m.d.comb += self.capture_telemetry.eq(is_in)
                with m.If(is_in):
                    send(0, usb2.TELEMETRY_SIZE)
            with m.Case(usb2.Request.CLEAR_TELEMETRY):
                with m.If(no_data):
                    acknowledge(_Action.CLEAR_TELEMETRY)
            with m.Case(usb2.Request.SET_IN_TRANSFER):
                with m.If(no_data):
                    acknowledge(_Action.SET_IN_TRANSFER)
            with m.Case(usb2.Request.SET_PATTERN):
                with m.If(no_data & (setup.value <= max(Pattern))):
                    acknowledge(_Action.SET_PATTERN)
            with m.Case(usb2.Request.SET_DATA_MODE):
                modes = usb2.data_modes(self._features)
                with m.If(no_data & setup.value.matches(*modes)):
                    acknowledge(_Action.SET_DATA_MODE)

    def _act(self, m, action, setup):
        """Carry out a request without a data stage once its status stage is ACKed."""
        interface = self.interface
        with m.Switch(action):
            with m.Case(_Action.CLEAR_TELEMETRY):
                m.d.comb += self.clear_telemetry.eq(1)
            with m.Case(_Action.SET_PATTERN):
                m.d.comb += self.set_pattern.eq(1)
                m.d.usb += self.pattern.eq(setup.value)
            with m.Case(_Action.SET_INTERFACE):
                m.d.comb += self.set_interface.eq(1)
                if self.alternates > 1:
                    m.d.usb += self.alternate.eq(setup.value[0])
            with m.Case(_Action.SET_DATA_MODE):
                m.d.comb += self.set_data_mode.eq(1)
                m.d.usb += self.data_mode.eq(setup.value)
            with m.Case(_Action.SET_IN_TRANSFER):
                argument = setup.value | (setup.index << 16)
                m.d.comb += self.set_in_transfer.eq(1)
                m.d.usb += [
                    self.in_transfer_length.eq(argument & ~usb2.IN_ZLP_FLAG),
                    self.in_zlp.eq((argument & usb2.IN_ZLP_FLAG) != 0),
                ]
            with m.Case(_Action.SET_ADDRESS):
                m.d.comb += [interface.address_changed.eq(1),
                             interface.new_address.eq(setup.value)]
            with m.Case(_Action.SET_CONFIGURATION):
                m.d.comb += [interface.config_changed.eq(1),
                             interface.new_config.eq(setup.value)]
            with m.Case(_Action.CLEAR_HALT, _Action.SET_HALT):
                # Only the endpoints the request may name get here: endpoint 0 or a bulk one.
                halt = action == _Action.SET_HALT
                _, _, bulk_in, bulk_out = index_is(setup.index, 0x00, 0x80, usb2.EP_IN,
                                                    usb2.EP_OUT)
                with m.If(bulk_in):
                    m.d.usb += self.halt_in.eq(halt)
                with m.If(bulk_out):
                    m.d.usb += self.halt_out.eq(halt)
                with m.If(~halt):
                    m.d.comb += [
                        interface.clear_endpoint_halt.enable.eq(1),
                        interface.clear_endpoint_halt.direction.eq(setup.index[7]),
                        interface.clear_endpoint_halt.number.eq(setup.index[0:4])]
