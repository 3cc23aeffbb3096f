"""sim:usb2 Transport plumbing: selector errors, the RPC framing, the PHY stall mask, and a
simulator that dies mid-run."""

from __future__ import annotations

import os
import signal
import socket
import threading

import pytest
from busprobe.model import usb2_wire as wire
from busprobe.selectors import open_transport
from busprobe.sim.usb2.phy import stall_mask
from busprobe.sim.usb2.rpc import ConnectionClosed, recv_message, send_message
from busprobe.transport import DeviceGone, InvalidRequest


@pytest.mark.parametrize(("selector", "message"), [
    ("sim:usb2?host=nosuch", "unknown host profile 'nosuch'"),
    ("sim:usb2?design=other", "design must be busprobe or stock"),
    ("sim:usb2?speed=full", "unknown option(s) speed"),
])
def test_bad_selector_options_are_one_line_errors(selector, message):
    with pytest.raises(InvalidRequest) as info:
        open_transport(selector)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_rpc_carries_header_and_raw_payload_and_reports_a_closed_peer():
    left, right = socket.socketpair()
    payload = bytes(range(256)) * 4100  # larger than the socket buffer and one recv
    sender = threading.Thread(target=send_message, args=(left, {"op": "data", "n": 1}, payload))
    sender.start()
    assert recv_message(right) == ({"op": "data", "n": 1}, payload)
    sender.join()
    left.close()
    with pytest.raises(ConnectionClosed):
        recv_message(right)
    right.close()


def test_stall_mask_costs_one_cycle_per_eight_stuffed_bits():
    assert stall_mask(wire.token_bytes(wire.Pid.IN, 7, 1)) == 0
    packet = wire.data_bytes(wire.Pid.DATA0, b"\xff" * 64)  # 512 ones: 85 stuffed bits
    mask = stall_mask(packet)
    assert bin(mask).count("1") == wire.stuff_bits(packet) // 8
    assert mask & 1 == 0  # never before the PID


@pytest.mark.sim
def test_simulator_that_dies_raises_device_gone_with_its_log_line(usb2_model):
    transport = open_transport("sim:usb2")
    transport.open()
    try:
        os.killpg(transport._process.pid, signal.SIGKILL)  # the simulator crashes
        with pytest.raises(DeviceGone) as info:
            transport.read_telemetry()
        assert "simulator exited" in str(info.value)
    finally:
        transport.close()
    assert transport._process is None
