"""Control transfers stage by stage at high speed, for the chapter 9 request matrix.

The host controller model (:meth:`HostController.control <busprobe.sim.usb2.controller.
HostController.control>`) raises on a STALL and always runs a data stage for a device-to-host
request; the matrix needs to see which stage the device STALLed and to send any SETUP packet, so
:func:`control_stages` drives the link model's transactions itself (USB 2.0 §8.5.3), and
:func:`accepted` keeps the host model's address and data toggles in step with what a request
did (:class:`busprobe.sim.chapter9.run.MatrixRun` calls both).
"""

from __future__ import annotations

import struct

from busprobe.protocol.usb2_wire import Pid
from busprobe.sim.chapter9 import DEVICE, ENDPOINT, OUT, Case, Req, request_type
from busprobe.sim.chapter9.run import Answer
from busprobe.sim.usb2.bulk_transactions import STUCK_UFRAMES
from busprobe.sim.usb2.controller import CONTROL_MPS, HostController
from busprobe.sim.usb2.link import DeviceTimeout, LinkError


async def _handshake(host: HostController, attempt):
    """One control-stage transaction, again while NAKed (or unanswered, three times)."""
    errors, start = 0, host.link.uframe
    while True:
        try:
            result = await attempt()
        except DeviceTimeout:
            errors += 1
            if errors == 3:
                raise
            continue
        if result.handshake != Pid.NAK:
            return result
        if host.link.uframe - start > STUCK_UFRAMES:
            raise LinkError("control transfer NAKed for 100 ms")
        await host.link.next_uframe()


async def control_stages(host: HostController, case: Case) -> Answer:
    """The control transfer of ``case`` at the host's address; the answer stage by stage (a
    device that does not answer a stage three times is "timeout", a failure in every row)."""
    try:
        return await _control_stages(host, case)
    except DeviceTimeout as exc:
        return Answer("timeout", stage=str(exc))


async def _control_stages(host: HostController, case: Case) -> Answer:
    link, address = host.link, host.address
    setup = struct.pack("<BBHHH", case.request_type, case.request, case.value, case.index,
                        case.length)
    result = await _handshake(host, lambda: link.transaction_out(
        address, 0, Pid.DATA0, setup, setup=True, reserve_cycles=host.reservation("out", 8)))
    if result.handshake != Pid.ACK:   # a SETUP is always ACKed (§8.5.3)
        raise LinkError(f"SETUP answered with {result.handshake}")
    device_to_host = bool(case.request_type & 0x80)
    received, toggle = bytearray(), Pid.DATA1
    if case.length and device_to_host:
        while len(received) < case.length:
            result = await _handshake(host, lambda: link.transaction_in(
                address, 0, reserve_cycles=host.reservation("in", CONTROL_MPS)))
            if result.handshake == Pid.STALL:
                return Answer("stall", stage="data")
            if result.data_pid != toggle:
                continue   # a retry of a packet already taken
            toggle = Pid.DATA0 if toggle == Pid.DATA1 else Pid.DATA1
            received += result.payload
            if len(result.payload) < CONTROL_MPS:
                break
        result = await _handshake(host, lambda: link.transaction_out(
            address, 0, Pid.DATA1, b"", reserve_cycles=host.reservation("out", 0)))
        if result.handshake == Pid.STALL:
            return Answer("stall", bytes(received), stage="status")
        return Answer("data", bytes(received))
    for offset in range(0, len(case.out_data), CONTROL_MPS):
        chunk = case.out_data[offset:offset + CONTROL_MPS]
        result = await _handshake(host, lambda chunk=chunk, toggle=toggle: link.transaction_out(
            address, 0, toggle, chunk, reserve_cycles=host.reservation("out", len(chunk))))
        if result.handshake == Pid.STALL:
            return Answer("stall", stage="data")
        toggle = Pid.DATA0 if toggle == Pid.DATA1 else Pid.DATA1
    result = await _handshake(host, lambda: link.transaction_in(
        address, 0, reserve_cycles=host.reservation("in", 0)))
    if result.handshake == Pid.STALL:
        return Answer("stall", stage="status")
    if result.data_pid != Pid.DATA1 or result.payload:
        raise LinkError(f"status stage answered with {result.data_pid} {result.payload.hex()}")
    return Answer("ack")


def accepted(host: HostController, case: Case) -> None:
    """What a standard request the device accepted changed on the host's side: its address,
    every data toggle (SET_CONFIGURATION, SET_INTERFACE) or one (CLEAR_FEATURE(HALT))."""
    if case.request_type == request_type(OUT, DEVICE):
        if case.request == Req.SET_ADDRESS:
            host.address = case.value
        elif case.request == Req.SET_CONFIGURATION:
            host.endpoints.clear()
    elif case.request == Req.SET_INTERFACE and case.request_type == 0x01:
        host.endpoints.clear()
    elif (case.request == Req.CLEAR_FEATURE and case.value == 0
          and case.request_type == request_type(OUT, ENDPOINT)):
        host.endpoints.pop(case.index & 0x8F, None)
