"""cocotb tests of the SuperSpeed device's chapter 9 behaviour, run in the same simulator session
as ``usb3_cocotb.py`` (which imports them): the request matrix of :mod:`busprobe.sim.chapter9`
at SuperSpeed, and endpoint halts on the link (STALL TPs, the sequence number restarting).
"""

from __future__ import annotations

import cocotb
from busprobe.gateware.usb3.descriptors import build_descriptors
from busprobe.protocol import usb3
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.chapter9 import (
    DEVICE,
    ENDPOINT,
    OUT,
    Case,
    Chapter9Device,
    Req,
    request_type,
    usb3_matrix,
)
from busprobe.sim.chapter9.run import Answer, MatrixRun
from busprobe.sim.usb3.protocol import DeviceStall, DeviceTimeout
from busprobe.sim.usb3.session import DEVICE_ADDRESS
from busprobe.transport import EndpointStalled
from usb3_cocotb_support import open_session, read_telemetry, vendor_request

EP_IN, EP_OUT = usb3.EP_IN & 0x0F, usb3.EP_OUT
HALT = 0


def chapter9_device() -> Chapter9Device:
    """The device the matrix expects: its descriptors (device, configuration, strings, BOS)
    and its two bulk endpoints."""
    return Chapter9Device({(kind, index): raw for kind, index, raw in build_descriptors()},
                          (usb3.EP_IN, usb3.EP_OUT), superspeed=True)


def _runner(session) -> MatrixRun:
    protocol, host = session.protocol, session.host

    async def control(case: Case) -> Answer:
        try:
            data = await protocol.control(case.request_type, case.request, case.value,
                                          case.index, case.out_data or case.length)
        except DeviceStall:
            return Answer("stall", stage="data or status")
        except DeviceTimeout as exc:
            return Answer("timeout", stage=str(exc))
        return Answer("data", data) if case.request_type & 0x80 and case.length else \
            Answer("ack")

    def accepted(case: Case) -> None:
        """The address SET_ADDRESS gave; SET_CONFIGURATION and SET_INTERFACE restart every
        sequence number (no row moves bulk data, so a CLEAR_FEATURE's one needs nothing)."""
        if case.request_type == request_type(OUT, DEVICE) and case.request == Req.SET_ADDRESS:
            protocol.address = case.value
        elif case.request in (Req.SET_CONFIGURATION, Req.SET_INTERFACE):
            host.reset_state()

    return MatrixRun(control, accepted, DEVICE_ADDRESS, state="configured")


@cocotb.test()
async def chapter9_requests_answered_as_usb_3_2_requires_in_every_state(dut) -> None:
    """Every row of the SuperSpeed matrix, from the Default state (SET_ADDRESS 0 after the
    enumeration) through the Address and Configured states, each answered as USB 3.2
    chapter 9 requires; the device streams afterwards."""
    session = await open_session(dut)
    run = _runner(session)
    for case in usb3_matrix(chapter9_device(), DEVICE_ADDRESS):
        await run.run(case)
    failures = run.failures()
    specified = sum(case.expect.kind != "any" for case, _ in run.results)
    dut._log.warning("chapter 9 matrix (SuperSpeed): %d rows, %d with the answer specified, "
                     "%d failed", len(run.results), specified, len(failures))
    assert not failures, f"{len(failures)} of {len(run.results)} rows:\n" + "\n".join(
        failures[:20])
    await run.enter("configured")
    session.host.reset_state()
    await vendor_request(session, usb3.Request.SET_PATTERN, int(Pattern.PRBS31))
    chunks: list[bytes] = []
    await session.host.stream("in", EP_IN, 4096, 1, 1, sink=chunks.append)
    assert chunks == [PatternStream(Pattern.PRBS31).take(4096)]


async def _feature(session, request: int, endpoint: int) -> None:
    await session.protocol.control(request_type(OUT, ENDPOINT), request, HALT, endpoint, 0)


async def _status(session, endpoint: int) -> bytes:
    return await session.protocol.control(0x82, Req.GET_STATUS, 0, endpoint, 2)


async def _stalls(transfer) -> bool:
    try:
        await transfer
    except (DeviceStall, EndpointStalled):  # a control request's, a bulk transfer's
        return True
    return False


@cocotb.test()
async def halted_superspeed_endpoints_stall_and_clear_feature_restarts_the_sequence(dut) -> None:
    """SET_FEATURE(ENDPOINT_HALT): the endpoint answers with a STALL TP (an ACK TP asking for
    IN data, an OUT data packet, which is dropped); GET_STATUS shows it; CLEAR_FEATURE ends it
    and the endpoint starts over at sequence number 0; SET_CONFIGURATION ends a halt too."""
    session = await open_session(dut)
    host = session.host
    pattern = Pattern.PRBS31
    await vendor_request(session, usb3.Request.SET_PATTERN, int(pattern))
    await host.stream("in", EP_IN, 2048, 1, 1)

    await _feature(session, Req.SET_FEATURE, usb3.EP_IN)
    assert (await _status(session, usb3.EP_IN), await _status(session, usb3.EP_OUT)) == \
        (b"\1\0", b"\0\0")
    assert await _stalls(host.stream("in", EP_IN, 1024, 1, 1))
    await _feature(session, Req.CLEAR_FEATURE, usb3.EP_IN)
    assert await _status(session, usb3.EP_IN) == b"\0\0"
    host.reset_state()   # sequence 0 on both ends, both endpoints (OUT has not moved yet)
    await vendor_request(session, usb3.Request.SET_PATTERN, int(pattern))
    chunks: list[bytes] = []
    await host.stream("in", EP_IN, 3072, 1, 1, sink=chunks.append)   # three whole packets
    assert chunks == [PatternStream(pattern).take(3072)]

    source = PatternStream(pattern)
    await host.stream("out", EP_OUT, 1024, 1, 1, source=source.take)
    await _feature(session, Req.SET_FEATURE, usb3.EP_OUT)
    before = await read_telemetry(session)
    assert await _stalls(host.stream("out", EP_OUT, 1024, 1, 1, source=lambda n: bytes(n)))
    assert (await read_telemetry(session))["out_bytes"] == before["out_bytes"]
    await _feature(session, Req.CLEAR_FEATURE, usb3.EP_OUT)
    host.reset_state()   # OUT starts over; IN is not used again
    await host.stream("out", EP_OUT, 2048, 1, 1, source=source.take)
    telemetry = await read_telemetry(session)
    assert telemetry["out_bytes"] == before["out_bytes"] + 2048
    assert telemetry["pattern_errors"] == 0

    # SET_CONFIGURATION restarts the endpoints: no halt survives it.
    await _feature(session, Req.SET_FEATURE, usb3.EP_OUT)
    await session.protocol.control(0x00, Req.SET_CONFIGURATION, 1, 0, 0)
    host.reset_state()
    assert await _status(session, usb3.EP_OUT) == b"\0\0"
    await host.stream("out", EP_OUT, 1024, 1, 1, source=lambda n: bytes(n))
