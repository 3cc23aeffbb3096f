"""cocotb tests of the USB 2.0 device's chapter 9 behaviour, run in the same simulator session as
``usb2_cocotb.py`` (which imports them): the request matrix of :mod:`busprobe.sim.chapter9`
(with the descriptors a high-speed device must have), endpoint halts on the bus, SET_DATA_MODE
discarding buffered data, and the MOD63 data mode Linux's usbtest reads.
"""

from __future__ import annotations

import os

import cocotb
from busprobe.backends.usb.requests import VENDOR_IN, VENDOR_OUT, decode_telemetry
from busprobe.gateware.usb2.descriptors import build_descriptors
from busprobe.model.usb2_hosts import load_profile
from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern, PatternStream, mod63_bytes
from busprobe.protocol.usb2_wire import Pid
from busprobe.sim.chapter9 import NOT_PROBED, Chapter9Device, Desc, usb2_matrix
from busprobe.sim.chapter9.run import MatrixRun
from busprobe.sim.usb2.controller import TransferStall
from busprobe.sim.usb2.session import DEVICE_ADDRESS, Usb2Session
from busprobe.transport import EndpointStalled
from chapter9_control import accepted, control_stages
from usb_protocol.types import USBStandardFeatures, USBStandardRequests

EP_IN = usb2.EP_IN & 0x7F
EP_OUT = usb2.EP_OUT
HALT = USBStandardFeatures.ENDPOINT_HALT
FEATURES = usb2.Feature(int(os.environ["BUSPROBE_USB2_FEATURES"]))


async def _session(dut) -> Usb2Session:
    session = Usb2Session(dut, load_profile("ideal"))
    await session.power_up()
    return session


async def _vendor(session: Usb2Session, request: usb2.Request, value: int = 0,
                  length: int = 0) -> bytes:
    return await session.host.control(VENDOR_IN if length else VENDOR_OUT, request, value, 0,
                                      length)


async def _telemetry(session: Usb2Session) -> dict[str, int]:
    data = await _vendor(session, usb2.Request.GET_TELEMETRY, length=usb2.TELEMETRY_SIZE)
    return decode_telemetry(data, features=FEATURES).raw


def chapter9_device() -> Chapter9Device:
    """The device the matrix expects: its device, configuration and string descriptors (the
    matrix derives the qualifier and the other-speed configuration from them), its two bulk
    endpoints, 64-byte bulk packets at full speed."""
    own = (Desc.DEVICE, Desc.CONFIGURATION, Desc.STRING)
    return Chapter9Device({(kind, index): raw for kind, index, raw in build_descriptors()
                           if kind in own}, (usb2.EP_IN, usb2.EP_OUT),
                          full_speed_packet=usb2.FULL_SPEED_MAX_PACKET_SIZE)


@cocotb.test()
async def chapter9_requests_answered_as_the_specification_requires_in_every_state(dut):
    """Every row of the USB 2.0 matrix, from a bus reset (Default) through the Address and
    Configured states, each answered as chapter 9 requires."""
    session = await _session(dut)
    await session.link.bus_reset()
    session.host.reset_state()
    host = session.host
    run = MatrixRun(lambda case: control_stages(host, case), lambda case: accepted(host, case),
                    DEVICE_ADDRESS)
    for case in usb2_matrix(chapter9_device(), DEVICE_ADDRESS):
        await run.run(case)
    failures = run.failures()
    specified = sum(case.expect.kind != "any" for case, _ in run.results)
    dut._log.warning("chapter 9 matrix (USB 2.0, %s): %d rows, %d with the answer specified, "
                     "%d failed; not probed: %s", FEATURES.name or "lean", len(run.results),
                     specified, len(failures), "; ".join(NOT_PROBED))
    assert not failures, f"{len(failures)} of {len(run.results)} rows:\n" + "\n".join(
        failures[:20])
    # The device goes on streaming after all of it.
    await run.enter("configured")
    chunks: list[bytes] = []
    await session.host.stream("in", EP_IN, 1024, 1, 1, sink=chunks.append)
    assert len(chunks[0]) == 1024


async def _halt(session: Usb2Session, request: int, endpoint: int) -> None:
    await session.host.control(0x02, request, HALT, endpoint, 0)


async def _status(session: Usb2Session, endpoint: int) -> bytes:
    return await session.host.control(0x82, USBStandardRequests.GET_STATUS, 0, endpoint, 2)


@cocotb.test()
async def halted_bulk_endpoints_stall_every_token_until_cleared_then_restart_at_data0(dut):
    """SET_FEATURE(ENDPOINT_HALT): every IN token, OUT packet and PING of that endpoint gets
    STALL, the other endpoint goes on; GET_STATUS shows it; CLEAR_FEATURE ends it and the next
    packet is DATA0, the data going on where it stopped; SET_CONFIGURATION ends a halt too."""
    session = await _session(dut)
    host, link = session.host, session.link
    await _vendor(session, usb2.Request.SET_PATTERN, Pattern.COUNTER)
    await _vendor(session, usb2.Request.CLEAR_TELEMETRY)
    expected, source = PatternStream(Pattern.COUNTER), PatternStream(Pattern.COUNTER)
    chunks: list[bytes] = []
    await host.stream("in", EP_IN, 3 * 512, 1, 1, sink=chunks.append)   # toggle now DATA1
    await host.stream("out", EP_OUT, 3 * 512, 1, 1, source=source.take)
    assert expected.check(chunks[0]).errors == 0
    reserve = host.reservation("in", 512)

    await _halt(session, USBStandardRequests.SET_FEATURE, usb2.EP_IN)
    assert await _status(session, usb2.EP_IN) == b"\1\0"
    assert await _status(session, usb2.EP_OUT) == b"\0\0"
    for _ in range(3):
        result = await link.transaction_in(host.address, EP_IN, reserve_cycles=reserve)
        assert result.handshake == Pid.STALL, result
    await host.stream("out", EP_OUT, 512, 1, 1, source=source.take)   # OUT goes on
    await _halt(session, USBStandardRequests.CLEAR_FEATURE, usb2.EP_IN)
    assert await _status(session, usb2.EP_IN) == b"\0\0"
    result = await link.transaction_in(host.address, EP_IN, reserve_cycles=reserve)
    assert (result.data_pid, result.payload) == (Pid.DATA0, expected.take(512))
    host.endpoint(usb2.EP_IN).flip()

    await _halt(session, USBStandardRequests.SET_FEATURE, usb2.EP_OUT)
    before = (await _telemetry(session))["out_bytes"]
    result = await link.transaction_out(host.address, EP_OUT, host.toggle(EP_OUT, "out"),
                                        b"\x55" * 512, reserve_cycles=reserve)
    assert result.handshake == Pid.STALL
    assert (await link.ping(host.address, EP_OUT)).handshake == Pid.STALL
    assert (await _telemetry(session))["out_bytes"] == before   # nothing of it was taken
    await _halt(session, USBStandardRequests.CLEAR_FEATURE, usb2.EP_OUT)
    assert host.toggle(EP_OUT, "out") == Pid.DATA0
    await host.stream("out", EP_OUT, 1024, 1, 1, source=source.take)
    telemetry = await _telemetry(session)
    assert telemetry["out_bytes"] == before + 1024 and telemetry["pattern_errors"] == 0

    # SET_CONFIGURATION restarts the endpoints: no halt survives it (§9.1.1.5).
    await _halt(session, USBStandardRequests.SET_FEATURE, usb2.EP_IN)
    await host.control(0x00, USBStandardRequests.SET_CONFIGURATION, 1, 0, 0)
    assert await _status(session, usb2.EP_IN) == b"\0\0"
    chunks.clear()
    await host.stream("in", EP_IN, 512, 1, 1, sink=chunks.append)
    assert chunks == [expected.take(512)]
    try:   # and a halt STALLs a whole transfer, as the host's driver sees it
        await _halt(session, USBStandardRequests.SET_FEATURE, usb2.EP_IN)
        await host.stream("in", EP_IN, 512, 1, 1)
        stalled = False
    except (TransferStall, EndpointStalled):  # the transfer queue's STALL
        stalled = True
    assert stalled


@cocotb.test()
async def set_data_mode_discards_what_is_buffered_in_both_directions(dut):
    """Loopback with the IN ring full and OUT packets waiting behind it: SET_DATA_MODE drops
    both, so the next IN transfer is the next OUT transfer, not a stray short packet of the
    old bytes (issue 26)."""
    session = await _session(dut)
    host = session.host
    await _vendor(session, usb2.Request.SET_PATTERN, Pattern.PRBS31)
    await _vendor(session, usb2.Request.SET_DATA_MODE, usb2.DataMode.LOOPBACK)
    old = PatternStream(Pattern.PRBS31)
    # 3000 bytes: four packets fill the IN ring, two (512 + 440) wait in the OUT buffer.
    await host.stream("out", EP_OUT, 3000, 1, 1, source=old.take)
    await _vendor(session, usb2.Request.SET_DATA_MODE, usb2.DataMode.LOOPBACK)
    new = bytes(range(256)) * 4
    await host.stream("out", EP_OUT, 1000, 1, 1, source=lambda length: new[:length])
    chunks: list[bytes] = []
    await host.stream("in", EP_IN, 4096, 1, 1, sink=chunks.append)
    assert chunks == [new[:1000]], [len(chunk) for chunk in chunks]


@cocotb.test()
async def mod63_mode_sends_usbtests_pattern_and_takes_out_data(dut):
    """DataMode.MOD63: IN transfers are usbtest's mod-63 pattern, every packet from 0, queued
    or not; OUT packets of any length are taken (not checked); back in PATTERN mode the
    pattern starts over."""
    session = await _session(dut)
    host, mps = session.host, usb2.MAX_PACKET_SIZE
    await _vendor(session, usb2.Request.SET_DATA_MODE, usb2.DataMode.MOD63)
    await _vendor(session, usb2.Request.CLEAR_TELEMETRY)
    chunks: list[bytes] = []
    await host.stream("in", EP_IN, 2048, 3, 2, sink=chunks.append)
    await host.stream("in", EP_IN, 512, 2, 1, sink=chunks.append)
    assert chunks == [mod63_bytes(2048, mps)] * 3 + [mod63_bytes(512, mps)] * 2
    lengths = (1000, 512, 1536, 7, 600)   # usbtest's writes: short packets among them
    for length in lengths:
        await host.stream("out", EP_OUT, length, 1, 1,
                          source=lambda length: mod63_bytes(length, mps))
    telemetry = await _telemetry(session)
    assert telemetry["out_bytes"] == sum(lengths) and telemetry["pattern_errors"] == 0
    assert telemetry["in_bytes"] == 3 * 2048 + 2 * 512
    await _vendor(session, usb2.Request.SET_DATA_MODE, usb2.DataMode.PATTERN)
    await _vendor(session, usb2.Request.SET_PATTERN, Pattern.COUNTER)
    chunks.clear()
    await host.stream("in", EP_IN, 1024, 1, 1, sink=chunks.append)
    assert chunks == [PatternStream(Pattern.COUNTER).take(1024)]
