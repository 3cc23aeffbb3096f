"""What the cocotb tests of ``usb3_cocotb`` share: a session from power-up, the vendor
requests, bulk streams with their pattern check, the model's ceiling, figures recorded as JSON
lines to ``$BUSPROBE_USB3_FIGURES``."""

from __future__ import annotations

import json
import os
import time

from busprobe.sim.usb3.pipe import CLOCK_HZ


def record(**figures: object) -> None:
    path = os.environ.get("BUSPROBE_USB3_FIGURES")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(figures) + "\n")


async def open_session(dut, profile=None):
    from busprobe.sim.usb3.session import Usb3Session

    session = Usb3Session(dut, profile)
    await session.power_up()
    return session


async def vendor_request(session, request, value: int = 0, index: int = 0,
                         length: int = 0) -> bytes:
    # Through the host controller, not its protocol layer: a control request is the host
    # acting, so the next stream's first submission answers no completion. Sent past it, a
    # stream after GET_TELEMETRY was timed from the previous stream's last completion and its
    # first packet waited the profile's resubmit latency (small-burst OUT 454 MB/s, vl805 OUT
    # 96.9 % of its bound).
    return await session.host.control(0xC0 if length else 0x40, request, value, index, length)


async def prepare_stream(session, in_length: int = 0) -> None:
    from busprobe.protocol import usb3 as contract
    from busprobe.protocol.patterns import Pattern

    await vendor_request(session, contract.Request.SET_PATTERN, int(Pattern.PRBS31))
    await vendor_request(session, contract.Request.CLEAR_TELEMETRY)
    if in_length:
        await vendor_request(session, contract.Request.SET_IN_TRANSFER,
                      *contract.encode_in_transfer(in_length, False))


async def read_telemetry(session) -> dict[str, int]:
    from busprobe.protocol import usb3 as contract

    return contract.unpack_telemetry(await vendor_request(
        session, contract.Request.GET_TELEMETRY, length=contract.TELEMETRY_SIZE))


def model_ceiling(direction: str, burst: int = 16) -> float:
    from busprobe.model.usb3 import usb3_ceiling
    from busprobe.transport import BusDescription

    bus = BusDescription(kind="usb3-ss", speed="super", max_packet_size=1024,
                         extra={"max_burst": burst})
    return usb3_ceiling(bus, direction).throughput


async def stream_in(session, length: int, count: int, queue_depth: int = 2):
    from busprobe.protocol.patterns import Pattern, PatternStream

    await prepare_stream(session, length)
    chunks: list[bytes] = []
    wall = time.monotonic()
    outcome = await session.host.stream("in", 1, length, count, queue_depth,
                                        sink=chunks.append)
    wall = time.monotonic() - wall
    expected = PatternStream(Pattern.PRBS31)
    errors = [expected.check(chunk) for chunk in chunks]
    return outcome, chunks, errors, wall


async def stream_out(session, length: int, count: int, queue_depth: int = 2):
    from busprobe.protocol.patterns import Pattern, PatternStream

    await prepare_stream(session)
    source = PatternStream(Pattern.PRBS31)
    wall = time.monotonic()
    outcome = await session.host.stream("out", 2, length, count, queue_depth, source=source.take)
    return outcome, time.monotonic() - wall


def stream_rate(outcome) -> float:
    return outcome.bytes / ((outcome.end - outcome.start) / CLOCK_HZ)
