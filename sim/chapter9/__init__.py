"""The chapter 9 request matrix: every standard request, recipient, device state and valid or
invalid wValue / wIndex / wLength, with the answer the USB specification requires.

The matrix is data: :func:`usb2_matrix` (USB 2.0 chapter 9) and :func:`usb3_matrix` (USB 3.2
chapter 9, which changes and adds requests) turn one description of a device
(:class:`Chapter9Device`: its descriptors, interfaces, bulk endpoints and status bits) into
:class:`Case` rows, and the cocotb suites of each design run every row against the gateware
through their host models (``sim/usb2/tests/chapter9_cocotb.py``,
``sim/usb3/tests/chapter9_cocotb.py``). Where the specification leaves the answer open (most
requests in the Default state, a GET_STATUS with wLength other than 2, ...) a row expects
:data:`ANY`: the device may answer as it likes but must go on answering.

Each row says which section requires its answer. Rows with an effect (SET_ADDRESS,
SET_CONFIGURATION, SET_FEATURE(ENDPOINT_HALT), ...) name the state they leave the device in and
carry the follow-up rows that check the effect (a halted endpoint reports the halt bit, the
clear removes it).
"""

from .model import (
    ACK,
    ANY,
    DEVICE,
    ENDPOINT,
    IN,
    INTERFACE,
    OTHER,
    OUT,
    STALL,
    STATES,
    Case,
    Chapter9Device,
    Desc,
    Expect,
    Feature,
    Req,
    State,
    data,
    request_type,
)
from .rows import NOT_PROBED, usb2_matrix
from .superspeed import usb3_matrix

__all__ = ["Expect", "Case", "Chapter9Device", "ANY", "ACK", "STALL", "data", "STATES", "State",
           "request_type", "IN", "OUT", "DEVICE", "INTERFACE", "ENDPOINT", "OTHER", "Req",
           "Feature", "Desc", "NOT_PROBED", "usb2_matrix", "usb3_matrix"]
