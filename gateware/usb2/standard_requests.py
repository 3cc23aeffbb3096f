"""The standard requests (USB 2.0 chapter 9) of the USB 2.0 device's EP0 handler: which SETUP
gets which answer (:func:`standard_request`), and what the accepted ones do at their status stage
(:class:`Action`, carried out by :class:`~.request_handler.ProbeRequestHandler`)."""

import enum

from amaranth import Mux
from busprobe.protocol import usb2
from usb_protocol.types import USBRequestRecipient, USBStandardFeatures, USBStandardRequests

from ..common.setup_fields import index_is

__all__ = ["Action", "standard_request"]


class Action(enum.Enum):
    """What a request without a data stage does once the host ACKs its status stage."""

    NONE = 0
    CLEAR_TELEMETRY = 1
    SET_PATTERN = 2
    SET_IN_TRANSFER = 3
    SET_DATA_MODE = 4
    SET_INTERFACE = 5
    SET_ADDRESS = 6
    SET_CONFIGURATION = 7
    CLEAR_HALT = 8
    SET_HALT = 9
    #: A class request's own action (the null disk's Bulk-Only Mass Storage Reset).
    CLASS_RESET = 10


def standard_request(handler, m, request, replies):
    """Dispatch a standard request of ``handler``'s SETUP (the state is STALL unless a case
    picks another): ``request`` has the SETUP, its ``send``/``acknowledge`` answers and
    ``is_in``/``no_data`` (see :meth:`.ProbeRequestHandler.elaborate`); ``replies`` where the
    constant answers are."""
    setup, send, acknowledge = request.setup, request.send, request.acknowledge
    is_in, no_data, recipient = request.is_in, request.no_data, setup.recipient
    configured = handler.interface.active_config != 0
    to_device = recipient == USBRequestRecipient.DEVICE
    # wIndex names an interface or endpoint (§9.3.4) the device has in this state; endpoint
    # zero with either direction bit (a control endpoint's is moot).
    zero, zero_in, bulk_in, bulk_out = index_is(setup.index, 0x00, 0x80, usb2.EP_IN,
                                                 usb2.EP_OUT)
    interface_exists = (recipient == USBRequestRecipient.INTERFACE) & configured & zero
    to_endpoint = recipient == USBRequestRecipient.ENDPOINT
    bulk_exists = to_endpoint & configured & (bulk_in | bulk_out)
    endpoint_exists = bulk_exists | (to_endpoint & (zero | zero_in))
    halted = bulk_exists & Mux(bulk_in, handler.halt_in, handler.halt_out)
    is_halt = setup.value == USBStandardFeatures.ENDPOINT_HALT   # also: wValue 0
    with m.Switch(setup.request):
        with m.Case(USBStandardRequests.GET_STATUS):
            with m.If(is_in & (to_device | interface_exists | endpoint_exists)):
                send(Mux(halted, replies.one.word, replies.zero.word), 2)
        with m.Case(USBStandardRequests.CLEAR_FEATURE):
            with m.If(no_data & endpoint_exists & is_halt):
                acknowledge(Action.CLEAR_HALT)
        with m.Case(USBStandardRequests.SET_FEATURE):
            # Endpoint zero has no halt feature here (§9.4.5 does not ask for one).
            with m.If(no_data & bulk_exists & is_halt):
                acknowledge(Action.SET_HALT)
        with m.Case(USBStandardRequests.SET_ADDRESS):
            with m.If(no_data & to_device):
                acknowledge(Action.SET_ADDRESS)
        with m.Case(USBStandardRequests.GET_DESCRIPTOR):
            with m.Switch(setup.value):
                for (kind, number), reply in replies.descriptors.items():
                    with m.Case((kind << 8) | number):
                        with m.If(is_in & to_device):
                            send(reply.word, reply.length)
        with m.Case(USBStandardRequests.GET_CONFIGURATION):
            with m.If(is_in & to_device):
                send(Mux(configured, replies.one.word, replies.zero.word), 1)
        with m.Case(USBStandardRequests.SET_CONFIGURATION):
            with m.If(no_data & to_device & (setup.value <= 1)):
                acknowledge(Action.SET_CONFIGURATION)
        with m.Case(USBStandardRequests.GET_INTERFACE, USBStandardRequests.SET_INTERFACE):
            # GET_INTERFACE: wValue 0, the setting in force; SET_INTERFACE: one that exists.
            setting_exists = interface_exists & (setup.value < handler.alternates)
            with m.If(setup.request == USBStandardRequests.GET_INTERFACE):
                with m.If(is_in & interface_exists & is_halt & ~request.length_zero):
                    send(Mux(handler.alternate, replies.one.word, replies.zero.word), 1)
            with m.Elif(no_data & setting_exists):
                acknowledge(Action.SET_INTERFACE)
