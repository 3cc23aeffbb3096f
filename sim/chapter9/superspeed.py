"""The rows of the SuperSpeed matrix (USB 3.2 chapter 9): :func:`usb3_matrix`.

USB 3.2 keeps chapter 9's requests and states (its sections are numbered as USB 2.0's), so the
USB 2.0 rows run too, for a device whose :attr:`~.model.Chapter9Device.superspeed` is set: the
device qualifier and other-speed configuration are Request Errors there (§9.6.2, §9.6.4: no other
speed to describe at SuperSpeed), a BOS descriptor is required, there are interface features,
and SET_SEL and SET_ISOCH_DELAY are requests. What this module adds are the rows of those:
the U1/U2 enable features and their GET_STATUS bits, LTM_ENABLE, FUNCTION_SUSPEND, SET_SEL and
SET_ISOCH_DELAY.
"""

from __future__ import annotations

from .model import (
    ACK,
    ANY,
    DEVICE,
    IN,
    INTERFACE,
    OUT,
    STALL,
    STATES,
    Case,
    Chapter9Device,
    Feature,
    Req,
    State,
    data,
    request_type,
)
from .rows import usb2_rows

__all__ = ["usb3_matrix", "SEL_DATA"]

#: A SET_SEL data stage: U1SEL, U1PEL, U2SEL, U2PEL (µs, µs, µs, µs: USB 3.2 §9.4.12).
SEL_DATA = bytes((10, 10, 100, 0, 100, 0))


def _link_power_cases(device: Chapter9Device, state: State) -> list[Case]:
    """U1_ENABLE, U2_ENABLE (§9.4.1, §9.4.9: device features, shown in GET_STATUS bits 2 and 3)
    and LTM_ENABLE (only for a device with the LTM capability)."""
    settled, configured = state != "default", state == "configured"
    to_device, from_device = request_type(OUT, DEVICE), request_type(IN, DEVICE)
    cases = []
    for selector, bit in ((Feature.U1_ENABLE, 0x04), (Feature.U2_ENABLE, 0x08)):
        if not configured:
            # Accepted only in the Configured state by this device; the rows do not hold a
            # device in the Address state to either answer.
            cases.append(Case(state, to_device, Req.SET_FEATURE, selector, 0, 0, ANY,
                              "§9.4.9: U1/U2 entry is for a configured device"))
            continue
        status = bytes((device.device_status[0] | bit, device.device_status[1]))
        then = (Case(state, from_device, Req.GET_STATUS, 0, 0, 2, data(status),
                     "§9.4.5: the device status shows the link state enabled"),
                Case(state, to_device, Req.CLEAR_FEATURE, selector, 0, 0, ACK,
                     "§9.4.1: and it is disabled again"),
                Case(state, from_device, Req.GET_STATUS, 0, 0, 2, data(device.device_status),
                     "§9.4.5: the bit is clear again"))
        cases.append(Case(state, to_device, Req.SET_FEATURE, selector, 0, 0, ACK,
                          "§9.4.9: a SuperSpeed device's U1/U2 initiation is enabled by the "
                          "host", then=then))
    for request in (Req.SET_FEATURE, Req.CLEAR_FEATURE):
        cases.append(Case(state, to_device, request, Feature.LTM_ENABLE, 0, 0,
                          STALL if settled else ANY,
                          "§9.4.9: LTM_ENABLE exists only with the LTM capability (the BOS "
                          "says it has none)"))
    return cases


def _function_suspend_cases(state: State) -> list[Case]:
    """FUNCTION_SUSPEND of interface 0 (§9.4.9: wIndex high byte, bit 0 suspend, bit 1 remote
    wake enabled) and the interface status (§9.4.5)."""
    settled, configured = state != "default", state == "configured"
    to_interface = request_type(OUT, INTERFACE)
    cases = []
    for options in (0x00, 0x01):
        cases.append(Case(state, to_interface, Req.SET_FEATURE, Feature.FUNCTION_SUSPEND,
                          options << 8, 0, (ACK if configured else STALL) if settled else ANY,
                          "§9.4.9: a function of a configured device can be suspended and "
                          "resumed; an interface does not exist in the Address state"))
    cases += [
        Case(state, to_interface, Req.SET_FEATURE, Feature.FUNCTION_SUSPEND, 0x0001, 0,
             STALL if settled else ANY, "§9.4.9: interface 1 does not exist"),
        Case(state, to_interface, Req.SET_FEATURE, Feature.FUNCTION_SUSPEND, 0x0200, 0, ANY,
             "§9.4.9: remote wake enabled for a function the interface status says cannot"),
        Case(state, to_interface, Req.SET_FEATURE, 1, 0, 0, STALL if settled else ANY,
             "Table 9-7: FUNCTION_SUSPEND is the only interface feature"),
    ]
    return cases


def _superspeed_request_cases(state: State) -> list[Case]:
    """SET_SEL (§9.4.12) and SET_ISOCH_DELAY (§9.4.11)."""
    settled = state != "default"
    return [
        Case(state, request_type(OUT, DEVICE), Req.SET_SEL, 0, 0, len(SEL_DATA),
             ACK if settled else ANY, "§9.4.12: the system exit latencies, in the Address and "
             "Configured states", out_data=SEL_DATA),
        Case(state, request_type(OUT, DEVICE), Req.SET_ISOCH_DELAY, 40, 0, 0, ACK,
             "§9.4.11: valid in every state"),
        Case(state, request_type(OUT, INTERFACE), Req.SET_ISOCH_DELAY, 40, 0, 0,
             STALL if settled else ANY, "§9.2.7: defined for the device only"),
        Case(state, request_type(IN, DEVICE), Req.SET_SEL, 0, 0, len(SEL_DATA),
             STALL if settled else ANY, "§9.4.12: SET_SEL is host-to-device"),
    ]


def usb3_matrix(device: Chapter9Device, address: int) -> list[Case]:
    """Every row for a SuperSpeed device, state by state (Default first; ``address`` is the
    one SET_ADDRESS gives it)."""
    if not device.superspeed:
        raise ValueError("usb3_matrix is for a SuperSpeed device")
    cases = []
    for state in STATES:
        cases += _link_power_cases(device, state)
        cases += _function_suspend_cases(state)
        cases += _superspeed_request_cases(state)
        # Last: the USB 2.0 rows end with those that leave the state.
        cases += usb2_rows(device, state, address)
    return cases
