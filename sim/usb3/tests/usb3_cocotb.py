"""cocotb tests of the SuperSpeed device at its PIPE interface, driven by the link partner model.

Run by test_usb3_sim.py in one simulator process; each test starts from a reset. Measured
figures are appended as JSON lines to ``$BUSPROBE_USB3_FIGURES`` when it is set.
"""

from __future__ import annotations

import json
import os
import time

import cocotb
from busprobe.sim.usb3.pipe import CLOCK_HZ, TS1, TS2, TSEQ, PipePartnerDriver
from busprobe.sim.usb3.training import train_to_u0


def record(**figures: object) -> None:
    path = os.environ.get("BUSPROBE_USB3_FIGURES")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(figures) + "\n")


@cocotb.test()
async def device_trains_to_u0(dut) -> None:
    """LFPS, TSEQ, TS1, TS2, idle: the device's LTSSM reaches U0 and stays there."""
    partner = PipePartnerDriver(dut)
    await partner.start()
    assert not int(dut.link_trained.value)
    wall = time.monotonic()
    result = await train_to_u0(partner)
    wall = time.monotonic() - wall
    # The device enters U0 on its idle handshake: within a few cycles of ours.
    for _ in range(16):
        if int(dut.link_trained.value):
            break
        await partner.wait_cycles(1)
    tseq = partner.received_sets(TSEQ)[1]
    record(test="device_trains_to_u0", steps=result.steps, wall_s=wall, tseq_received=tseq,
           training_us=result.u0_cycle / CLOCK_HZ * 1e6, cycles_per_s=result.u0_cycle / wall)
    assert int(dut.link_trained.value), f"device not in U0 after the host's U0 ({result.steps})"
    # LUNA sends 65,536 TSEQ, but its LFPS generator holds electrical idle to the end of the
    # last LFPS period (up to 10 us = 156 sets) while the first ones are emitted.
    lfps_period_sets = 10e-6 * CLOCK_HZ / len(TSEQ.words)
    assert 65536 - lfps_period_sets <= tseq <= 65536, f"{tseq} TSEQ received"
    assert partner.received_sets(TS1)[1] >= 8 and partner.received_sets(TS2)[1] >= 8


@cocotb.test()
async def enumeration_reads_superspeed_descriptors_and_info(dut) -> None:
    """Advertisement, then enumeration through the model; descriptors parsed with usb-protocol."""
    from busprobe.protocol import usb3 as contract
    from busprobe.sim.usb3.session import Usb3Session
    from usb_protocol.types.descriptors.standard import (
        BinaryObjectStoreDescriptor,
        ConfigurationDescriptor,
        DeviceDescriptor,
    )

    session = Usb3Session(dut)
    await session.partner.start()
    wall = time.monotonic()
    await session.bring_up_link()
    start = session.partner.cycle
    descriptors = await session.enumerate()
    device = DeviceDescriptor.parse(descriptors.device)
    assert device.bcdUSB >= 3.0 and device.bMaxPacketSize0 == 9
    assert (device.idVendor, device.idProduct) == (contract.VID, contract.PID)
    configuration = ConfigurationDescriptor.parse(descriptors.configuration)
    assert configuration.wTotalLength == len(descriptors.configuration)
    bos = BinaryObjectStoreDescriptor.parse(descriptors.bos)
    assert bos.wTotalLength == len(descriptors.bos) and bos.bNumDeviceCaps >= 1
    assert int(dut.configuration.value) == descriptors.configuration[5]
    info = contract.unpack_info(await session.protocol.control(
        0xC0, contract.Request.GET_INFO, 0, 0, contract.INFO_SIZE))
    assert info["max_packet_size"] == contract.MAX_PACKET_SIZE
    record(test="enumeration", enumeration_us=(session.partner.cycle - start) / CLOCK_HZ * 1e6,
           wall_s=time.monotonic() - wall, link=vars(session.link.counters))
