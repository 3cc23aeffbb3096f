"""cocotb test run on a USB 2.0 netlist model, intact and with one cell changed (run by
test_netlist_usb2.py): enumeration, then the pattern both ways, checked by host and device."""

from __future__ import annotations

import cocotb
from busprobe.backends.usb.requests import VENDOR_IN, VENDOR_OUT, decode_telemetry
from busprobe.model.usb2_hosts import load_profile
from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.sim.usb2.session import Usb2Session

LENGTH = 8 * 512 + 100  # a short packet ends each transfer


async def _vendor(session: Usb2Session, request: usb2.Request, value: int = 0,
                  length: int = 0) -> bytes:
    return await session.host.control(VENDOR_IN if length else VENDOR_OUT, request, value, 0,
                                      length)


@cocotb.test()
async def enumerates_then_prbs31_in_and_out_match_the_pattern(dut):
    session = Usb2Session(dut, load_profile("ideal"))
    await session.power_up()  # enumeration; raises if a descriptor is wrong or never comes
    await _vendor(session, usb2.Request.SET_PATTERN, int(Pattern.PRBS31))
    await _vendor(session, usb2.Request.CLEAR_TELEMETRY)
    value, index = usb2.encode_in_transfer(LENGTH, False)
    await session.host.control(VENDOR_OUT, usb2.Request.SET_IN_TRANSFER, value, index)
    chunks: list[bytes] = []
    await session.host.stream("in", usb2.EP_IN & 0x7F, LENGTH, 2, 2, sink=chunks.append)
    expected = PatternStream(Pattern.PRBS31)
    for chunk in chunks:
        result = expected.check(chunk)
        assert result.errors == 0, f"IN data differs from the pattern at {result}"
    await session.host.stream("out", usb2.EP_OUT, LENGTH, 2, 2,
                              source=PatternStream(Pattern.PRBS31).take)
    raw = await _vendor(session, usb2.Request.GET_TELEMETRY, length=usb2.TELEMETRY_SIZE)
    telemetry = decode_telemetry(raw, features=usb2.NO_FEATURES).raw
    assert telemetry["out_bytes"] == 2 * LENGTH
    assert telemetry["pattern_errors"] == 0, f"{telemetry['pattern_errors']} OUT words wrong"
