"""The standard requests the device's one EP0 handler answers (LUNA's standard handler is not
built): GET_STATUS, GET/SET_CONFIGURATION, SET_ADDRESS, SET/CLEAR_FEATURE(ENDPOINT_HALT),
GET/SET_INTERFACE. (Every request, recipient and state against the whole device is the cocotb
request matrix, ``sim/chapter9.py``.)"""

from busprobe.protocol import usb2
from usb_protocol.types import (
    USBRequestRecipient,
    USBRequestType,
    USBStandardFeatures,
    USBStandardRequests,
)

from .test_request_handler import HandlerWithSnapshot, read_packet, run, setup, strobe
from .test_request_handler import status_stage as request_status_stage


async def standard(ctx, dut, request, *, recipient=USBRequestRecipient.DEVICE, is_in=False,
                   **fields):
    await setup(ctx, dut, request, kind=USBRequestType.STANDARD, recipient=recipient,
                is_in=is_in, **fields)


async def status_stage(ctx, dut, *, foreign_ack_first=False):
    """The answer to a no-data standard request's status stage, and the address, configuration
    or endpoint halt the handler changed on the host's ACK."""
    interface = dut.interface
    halt = interface.clear_endpoint_halt

    def observe():
        return {
            "address": (ctx.get(interface.new_address) if ctx.get(interface.address_changed)
                        else None),
            "config": ctx.get(interface.new_config) if ctx.get(interface.config_changed) else None,
            "halt": ((ctx.get(halt.number), ctx.get(halt.direction))
                     if ctx.get(halt.enable) else None),
        }

    return await request_status_stage(ctx, dut, observe, foreign_ack_first=foreign_ack_first)


def test_get_status_and_get_configuration_answer_from_the_snapshot_ram():
    dut = HandlerWithSnapshot()
    got = []

    async def testbench(ctx):
        ctx.set(dut.interface.active_config, 1)
        for recipient in (USBRequestRecipient.DEVICE, USBRequestRecipient.ENDPOINT):
            await standard(ctx, dut, USBStandardRequests.GET_STATUS, recipient=recipient,
                           is_in=True, length=2)
            got.append((await read_packet(ctx, dut))[0])
            await strobe(ctx, dut.interface.status_requested)
        for config in (0, 1):
            ctx.set(dut.interface.active_config, config)
            await standard(ctx, dut, USBStandardRequests.GET_CONFIGURATION, is_in=True, length=1)
            got.append((await read_packet(ctx, dut))[0])
            await strobe(ctx, dut.interface.status_requested)

    run(dut, testbench)
    assert got == [b"\0\0", b"\0\0", b"\0", b"\1"]


def test_set_address_and_configuration_take_effect_on_the_ack_of_their_status_stage():
    dut = HandlerWithSnapshot()
    got = {}

    async def testbench(ctx):
        await standard(ctx, dut, USBStandardRequests.SET_ADDRESS, value=42)
        # An ACK for a bulk packet before the status stage must not move the address early.
        got["address"] = await status_stage(ctx, dut, foreign_ack_first=True)
        await standard(ctx, dut, USBStandardRequests.SET_CONFIGURATION, value=1)
        got["config 1"] = await status_stage(ctx, dut)
        await standard(ctx, dut, USBStandardRequests.SET_CONFIGURATION, value=2)
        got["config 2"] = await status_stage(ctx, dut)

    run(dut, testbench)
    nothing = {"address": None, "config": None, "halt": None}
    assert got["address"] == ("ZLP", nothing | {"address": 42})
    assert got["config 1"] == ("ZLP", nothing | {"config": 1})
    assert got["config 2"] == ("STALL", nothing)   # the device has one configuration


def test_clear_feature_endpoint_halt_restarts_that_endpoint_and_other_features_stall():
    dut = HandlerWithSnapshot()
    got = []

    async def testbench(ctx):
        ctx.set(dut.interface.active_config, 1)
        for recipient, feature, index in (
                (USBRequestRecipient.ENDPOINT, USBStandardFeatures.ENDPOINT_HALT, 0x81),
                (USBRequestRecipient.ENDPOINT, USBStandardFeatures.ENDPOINT_HALT, 0x02),
                (USBRequestRecipient.DEVICE, USBStandardFeatures.DEVICE_REMOTE_WAKEUP, 0)):
            await standard(ctx, dut, USBStandardRequests.CLEAR_FEATURE, recipient=recipient,
                           value=feature, index=index)
            got.append(await status_stage(ctx, dut))

    run(dut, testbench)
    nothing = {"address": None, "config": None, "halt": None}
    assert got == [("ZLP", nothing | {"halt": (1, 1)}), ("ZLP", nothing | {"halt": (2, 0)}),
                   ("STALL", nothing)]


def test_get_interface_answers_setting_zero_and_set_interface_accepts_only_it():
    dut = HandlerWithSnapshot()
    got = {}

    async def testbench(ctx):
        ctx.set(dut.interface.active_config, 1)
        await standard(ctx, dut, USBStandardRequests.GET_INTERFACE,
                       recipient=USBRequestRecipient.INTERFACE, is_in=True, length=1)
        got["get"] = await read_packet(ctx, dut)
        await strobe(ctx, dut.interface.status_requested)
        for value in (0, 1):
            await standard(ctx, dut, USBStandardRequests.SET_INTERFACE,
                           recipient=USBRequestRecipient.INTERFACE, value=value)
            got[f"set {value}"] = (await status_stage(ctx, dut))[0]
        await standard(ctx, dut, USBStandardRequests.GET_INTERFACE,
                       recipient=USBRequestRecipient.INTERFACE, is_in=True, index=1, length=1)
        await strobe(ctx, dut.interface.data_requested)
        got["interface 1 stalled"] = ctx.get(dut.interface.handshakes_out.stall)

    run(dut, testbench)
    assert got == {"get": (b"\x00", 1), "set 0": "ZLP", "set 1": "STALL",
                   "interface 1 stalled": 1}


async def endpoint_status(ctx, dut, index):
    await standard(ctx, dut, USBStandardRequests.GET_STATUS,
                   recipient=USBRequestRecipient.ENDPOINT, is_in=True, index=index, length=2)
    status = (await read_packet(ctx, dut))[0]
    await strobe(ctx, dut.interface.status_requested)
    return status


def test_set_feature_halts_a_bulk_endpoint_get_status_shows_it_clear_feature_ends_it():
    """SET_FEATURE(ENDPOINT_HALT) halts the endpoint it names (the halt output the endpoint
    STALLs by), GET_STATUS reports bit 0 of that one only, CLEAR_FEATURE ends it; SET_INTERFACE
    and leaving the Configured state end every halt."""
    dut = HandlerWithSnapshot()
    got = {}
    halt = USBStandardFeatures.ENDPOINT_HALT

    async def set_halt(ctx, index):
        await standard(ctx, dut, USBStandardRequests.SET_FEATURE,
                       recipient=USBRequestRecipient.ENDPOINT, value=halt, index=index)
        return (await status_stage(ctx, dut))[0]

    def halts(ctx):
        return ctx.get(dut.halt_in), ctx.get(dut.halt_out)

    async def testbench(ctx):
        ctx.set(dut.interface.active_config, 1)
        got["set in"] = await set_halt(ctx, usb2.EP_IN)
        got["after set in"] = halts(ctx)
        got["status"] = [await endpoint_status(ctx, dut, index)
                         for index in (usb2.EP_IN, usb2.EP_OUT, 0)]
        got["set out"] = await set_halt(ctx, usb2.EP_OUT)
        got["set ep0"] = await set_halt(ctx, 0)     # endpoint 0 has no halt here
        await standard(ctx, dut, USBStandardRequests.CLEAR_FEATURE,
                       recipient=USBRequestRecipient.ENDPOINT, value=halt, index=usb2.EP_IN)
        got["clear in"] = await status_stage(ctx, dut)
        got["after clear in"] = halts(ctx)
        await standard(ctx, dut, USBStandardRequests.SET_INTERFACE,
                       recipient=USBRequestRecipient.INTERFACE)
        await status_stage(ctx, dut)
        got["after set interface"] = halts(ctx)
        await set_halt(ctx, usb2.EP_OUT)
        ctx.set(dut.interface.active_config, 0)     # a bus reset
        await ctx.tick("usb")
        got["after reset"] = halts(ctx)
        got["unconfigured"] = await set_halt(ctx, usb2.EP_OUT)

    run(dut, testbench)
    nothing = {"address": None, "config": None, "halt": None}
    assert got == {
        "set in": "ZLP", "after set in": (1, 0), "status": [b"\1\0", b"\0\0", b"\0\0"],
        "set out": "ZLP", "set ep0": "STALL",
        "clear in": ("ZLP", nothing | {"halt": (usb2.EP_IN & 0xF, 1)}),
        "after clear in": (0, 1), "after set interface": (0, 0), "after reset": (0, 0),
        "unconfigured": "STALL"}
