"""The SuperSpeed EP0's standard requests (USB 3.2 chapter 9) at the endpoint interface: what the
handler tells the rest of the device (halts, sequence restarts, U1/U2) and what it answers.
(Every request, recipient and state against the whole device is the cocotb request matrix,
``sim/usb3/tests/chapter9_cocotb.py``.)"""

from amaranth.sim import Simulator
from busprobe.gateware.usb3.standard_requests import SuperSpeedFeature
from busprobe.gateware.usb3.tests.control_driver import (
    ControlEndpointUnderTest,
    control_in,
    control_out,
    setup_packet,
)
from busprobe.protocol import usb3

TO_DEVICE, TO_INTERFACE, TO_ENDPOINT = 0x00, 0x01, 0x02
FROM_DEVICE, FROM_INTERFACE, FROM_ENDPOINT = 0x80, 0x81, 0x82
GET_STATUS, CLEAR_FEATURE, SET_FEATURE, GET_DESCRIPTOR = 0, 1, 3, 6
HALT = 0


def run(body, configuration):
    dut = ControlEndpointUnderTest()
    sim = Simulator(dut)
    sim.add_clock(8e-9, domain="ss")
    results = {"restarts": []}

    async def testbench(ctx):
        ctx.set(dut.configuration, configuration)
        await body(ctx, dut, results)

    async def watch(ctx):
        async for _, _, restart_in, restart_out in ctx.tick("ss").sample(
                dut.standard.restart_in,
                dut.standard.restart_out):
            if restart_in or restart_out:
                results["restarts"].append((restart_in, restart_out))

    sim.add_testbench(testbench)
    sim.add_process(watch)
    sim.run()
    return results


async def status(ctx, dut, request_type, index=0):
    data, answer = await control_in(ctx, dut.interface, setup_packet(request_type, GET_STATUS,
                                                                     index=index, length=2))
    return data if answer == "ack" else answer


def test_u1_u2_enable_show_in_the_device_status_and_other_device_features_stall():
    async def body(ctx, dut, results):
        out = dut.interface
        results["u1"] = await control_out(ctx, out, setup_packet(
            TO_DEVICE, SET_FEATURE, SuperSpeedFeature.U1_ENABLE))
        results["status u1"] = await status(ctx, dut, FROM_DEVICE)
        await control_out(ctx, out, setup_packet(TO_DEVICE, SET_FEATURE,
                                                 SuperSpeedFeature.U2_ENABLE))
        await control_out(ctx, out, setup_packet(TO_DEVICE, CLEAR_FEATURE,
                                                 SuperSpeedFeature.U1_ENABLE))
        results["status u2"] = await status(ctx, dut, FROM_DEVICE)
        results["ltm"] = await control_out(ctx, out, setup_packet(
            TO_DEVICE, SET_FEATURE, SuperSpeedFeature.LTM_ENABLE))
        results["test mode"] = await control_out(ctx, out, setup_packet(TO_DEVICE, SET_FEATURE,
                                                                        2, 0x0400))
        results["suspend"] = await control_out(ctx, out, setup_packet(
            TO_INTERFACE, SET_FEATURE, SuperSpeedFeature.FUNCTION_SUSPEND, 0x0100))
        results["interface"] = await status(ctx, dut, FROM_INTERFACE, 0)

    got = run(body, configuration=1)
    assert (got["u1"], got["status u1"], got["status u2"]) == ("ack", b"\x04\x00", b"\x08\x00")
    assert (got["ltm"], got["test mode"]) == ("stall", "stall")
    assert (got["suspend"], got["interface"]) == ("ack", b"\x00\x00")


def test_endpoint_halt_is_set_reported_and_cleared_with_a_sequence_restart():
    async def body(ctx, dut, results):
        out, standard = dut.interface, dut.standard
        results["set"] = await control_out(ctx, out, setup_packet(TO_ENDPOINT, SET_FEATURE,
                                                                  HALT, usb3.EP_IN))
        results["halts"] = (ctx.get(standard.halt_in), ctx.get(standard.halt_out))
        results["status"] = [await status(ctx, dut, FROM_ENDPOINT, index)
                             for index in (usb3.EP_IN, usb3.EP_OUT, 0x00, 0x83)]
        results["set ep0"] = await control_out(ctx, out, setup_packet(TO_ENDPOINT, SET_FEATURE,
                                                                      HALT, 0x00))
        results["clear"] = await control_out(ctx, out, setup_packet(TO_ENDPOINT, CLEAR_FEATURE,
                                                                    HALT, usb3.EP_IN))
        results["cleared"] = (ctx.get(standard.halt_in), ctx.get(standard.halt_out))

    got = run(body, configuration=1)
    assert (got["set"], got["halts"]) == ("ack", (1, 0))
    assert got["status"] == [b"\x01\x00", b"\x00\x00", b"\x00\x00", "stall"]
    assert (got["set ep0"], got["clear"], got["cleared"]) == ("stall", "ack", (0, 0))
    assert got["restarts"] == [(1, 0)]   # the IN endpoint's sequence starts over


def test_in_the_address_state_only_endpoint_zero_and_the_device_exist():
    async def body(ctx, dut, results):
        out = dut.interface
        results["endpoint"] = await status(ctx, dut, FROM_ENDPOINT, usb3.EP_IN)
        results["endpoint zero"] = await status(ctx, dut, FROM_ENDPOINT, 0x80)
        results["interface"] = await status(ctx, dut, FROM_INTERFACE, 0)
        results["halt"] = await control_out(ctx, out, setup_packet(TO_ENDPOINT, SET_FEATURE,
                                                                   HALT, usb3.EP_OUT))
        results["u1"] = await control_out(ctx, out, setup_packet(
            TO_DEVICE, SET_FEATURE, SuperSpeedFeature.U1_ENABLE))
        results["qualifier"] = (await control_in(ctx, out, setup_packet(
            FROM_DEVICE, GET_DESCRIPTOR, 6 << 8, length=10)))[1]

    got = run(body, configuration=0)
    assert got == {"endpoint": "stall", "endpoint zero": b"\x00\x00", "interface": "stall",
                   "halt": "stall", "u1": "stall", "qualifier": "stall", "restarts": []}


def test_set_configuration_and_set_interface_end_every_halt_and_restart_both_endpoints():
    async def body(ctx, dut, results):
        out, standard = dut.interface, dut.standard
        for request, value in ((9, 1), (11, 0)):   # SET_CONFIGURATION 1, SET_INTERFACE 0
            await control_out(ctx, out, setup_packet(TO_ENDPOINT, SET_FEATURE, HALT,
                                                     usb3.EP_OUT))
            halted = ctx.get(standard.halt_out)
            recipient = TO_DEVICE if request == 9 else TO_INTERFACE
            answer = await control_out(ctx, out, setup_packet(recipient, request, value))
            results[request] = (halted, answer, ctx.get(standard.halt_out))

    got = run(body, configuration=1)
    assert got[9] == got[11] == (1, "ack", 0)
    assert got["restarts"] == [(1, 1), (1, 1)]
