"""The standard requests the device's one EP0 handler answers (LUNA's standard handler is not
built): GET_STATUS, GET/SET_CONFIGURATION, SET_ADDRESS, CLEAR_FEATURE(ENDPOINT_HALT),
GET/SET_INTERFACE."""

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
        ctx.set(dut.interface.data_requested, 1)
        got["interface 1 stalled"] = ctx.get(dut.interface.handshakes_out.stall)
        ctx.set(dut.interface.data_requested, 0)

    run(dut, testbench)
    assert got == {"get": (b"\x00", 1), "set 0": "ZLP", "set 1": "STALL",
                   "interface 1 stalled": 1}
