"""The standard requests of the SuperSpeed device's EP0 (USB 3.2 chapter 9)."""

import enum

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb3
from luna.gateware.usb.usb3.application.request import SuperSpeedRequestHandlerInterface
from luna.gateware.utils import falling_edge_detected
from usb_protocol.emitters import DeviceDescriptorCollection
from usb_protocol.types import (
    USBRequestRecipient,
    USBRequestType,
    USBStandardFeatures,
    USBStandardRequests,
)

from ..common.setup_fields import index_is
from .descriptor_rom import DescriptorRomHandler
from .skid_buffer import RegisteredReadyBuffer

__all__ = ["SuperSpeedStandardRequestHandler", "SuperSpeedFeature"]


class SuperSpeedFeature(enum.IntEnum):
    """Feature selectors USB 3.2 Table 9-7 adds (``usb_protocol`` names only USB 2.0's)."""

    FUNCTION_SUSPEND = 0   # interface
    U1_ENABLE = 48         # device
    U2_ENABLE = 49
    LTM_ENABLE = 50


class _State(enum.Enum):
    """What answers the request in progress."""

    IDLE = 0
    DESCRIPTOR = 1     # the descriptor ROM
    REPLY = 2          # GET_STATUS, GET_CONFIGURATION, GET_INTERFACE: one short packet
    DATA_OUT = 3       # SET_SEL's data stage
    ACCEPT = 4         # a request without a data stage, carried out at its status stage
    STALL = 5


class _Action(enum.Enum):
    """What a request without a data stage does when the host sends its STATUS TP."""

    NONE = 0
    SET_ADDRESS = 1
    SET_CONFIGURATION = 2
    SET_INTERFACE = 3
    HALT = 4           # SET/CLEAR_FEATURE(ENDPOINT_HALT): ``value`` says which
    U1 = 5             # SET/CLEAR_FEATURE(U1_ENABLE)
    U2 = 6


class SuperSpeedStandardRequestHandler(wiring.Component):
    """EP0's standard requests at SuperSpeed, in place of LUNA's ``StandardRequestHandler``.

    LUNA's handler (luna-usb 0.2.3, ``usb3/request/standard.py``) answers enumeration only:
    GET_STATUS is always 0, SET_FEATURE and CLEAR_FEATURE (and with them the endpoint halt)
    and GET/SET_INTERFACE are stalled, SET_CONFIGURATION takes any value. This handler answers
    them as USB 3.2 chapter 9 says; GET_DESCRIPTOR is answered from one ROM with a registered
    address (``DescriptorRomHandler``, in place of LUNA's streamer per descriptor):

    - GET_STATUS of the device (bits 2 and 3: U1 and U2 enabled; not self-powered, no LTM), of
      interface 0 (0: no function remote wake) or of an endpoint (bit 0: halted);
    - SET_FEATURE / CLEAR_FEATURE: U1_ENABLE and U2_ENABLE in the Configured state (the
      status bits; LUNA's link never starts U1/U2 itself), FUNCTION_SUSPEND of interface 0
      (SET_FEATURE, without remote wake: accepted, nothing to suspend), ENDPOINT_HALT of a bulk
      endpoint (``halt_in``/``halt_out``; the clear restarts its sequence number, ``restart_in``
      / ``restart_out``) and of endpoint 0 (clear only); LTM_ENABLE (no LTM capability),
      remote wakeup, test mode and every other selector are Request Errors;
    - SET_SEL (its 6 bytes are taken) and SET_ISOCH_DELAY (no isochronous endpoint uses it);
    - SET_ADDRESS, GET_DESCRIPTOR (the device qualifier and other-speed configuration do not
      exist at SuperSpeed), GET/SET_CONFIGURATION (0 or 1), GET/SET_INTERFACE (interface 0,
      alternate setting 0, or 0 and 1 with ``alternates=2``: the null disk's UAS);
    - any other request, recipient, index or value: STALL (SYNCH_FRAME: no isochronous
      endpoint; SET_DESCRIPTOR: not supported).

    Attributes
    ----------
    configuration: Signal(8), input
        The configuration in force (upstream gap, luna-usb 0.2.3: ``USB3ControlEndpoint``
        leaves its handlers' ``active_config`` undriven, so it comes from the device here).
    halt_in, halt_out: Signal(), output
        The bulk IN / OUT endpoint is halted.
    restart_in, restart_out: Signal(), output
        Strobe: the endpoint starts over at sequence number 0 (CLEAR_FEATURE(ENDPOINT_HALT),
        SET_INTERFACE).
    u1_enabled, u2_enabled: Signal(), output
        SET_FEATURE(U1_ENABLE / U2_ENABLE) in force.
    alternate: Signal(), output
        Interface 0's alternate setting (0 after SET_CONFIGURATION).
    interface: SuperSpeedRequestHandlerInterface
        LUNA's connection to the control endpoint (not part of the wiring signature).

    Parameters
    ----------
    descriptors: DeviceDescriptorCollection
        What GET_DESCRIPTOR answers.
    alternates: int
        Interface 0's alternate settings: 1 or 2.
    """

    configuration: In(8)
    halt_in: Out(1)
    halt_out: Out(1)
    restart_in: Out(1)
    restart_out: Out(1)
    u1_enabled: Out(1)
    u2_enabled: Out(1)
    alternate: Out(1)

    def __init__(self, descriptors: DeviceDescriptorCollection, *, alternates: int = 1):
        if alternates not in (1, 2):
            raise ValueError(f"interface 0 has 1 or 2 alternate settings here, not {alternates}")
        self._descriptors, self._alternates = descriptors, alternates
        super().__init__()
        self.interface = SuperSpeedRequestHandlerInterface()

    def elaborate(self, platform):
        m = Module()
        interface = self.interface
        setup, handshakes = interface.setup, interface.handshakes_out
        # Status-stage ACKs carry sequence 1 (USB 3.2 §8.12.2), as LUNA's handler's.
        m.d.comb += handshakes.next_sequence.eq(1)
        m.submodules.descriptors = descriptors = DescriptorRomHandler(self._descriptors,
                                                                      usb_domain="ss")
        m.d.comb += [descriptors.value.eq(setup.value), descriptors.length.eq(setup.length)]
        # As the vendor handler's reply: the descriptor leaves through a buffer whose ready is a
        # flip-flop, so the link's ready does not reach the descriptor ROM's read enable and
        # address counter (with LUNA's streamers, the ss clock's critical path on ECPIX-5, 123.1
        # MHz on nextpnr seed 1, once the transmit arbiter's and the data path's were cut).
        m.submodules.descriptor_buffer = buffer = RegisteredReadyBuffer(domain="ss")
        m.d.comb += buffer.sink.stream_eq(descriptors.tx)

        # As in the vendor handler: the token strobes registered, a cycle late (125 MHz).
        data_requested, status_requested = Signal(), Signal()
        m.d.ss += [data_requested.eq(interface.data_requested),
                   status_requested.eq(interface.status_requested)]
        data_received = falling_edge_detected(m, interface.rx.valid, domain="ss")
        m.d.comb += buffer.flush.eq(setup.received | data_requested)

        configured = self.configuration != 0
        reply, reply_length, sending = Signal(16), Signal(2), Signal()
        action, set_value = Signal(_Action), Signal()

        with m.If(~configured | self.restart_in):
            m.d.ss += self.halt_in.eq(0)
        with m.If(~configured | self.restart_out):
            m.d.ss += self.halt_out.eq(0)
        with m.If(~configured):
            m.d.ss += [self.u1_enabled.eq(0), self.u2_enabled.eq(0)]

        state = Signal(_State)
        with m.Switch(state):
            with m.Case(_State.DESCRIPTOR):
                m.d.comb += [interface.tx.stream_eq(buffer.source),
                             interface.tx_length.eq(descriptors.tx_length),
                             handshakes.send_stall.eq(descriptors.stall),
                             descriptors.start.eq(data_requested)]
            with m.Case(_State.REPLY):
                # One data packet of one or two bytes, sent again when asked again.
                with m.If(data_requested):
                    m.d.ss += sending.eq(1)
                m.d.comb += [interface.tx.valid.eq(Mux(sending, Mux(reply_length == 2, 0b0011,
                                                                     0b0001), 0)),
                             interface.tx.first.eq(1), interface.tx.last.eq(1),
                             interface.tx.data.eq(reply), interface.tx_length.eq(reply_length)]
                with m.If(interface.tx.ready):
                    m.d.ss += sending.eq(0)
            with m.Case(_State.DATA_OUT):
                # SET_SEL: its data packet is taken and acknowledged, then the status stage.
                with m.If(data_received):
                    m.d.comb += handshakes.send_ack.eq(1)
            with m.Case(_State.STALL):
                with m.If(data_requested | status_requested | data_received):
                    m.d.comb += handshakes.send_stall.eq(1)
                    m.d.ss += state.eq(_State.IDLE)
        answering = ((state == _State.DESCRIPTOR) | (state == _State.REPLY)
                     | (state == _State.DATA_OUT) | (state == _State.ACCEPT))
        with m.If(answering & status_requested):
            m.d.comb += handshakes.send_ack.eq(1)
            m.d.ss += state.eq(_State.IDLE)
            with m.If(state == _State.ACCEPT):
                self._act(m, action, set_value)
        # A new SETUP ends whatever was in progress (after the above: it takes precedence).
        with m.If(setup.received):
            m.d.ss += sending.eq(0)
            with m.If(setup.type == USBRequestType.STANDARD):
                self._decide(m, state, reply, reply_length, action, set_value)
            with m.Else():
                m.d.ss += state.eq(_State.IDLE)   # the vendor handler's
        return m

    def _decide(self, m, state, reply, reply_length, action, set_value):
        """A new SETUP: the state that answers it (STALL unless a request below takes it)."""
        interface = self.interface
        setup = interface.setup
        request, value, recipient = setup.request, setup.value, setup.recipient
        is_in, length = setup.is_in_request, setup.length
        no_data = ~is_in & (length == 0)
        configured = self.configuration != 0
        to_device = recipient == USBRequestRecipient.DEVICE
        to_endpoint = recipient == USBRequestRecipient.ENDPOINT
        zero, zero_in, bulk_in, bulk_out = index_is(setup.index, 0x00, 0x80, usb3.EP_IN,
                                                    usb3.EP_OUT)
        interface_zero = (recipient == USBRequestRecipient.INTERFACE) & configured & zero
        bulk = to_endpoint & configured & (bulk_in | bulk_out)
        endpoint_exists = bulk | (to_endpoint & (zero | zero_in))
        halted = bulk & Mux(bulk_in, self.halt_in, self.halt_out)

        def reply_with(word, size):
            m.d.ss += [reply.eq(word), reply_length.eq(size), state.eq(_State.REPLY)]

        def accept(what, flag=0):
            m.d.ss += [action.eq(what), set_value.eq(flag), state.eq(_State.ACCEPT)]

        m.d.ss += state.eq(_State.STALL)
        is_set = request == USBStandardRequests.SET_FEATURE
        with m.Switch(request):
            with m.Case(USBStandardRequests.GET_STATUS):
                with m.If(is_in & to_device):
                    reply_with((self.u1_enabled << 2) | (self.u2_enabled << 3), 2)
                with m.Elif(is_in & (interface_zero | endpoint_exists)):
                    reply_with(halted, 2)
            with m.Case(USBStandardRequests.SET_FEATURE, USBStandardRequests.CLEAR_FEATURE):
                with m.If(no_data & endpoint_exists
                          & (value == USBStandardFeatures.ENDPOINT_HALT)
                          & (bulk | ~is_set)):
                    accept(_Action.HALT, is_set)
                with m.Elif(no_data & to_device & configured
                            & (value == SuperSpeedFeature.U1_ENABLE)):
                    accept(_Action.U1, is_set)
                with m.Elif(no_data & to_device & configured
                            & (value == SuperSpeedFeature.U2_ENABLE)):
                    accept(_Action.U2, is_set)
                with m.Elif(no_data & is_set & (recipient == USBRequestRecipient.INTERFACE)
                            & configured & (setup.index[0:8] == 0)
                            & (setup.index[9:16] == 0)
                            & (value == SuperSpeedFeature.FUNCTION_SUSPEND)):
                    accept(_Action.NONE)
            with m.Case(USBStandardRequests.SET_ADDRESS):
                with m.If(no_data & to_device):
                    accept(_Action.SET_ADDRESS)
            with m.Case(USBStandardRequests.GET_DESCRIPTOR):
                with m.If(is_in & to_device):
                    m.d.ss += state.eq(_State.DESCRIPTOR)
            with m.Case(USBStandardRequests.GET_CONFIGURATION):
                with m.If(is_in & to_device):
                    reply_with(self.configuration, 1)
            with m.Case(USBStandardRequests.SET_CONFIGURATION):
                with m.If(no_data & to_device & (value <= 1)):
                    accept(_Action.SET_CONFIGURATION)
            with m.Case(USBStandardRequests.GET_INTERFACE):
                with m.If(is_in & interface_zero & (value == 0)):
                    reply_with(self.alternate, 1)
            with m.Case(USBStandardRequests.SET_INTERFACE):
                with m.If(no_data & interface_zero & (value < self._alternates)):
                    accept(_Action.SET_INTERFACE, value[0])
            with m.Case(USBStandardRequests.SET_SEL):
                with m.If(~is_in & to_device & (length == 6)):
                    m.d.ss += state.eq(_State.DATA_OUT)
            with m.Case(USBStandardRequests.SET_ISOCH_DELAY):
                with m.If(no_data & to_device):
                    accept(_Action.NONE)

    def _act(self, m, action, set_value):
        """Carry out an accepted request without a data stage (its STATUS TP came)."""
        interface = self.interface
        setup = interface.setup
        _, _, bulk_in, bulk_out = index_is(setup.index, 0x00, 0x80, usb3.EP_IN, usb3.EP_OUT)
        with m.Switch(action):
            with m.Case(_Action.SET_ADDRESS):
                m.d.comb += [interface.address_changed.eq(1),
                             interface.new_address.eq(setup.value[0:7])]
            with m.Case(_Action.SET_CONFIGURATION, _Action.SET_INTERFACE):
                # Both restart the endpoints, halts included (§9.1.1.5); SET_CONFIGURATION also
                # does through LUNA's ep_reset.
                with m.If(action == _Action.SET_CONFIGURATION):
                    m.d.comb += [interface.config_changed.eq(1),
                                 interface.new_config.eq(setup.value[0:8])]
                    m.d.ss += self.alternate.eq(0)
                with m.Else():
                    m.d.ss += self.alternate.eq(set_value)
                m.d.comb += [self.restart_in.eq(1), self.restart_out.eq(1)]
            with m.Case(_Action.HALT):
                # A clear restarts the endpoint's sequence number (USB 3.2 §9.4.5); endpoint 0
                # has no halt to clear.
                with m.If(bulk_in):
                    m.d.ss += self.halt_in.eq(set_value)
                    m.d.comb += self.restart_in.eq(~set_value)
                with m.If(bulk_out):
                    m.d.ss += self.halt_out.eq(set_value)
                    m.d.comb += self.restart_out.eq(~set_value)
            with m.Case(_Action.U1):
                m.d.ss += self.u1_enabled.eq(set_value)
            with m.Case(_Action.U2):
                m.d.ss += self.u2_enabled.eq(set_value)
