"""cocotb tests of the busprobe USB2 gateware behind the simulated host (run by test_usb2_sim.py).

Each test powers the device up, resets the bus, enumerates it like a host, then drives bulk
transfers through the host-controller model; data is checked against
:class:`~busprobe.protocol.patterns.PatternStream` and the device's own telemetry.

The runner names the build's optional parts in ``BUSPROBE_USB2_FEATURES`` (an int of
:class:`~busprobe.protocol.usb2.Feature` bits) and picks the tests the build can pass: the
packet-shape and drop counters are asserted on the full design only.
"""

from __future__ import annotations

import os

import cocotb
from busprobe.backends.usb.requests import VENDOR_IN, VENDOR_OUT, decode_telemetry
from busprobe.model.usb2_hosts import load_profile
from busprobe.protocol import usb2
from busprobe.protocol.patterns import Pattern, PatternStream
from busprobe.protocol.usb2_wire import Pid
from busprobe.sim.usb2.controller import TransferStall
from busprobe.sim.usb2.hostile import DROP_COUNTERS, HostileHost
from busprobe.sim.usb2.session import Usb2Session

# The chapter 9 tests run in this simulator session too (cocotb finds them in this module).
from chapter9_cocotb import (  # noqa: F401
    chapter9_requests_answered_as_the_specification_requires_in_every_state,
    halted_bulk_endpoints_stall_every_token_until_cleared_then_restart_at_data0,
    mod63_mode_sends_usbtests_pattern_and_takes_out_data,
    set_data_mode_discards_what_is_buffered_in_both_directions,
)
from usb_protocol.types import USBStandardRequests
from usb_protocol.types.descriptors.standard import (
    ConfigurationDescriptor,
    DeviceDescriptor,
    EndpointDescriptor,
)

EP_IN = usb2.EP_IN & 0x7F
EP_OUT = usb2.EP_OUT
#: What the model under test was built with, as the runner says (GET_INFO is checked against it).
FEATURES = usb2.Feature(int(os.environ["BUSPROBE_USB2_FEATURES"]))


async def _session(dut, host: str = "ideal") -> Usb2Session:
    session = Usb2Session(dut, load_profile(os.environ.get("BUSPROBE_TEST_HOST", host)))
    await session.power_up()
    return session


async def _vendor(session: Usb2Session, request: usb2.Request, value: int = 0, index: int = 0,
                  length: int = 0) -> bytes:
    request_type = VENDOR_IN if length else VENDOR_OUT
    return await session.host.control(request_type, request, value, index, length)


async def _telemetry(session: Usb2Session) -> dict[str, int]:
    """The counters as the host driver decodes them: only the words this build counts."""
    data = await _vendor(session, usb2.Request.GET_TELEMETRY, length=usb2.TELEMETRY_SIZE)
    return decode_telemetry(data, features=FEATURES).raw


async def _prepare(session: Usb2Session, pattern: Pattern, in_length: int = 0,
                   zlp: bool = False) -> None:
    await _vendor(session, usb2.Request.SET_PATTERN, int(pattern))
    await _vendor(session, usb2.Request.CLEAR_TELEMETRY)
    if in_length:
        value, index = usb2.encode_in_transfer(in_length, zlp)
        await _vendor(session, usb2.Request.SET_IN_TRANSFER, value, index)


@cocotb.test()
async def get_info_names_the_builds_features_and_bot_needs_the_framer(dut):
    """GET_INFO names what this build has; SET_DATA_MODE(BOT) STALLs without the framer and the
    device goes on streaming; a counter group left out reads 0 and the host leaves it out."""
    session = await _session(dut)
    info = await _vendor(session, usb2.Request.GET_INFO, length=usb2.INFO_SIZE)
    assert usb2.unpack_info(info)["features"] == FEATURES
    await _prepare(session, Pattern.COUNTER, 1000)
    await session.host.stream("in", EP_IN, 1000, 2, 1)  # two short packets
    data = await _vendor(session, usb2.Request.GET_TELEMETRY, length=usb2.TELEMETRY_SIZE)
    wire, decoded = usb2.unpack_telemetry(data), decode_telemetry(data, features=FEATURES).raw
    assert list(decoded) == list(usb2.present_words(FEATURES))
    assert wire["in_short"] == (2 if FEATURES & usb2.Feature.PACKET_SHAPES else 0)
    assert (wire["rx_packets"] > 0) == bool(FEATURES & usb2.Feature.RX_DROPS)
    assert decoded["in_bytes"] == 2000
    try:
        await _vendor(session, usb2.Request.SET_DATA_MODE, usb2.DataMode.BOT)
        stalled = False
    except TransferStall:
        stalled = True
    assert stalled == (not FEATURES & usb2.Feature.BOT)
    # Either way the next request is answered and the pattern streams from its start.
    await _vendor(session, usb2.Request.SET_DATA_MODE, usb2.DataMode.PATTERN)
    await _prepare(session, Pattern.PRBS31, 1024)
    chunks: list[bytes] = []
    await session.host.stream("in", EP_IN, 1024, 1, 1, sink=chunks.append)
    assert chunks == [PatternStream(Pattern.PRBS31).take(1024)]


@cocotb.test()
async def enumeration_reports_busprobe_descriptors(dut):
    session = await _session(dut)
    found = session.descriptors
    device = DeviceDescriptor.parse(found.device)
    assert (device.idVendor, device.idProduct) == (usb2.VID, usb2.PID)
    assert device.bcdUSB >= 2.0  # usb_protocol decodes BCD to a float
    config = ConfigurationDescriptor.parse(found.configuration[:9])
    assert config.wTotalLength == len(found.configuration)
    endpoints = {}
    offset = 0
    while offset < len(found.configuration):
        size, kind = found.configuration[offset], found.configuration[offset + 1]
        if kind == 5:
            ep = EndpointDescriptor.parse(found.configuration[offset:offset + size])
            endpoints[ep.bEndpointAddress] = ep.wMaxPacketSize
        offset += size
    assert endpoints == {usb2.EP_IN: usb2.MAX_PACKET_SIZE, usb2.EP_OUT: usb2.MAX_PACKET_SIZE}
    assert set(found.strings.values()) >= {usb2.MANUFACTURER, usb2.PRODUCT, usb2.SERIAL}
    info = await _vendor(session, usb2.Request.GET_INFO, length=usb2.INFO_SIZE)
    assert usb2.unpack_info(info)["version"] == usb2.PROTOCOL_VERSION
    # Interface 0 has one setting: GET_INTERFACE answers it, SET_INTERFACE to it restarts the
    # toggles on both ends (the IN transfer after it must start at DATA0 again).
    host = session.host
    assert await host.control(0x81, USBStandardRequests.GET_INTERFACE, 0, 0, 1) == b"\x00"
    await _prepare(session, Pattern.COUNTER, 512)
    await host.stream("in", EP_IN, 512, 1, 1)
    await host.control(0x01, USBStandardRequests.SET_INTERFACE, 0, 0)
    assert host.toggle(EP_IN, "in") == Pid.DATA0
    chunks: list[bytes] = []
    await host.stream("in", EP_IN, 512, 1, 1, sink=chunks.append)
    assert chunks == [PatternStream(Pattern.COUNTER).take(1024)[512:]]


async def _in_pattern(dut, pattern: Pattern) -> None:
    session = await _session(dut)
    length = 3 * 512 + 100  # a short packet ends each transfer
    await _prepare(session, pattern, length)
    expected = PatternStream(pattern)
    chunks: list[bytes] = []
    outcome = await session.host.stream("in", EP_IN, length, 5, 2, sink=chunks.append)
    assert [len(c) for c in chunks] == [length] * 5
    for chunk in chunks:
        result = expected.check(chunk)
        assert result.errors == 0, f"IN data differs from the pattern at {result}"
    telemetry = await _telemetry(session)
    assert telemetry["in_bytes"] == outcome.bytes == 5 * length
    assert telemetry["in_packets"] == 5 * 4


@cocotb.test()
async def in_data_equals_counter_pattern_across_transfers(dut):
    await _in_pattern(dut, Pattern.COUNTER)


@cocotb.test()
async def in_data_equals_prbs31_pattern_across_transfers(dut):
    await _in_pattern(dut, Pattern.PRBS31)


@cocotb.test()
async def out_pattern_accepted_and_one_corrupt_word_counted_once(dut):
    session = await _session(dut)
    await _prepare(session, Pattern.PRBS31)
    source = PatternStream(Pattern.PRBS31)
    await session.host.stream("out", EP_OUT, 4096, 4, 2, source=source.take)
    telemetry = await _telemetry(session)
    assert telemetry["out_bytes"] == 4 * 4096
    assert telemetry["pattern_errors"] == 0
    assert telemetry["first_error_offset"] == usb2.NO_ERROR_OFFSET

    corrupt_at = 4 * 4096 + 1000  # stream offset of the corrupted byte

    def corrupted(length: int) -> bytes:
        data = bytearray(source.take(length))
        start = source.offset - length
        if start <= corrupt_at < source.offset:
            data[corrupt_at - start] ^= 0x5A
        return bytes(data)

    await session.host.stream("out", EP_OUT, 4096, 2, 1, source=corrupted)
    telemetry = await _telemetry(session)
    assert telemetry["pattern_errors"] == 1
    assert telemetry["first_error_offset"] == corrupt_at


@cocotb.test()
async def data_toggles_alternate_across_transfers(dut):
    session = await _session(dut)
    host = session.host
    length = 3 * 512  # odd packet count: each transfer starts on the other toggle
    await _prepare(session, Pattern.COUNTER, length)
    expected = PatternStream(Pattern.COUNTER)
    for transfer in range(3):
        before = host.toggle(EP_IN, "in")
        chunks: list[bytes] = []
        outcome = await host.stream("in", EP_IN, length, 1, 1, sink=chunks.append)
        assert outcome.counters["repeats"] == 0, f"transfer {transfer}: device repeated a toggle"
        assert expected.check(chunks[0]).errors == 0
        after = host.toggle(EP_IN, "in")
        assert after != before, "three packets must leave the toggle flipped"
    source = PatternStream(Pattern.COUNTER)
    for _ in range(3):
        before = host.toggle(EP_OUT, "out")
        await host.stream("out", EP_OUT, length, 1, 1, source=source.take)
        assert host.toggle(EP_OUT, "out") != before
    telemetry = await _telemetry(session)
    # A toggle mismatch makes the device drop a packet as a repeat: bytes would go missing.
    assert telemetry["out_bytes"] == 3 * length and telemetry["pattern_errors"] == 0
    assert telemetry["out_packets"] == 9


async def _termination(dut, direction: str, length: int, zlp: bool) -> None:
    session = await _session(dut)
    count = 3
    if direction == "in":
        await _prepare(session, Pattern.COUNTER, length, zlp)
        # With a ZLP the host buffer is larger than the device's transfer, as a reader that
        # does not know the length would ask; the ZLP (or short packet) ends it at `length`.
        asked = length + 512 if zlp else length
        chunks: list[bytes] = []
        await session.host.stream("in", EP_IN, asked, count, 1, sink=chunks.append)
        assert [len(c) for c in chunks] == [length] * count
    else:
        await _prepare(session, Pattern.COUNTER)
        source = PatternStream(Pattern.COUNTER)
        await session.host.stream("out", EP_OUT, length, count, 1, source=source.take, zlp=zlp)
    telemetry = await _telemetry(session)
    short = length % 512 != 0
    assert telemetry[f"{direction}_bytes"] == count * length
    assert telemetry[f"{direction}_short"] == (count if short else 0)
    assert telemetry[f"{direction}_zlps"] == (count if zlp and not short else 0)
    if direction == "out":
        assert telemetry["pattern_errors"] == 0


@cocotb.test()
async def in_short_packet_ends_transfer_not_multiple_of_512(dut):
    await _termination(dut, "in", 1000, zlp=False)


@cocotb.test()
async def in_zlp_ends_transfer_multiple_of_512(dut):
    await _termination(dut, "in", 1024, zlp=True)


@cocotb.test()
async def out_short_packet_ends_transfer_not_multiple_of_512(dut):
    await _termination(dut, "out", 1000, zlp=False)


@cocotb.test()
async def out_zlp_ends_transfer_multiple_of_512(dut):
    await _termination(dut, "out", 1024, zlp=True)


@cocotb.test()
async def ideal_host_sees_no_naks_over_128_back_to_back_packets(dut):
    session = await _session(dut, "ideal")
    await _prepare(session, Pattern.COUNTER, 64 << 10)
    inbound = await session.host.stream("in", EP_IN, 64 << 10, 1, 1)
    source = PatternStream(Pattern.COUNTER)
    outbound = await session.host.stream("out", EP_OUT, 64 << 10, 1, 1, source=source.take)
    telemetry = await _telemetry(session)
    assert inbound.counters["transactions"] == 128 and inbound.counters["naks"] == 0
    assert outbound.counters["transactions"] >= 128 and outbound.counters["naks"] == 0
    assert telemetry["in_naks"] == 0 and telemetry["out_naks"] == 0
    assert telemetry["in_packets"] == 128 and telemetry["out_packets"] == 128
    # The ideal host fills every microframe: 13 packets each (USB 2.0 Table 5-10).
    assert telemetry["in_tokens_max_uframe"] == 13
    assert telemetry["out_tokens_max_uframe"] == 13


@cocotb.test()
async def loopback_returns_every_byte_and_packet_boundary_the_host_sent(dut):
    session = await _session(dut, "ideal")
    await _prepare(session, Pattern.PRBS31)
    await _vendor(session, usb2.Request.SET_DATA_MODE, usb2.DataMode.LOOPBACK)
    await _vendor(session, usb2.Request.CLEAR_TELEMETRY)
    sent, back = PatternStream(Pattern.PRBS31), PatternStream(Pattern.PRBS31)
    for length, count, depth in ((1000, 3, 1), (4096, 4, 2), (300, 2, 2)):
        chunks: list[bytes] = []
        outcome = await session.host.loopback(EP_OUT, EP_IN, length, count, depth,
                                              source=sent.take, sink=chunks.append)
        # Short packets came back short: every IN transfer ends where its OUT transfer did.
        assert [len(c) for c in chunks] == [length] * count
        assert outcome.bytes == length * count
        for chunk in chunks:
            assert back.check(chunk).errors == 0
    telemetry = await _telemetry(session)
    moved = 1000 * 3 + 4096 * 4 + 300 * 2
    assert telemetry["out_bytes"] == telemetry["in_bytes"] == moved
    assert telemetry["pattern_errors"] == 0   # the device checked what the host sent, too
    # Back to the pattern: the IN source starts over at byte 0, nothing of the loop left.
    await _vendor(session, usb2.Request.SET_DATA_MODE, usb2.DataMode.PATTERN)
    chunks = []
    value, index = usb2.encode_in_transfer(2048)
    await _vendor(session, usb2.Request.SET_IN_TRANSFER, value, index)
    await session.host.stream("in", EP_IN, 2048, 1, 1, sink=chunks.append)
    assert chunks == [PatternStream(Pattern.PRBS31).take(2048)]


@cocotb.test()
async def bus_reset_mid_transfer_then_reenumeration_and_clean_transfer(dut):
    session = await _session(dut)
    await _prepare(session, Pattern.COUNTER, 1 << 20)
    task = cocotb.start_soon(session.host.stream("in", EP_IN, 1 << 20, 1, 1))
    await session.phy.wait_cycles(20 * 7500)  # 20 microframes into a 1 MiB transfer
    assert not task.done()
    task.cancel()
    await session.reset_and_enumerate()
    await _prepare(session, Pattern.PRBS31, 8192)
    expected = PatternStream(Pattern.PRBS31)
    chunks: list[bytes] = []
    await session.host.stream("in", EP_IN, 8192, 2, 2, sink=chunks.append)
    assert [len(c) for c in chunks] == [8192, 8192]
    for chunk in chunks:
        assert expected.check(chunk).errors == 0


@cocotb.test()
async def hostile_bus_packets_dropped_counted_and_device_recovers(dut):
    """Thousands of corrupted packets among valid bulk traffic (sim/usb2/hostile.py): none is
    answered, no byte is lost or duplicated, each drop is counted in its class; afterwards the
    device enumerates after a bus reset and streams clean."""
    corrupted = int(os.environ.get("BUSPROBE_HOSTILE_PACKETS", "10000"))
    seed = int(os.environ.get("BUSPROBE_HOSTILE_SEED", "13"))
    session = await _session(dut)
    await _prepare(session, Pattern.PRBS31, 1 << 30)
    tally = await HostileHost(session, Pattern.PRBS31, seed).run(corrupted)
    telemetry = await _telemetry(session)
    dut._log.warning("hostile bus, seed %d: %d faults %s; drops %s; %d packets sent, "
                     "%d received", seed, corrupted, dict(tally.faults),
                     {name: telemetry[name] for name in DROP_COUNTERS}, tally.packets,
                     telemetry["rx_packets"])
    assert sum(tally.faults.values()) == corrupted
    assert {name: telemetry[name] for name in DROP_COUNTERS} == \
        {name: tally.drops[name] for name in DROP_COUNTERS}
    assert telemetry["out_duplicates"] == tally.duplicates == tally.faults["toggle_error"]
    assert telemetry["pattern_errors"] == 0 and tally.in_errors == 0
    assert telemetry["out_bytes"] == tally.out_bytes > 0
    assert telemetry["in_bytes"] == tally.in_bytes > 0
    assert tally.in_repeats == tally.faults["corrupt_ack"]
    assert telemetry["rx_packets"] >= tally.packets

    await session.reset_and_enumerate()
    await _prepare(session, Pattern.PRBS31, 64 << 10)
    expected = PatternStream(Pattern.PRBS31)
    chunks: list[bytes] = []
    await session.host.stream("in", EP_IN, 64 << 10, 2, 2, sink=chunks.append)
    source = PatternStream(Pattern.PRBS31)
    await session.host.stream("out", EP_OUT, 64 << 10, 2, 2, source=source.take)
    telemetry = await _telemetry(session)
    assert [len(c) for c in chunks] == [64 << 10] * 2
    assert sum(expected.check(c).errors for c in chunks) == 0
    assert telemetry["pattern_errors"] == 0 and telemetry["out_bytes"] == 128 << 10
    assert all(telemetry[name] == 0 for name in (*DROP_COUNTERS, "out_duplicates"))


@cocotb.test()
async def control_read_with_bulk_acks_between_its_stages_returns_every_byte(dut):
    """Bulk IN packets, each ACKed, between the SETUP, the three data packets and the status
    stage of GET_TELEMETRY: the request handler must not take those ACKs as its own (the bug
    class of luna PR #139, which the handler avoids by taking an ACK only right after it sent)."""
    session = await _session(dut)
    await _prepare(session, Pattern.PRBS31, 1 << 30)
    hostile = HostileHost(session, Pattern.PRBS31, seed=139)
    data = await session.host.control(VENDOR_IN, usb2.Request.GET_TELEMETRY, 0, 0,
                                      usb2.TELEMETRY_SIZE, between=hostile.valid_in)
    assert len(data) == usb2.TELEMETRY_SIZE
    assert decode_telemetry(data).raw["in_bytes"] == 0  # the snapshot is taken at SETUP
    assert (await _telemetry(session))["in_bytes"] == hostile.tally.in_bytes == 4 * 512
    assert hostile.tally.in_errors == 0 and hostile.tally.in_repeats == 0


@cocotb.test()
async def descriptor_read_with_bulk_acks_between_its_stages_returns_every_byte(dut):
    """The same for LUNA's standard GET_DESCRIPTOR handler (luna PR #139 saw it skip ahead)."""
    session = await _session(dut)
    await _prepare(session, Pattern.PRBS31, 1 << 30)
    hostile = HostileHost(session, Pattern.PRBS31, seed=139)
    for kind, length in ((1, 18), (2, 255), (3, 255)):
        data = await session.host.control(0x80, 6, (kind << 8) | (kind == 3),
                                          0x0409 if kind == 3 else 0, length,
                                          between=hostile.valid_in)
        expected = await session.get_descriptor(kind, kind == 3, length,
                                                0x0409 if kind == 3 else 0)
        assert data == expected, (kind, data.hex(), expected.hex())
