"""The chapter 9 matrix can fail: each behaviour the gateware had before issue 26 (and the one
LUNA's SuperSpeed standard handler has) makes rows of the matrix fail.

No simulator here: the matrix is data, so a device that answers every row as the row requires
is a function, and each old behaviour is that function with one change. A conforming device
passes every row (the table does not contradict itself); each old behaviour fails the rows named
below. The same matrix runs against the gateware in the cocotb suites
(``sim/usb2/tests/chapter9_cocotb.py``, ``sim/usb3/tests/chapter9_cocotb.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from busprobe.gateware.usb2.descriptors import build_descriptors as usb2_descriptors
from busprobe.gateware.usb3.descriptors import build_descriptors as usb3_descriptors
from busprobe.protocol import usb2, usb3
from busprobe.sim.chapter9 import (
    DEVICE,
    ENDPOINT,
    IN,
    INTERFACE,
    OUT,
    Case,
    Chapter9Device,
    Desc,
    Feature,
    Req,
    request_type,
    usb2_matrix,
    usb3_matrix,
)
from busprobe.sim.chapter9.run import Answer, MatrixRun

Change = Callable[[Case], "Answer | None"]
STALLED = Answer("stall", stage="data")


def usb2_device() -> Chapter9Device:
    own = (Desc.DEVICE, Desc.CONFIGURATION, Desc.STRING)
    return Chapter9Device({(kind, index): raw for kind, index, raw in usb2_descriptors()
                           if kind in own}, (usb2.EP_IN, usb2.EP_OUT),
                          full_speed_packet=usb2.FULL_SPEED_MAX_PACKET_SIZE)


def usb3_device() -> Chapter9Device:
    return Chapter9Device({(kind, index): raw for kind, index, raw in usb3_descriptors()},
                          (usb3.EP_IN, usb3.EP_OUT), superspeed=True)


def as_required(case: Case) -> Answer:
    """The answer the row requires (an ACK where any answer will do)."""
    kind = case.expect.kind
    if kind == "data":
        return Answer("data", case.expect.data)
    return STALLED if kind == "stall" else Answer("ack")


def failures(rows: list[Case], change: Change | None, state: str = "default") -> list[str]:
    async def control(case: Case) -> Answer:
        changed = change(case) if change is not None else None
        return changed if changed is not None else as_required(case)

    run = MatrixRun(control, lambda case: None, 5, state=state)  # type: ignore[arg-type]

    async def all_rows() -> None:
        for case in rows:
            await run.run(case)
    asyncio.run(all_rows())
    return run.failures()


def _is(case: Case, recipient: int, request: int, direction: int = OUT) -> bool:
    return case.request_type == request_type(direction, recipient) and case.request == request


# -- USB 2.0: the gateware before issue 26 ------------------------------------------------------

def qualifier_stalled(case: Case) -> Answer | None:
    if _is(case, DEVICE, Req.GET_DESCRIPTOR, IN) and case.value >> 8 in (
            Desc.DEVICE_QUALIFIER, Desc.OTHER_SPEED_CONFIGURATION):
        return STALLED
    return None


def status_always_zero(case: Case) -> Answer | None:
    if case.request == Req.GET_STATUS and case.request_type in (
            request_type(IN, INTERFACE), request_type(IN, ENDPOINT)):
        return Answer("data", b"\0\0")
    return None


def halt_stalled(case: Case) -> Answer | None:
    if _is(case, ENDPOINT, Req.SET_FEATURE) and case.value == Feature.ENDPOINT_HALT \
            and case.index & 0x7F:
        return STALLED
    return None


def set_descriptor_unanswered(case: Case) -> Answer | None:
    if _is(case, DEVICE, Req.SET_DESCRIPTOR):
        return Answer("timeout", stage="data")
    return None


USB2_OLD = {
    "qualifier and other-speed configuration STALLed": (qualifier_stalled, "GET_DESCRIPTOR"),
    "GET_STATUS of any interface or endpoint 0000": (status_always_zero, "GET_STATUS"),
    "SET_FEATURE(ENDPOINT_HALT) STALLed": (halt_stalled, "SET_FEATURE"),
    "SET_DESCRIPTOR's data stage unanswered": (set_descriptor_unanswered, "SET_DESCRIPTOR"),
}


def test_a_device_answering_as_each_usb2_row_requires_passes_the_whole_matrix():
    rows = usb2_matrix(usb2_device(), 5)
    assert failures(rows, None) == []
    assert len(rows) > 250


@pytest.mark.parametrize("behaviour", USB2_OLD)
def test_each_usb2_behaviour_before_issue_26_fails_the_matrix(behaviour):
    change, request = USB2_OLD[behaviour]
    failed = failures(usb2_matrix(usb2_device(), 5), change)
    assert failed and all(request in line for line in failed), failed


# -- SuperSpeed: LUNA's StandardRequestHandler, which the usb3 design had before ----------------

def luna_standard_handler(case: Case) -> Answer | None:
    """GET_STATUS always 0, SET/CLEAR_FEATURE and GET/SET_INTERFACE STALLed, any
    configuration value taken."""
    if case.request == Req.GET_STATUS and case.request_type & 0x80:
        return Answer("data", b"\0\0")
    if case.request in (Req.SET_FEATURE, Req.CLEAR_FEATURE, Req.GET_INTERFACE,
                        Req.SET_INTERFACE):
        return STALLED
    if _is(case, DEVICE, Req.SET_CONFIGURATION):
        return Answer("ack")
    return None


def test_a_device_answering_as_each_superspeed_row_requires_passes_the_whole_matrix():
    assert failures(usb3_matrix(usb3_device(), 5), None, "configured") == []


def test_lunas_superspeed_standard_handler_fails_the_matrix():
    failed = failures(usb3_matrix(usb3_device(), 5), luna_standard_handler, "configured")
    for request in ("GET_STATUS", "SET_FEATURE", "CLEAR_FEATURE", "SET_INTERFACE",
                    "SET_CONFIGURATION"):
        assert any(request in line for line in failed), (request, failed)
