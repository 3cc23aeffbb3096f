"""EP0 of the SuperSpeed device: LUNA's control endpoint with busprobe's descriptors and
vendor requests, driven at the endpoint interface the protocol layer feeds."""

import struct

import pytest
from busprobe.gateware.usb3.tests.control_driver import (
    ControlEndpointUnderTest,
    control_in,
    control_out,
    run_ss,
    setup_packet,
)
from busprobe.protocol import usb3
from usb_protocol.types.descriptors.standard import StandardDescriptorNumbers as DescriptorTypes

VENDOR_IN, VENDOR_OUT, STANDARD_IN = 0xC0, 0x40, 0x80
GET_DESCRIPTOR = 6


def run(body):
    return run_ss(ControlEndpointUnderTest(), body)


def test_get_info_answers_the_protocol_info():
    async def body(ctx, dut, results):
        results["info"] = await control_in(
            ctx, dut.interface, setup_packet(VENDOR_IN, usb3.Request.GET_INFO,
                                             length=usb3.INFO_SIZE))
    data, status = run(body)["info"]
    assert status == "ack"
    assert usb3.unpack_info(data)["max_burst_packets"] == usb3.MAX_BURST_PACKETS


def test_get_telemetry_is_the_snapshot_at_setup_and_respects_wlength():
    values = {name: 0x0101_0101 * (i + 1) & 0xFFFF_FFFF for i, (name, _) in
              enumerate(usb3.TELEMETRY)}
    values["magic"] = usb3.MAGIC

    async def body(ctx, dut, results):
        for i, (name, _) in enumerate(usb3.TELEMETRY):
            ctx.set(dut.telemetry[i], values[name])
        results["full"] = await control_in(ctx, dut.interface, setup_packet(
            VENDOR_IN, usb3.Request.GET_TELEMETRY, length=usb3.TELEMETRY_SIZE))
        results["short"] = await control_in(ctx, dut.interface, setup_packet(
            VENDOR_IN, usb3.Request.GET_TELEMETRY, length=10))

    results = run(body)
    data, status = results["full"]
    assert status == "ack" and usb3.unpack_telemetry(data) == values
    assert results["short"][0] == usb3.pack_telemetry(values)[:10]


def test_set_in_transfer_and_pattern_take_effect_at_the_status_stage():
    async def body(ctx, dut, results):
        value, index = usb3.encode_in_transfer(5000, zlp=True)
        results["status"] = await control_out(ctx, dut.interface, setup_packet(
            VENDOR_OUT, usb3.Request.SET_IN_TRANSFER, value, index))
        results["length"] = ctx.get(dut.requests.in_transfer_length)
        results["zlp"] = ctx.get(dut.requests.in_zlp)
        results["pattern"] = await control_out(ctx, dut.interface, setup_packet(
            VENDOR_OUT, usb3.Request.SET_PATTERN, 1))
        results["selected"] = ctx.get(dut.requests.pattern)

    results = run(body)
    assert (results["status"], results["length"], results["zlp"]) == ("ack", 5000, 1)
    assert (results["pattern"], results["selected"]) == ("ack", 1)


def test_set_data_mode_selects_loopback_at_the_status_stage():
    async def body(ctx, dut, results):
        results["status"] = await control_out(ctx, dut.interface, setup_packet(
            VENDOR_OUT, usb3.Request.SET_DATA_MODE, usb3.DataMode.LOOPBACK))
        results["mode"] = ctx.get(dut.requests.data_mode)

    results = run(body)
    assert (results["status"], results["mode"]) == ("ack", usb3.DataMode.LOOPBACK)


@pytest.mark.parametrize("packet", [
    setup_packet(VENDOR_OUT, 0x7E),  # unknown vendor request
    setup_packet(VENDOR_OUT, usb3.Request.SET_PATTERN, 9),  # no such pattern
    setup_packet(VENDOR_OUT, usb3.Request.SET_DATA_MODE, 2),  # BOT: not on SuperSpeed
    setup_packet(0x21, 0x01),  # class request
])
def test_requests_the_device_does_not_implement_stall(packet):
    async def body(ctx, dut, results):
        results["status"] = await control_out(ctx, dut.interface, packet)
    assert run(body)["status"] == "stall"


@pytest.mark.parametrize("descriptor", [DescriptorTypes.DEVICE, DescriptorTypes.CONFIGURATION,
                                        DescriptorTypes.BOS])
def test_standard_descriptors_come_from_the_protocol(descriptor):
    async def body(ctx, dut, results):
        results["data"] = await control_in(ctx, dut.interface, setup_packet(
            STANDARD_IN, GET_DESCRIPTOR, descriptor << 8, length=255))
    data, status = run(body)["data"]
    assert status == "ack" and data[1] == descriptor
    if descriptor == DescriptorTypes.DEVICE:
        assert struct.unpack_from("<HBBBBHH", data, 2)[5:] == (usb3.VID, usb3.PID)
        assert data[2:4] == b"\x00\x03" and data[7] == 9  # bcdUSB 3.00, 2**9-byte EP0
    if descriptor == DescriptorTypes.CONFIGURATION:
        assert len(data) == struct.unpack_from("<H", data, 2)[0]
        companions = [i for i in range(len(data) - 1) if data[i:i + 2] == b"\x06\x30"]
        assert [data[i + 2] for i in companions] == [usb3.MAX_BURST, usb3.MAX_BURST]
