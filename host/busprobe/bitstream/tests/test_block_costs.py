"""Block costs: cells of a flattened netlist attributed to the blocks of the design."""

import json

import pytest
from busprobe.bitstream.block_costs import block_costs, cost_table


def netlist(tmp_path, cells):
    path = tmp_path / "top.json"
    path.write_text(json.dumps({"modules": {"top": {"cells": {
        name: {"type": kind} for name, kind in cells}}}}))
    return path


def test_cells_are_attributed_by_the_path_of_the_net_they_drive(tmp_path):
    path = netlist(tmp_path, [
        ("device.usb.Endpoint0Guard.control.ProbeRequestHandler.position_LUT4_Z", "LUT4"),
        ("device.usb.Endpoint0Guard.control.setup_decoder.x_TRELLIS_FF_Q", "TRELLIS_FF"),
        ("device.usb.StreamInEndpoint.ring.0.0_ADA10_LUT4_B", "LUT4"),
        ("device.usb.transmitter.fsm_state_LUT4_Z", "LUT4"),
        ("device.in_bytes_TRELLIS_FF_Q_1", "TRELLIS_FF"),
        ("device.telemetry.ram.snapshot.0.0", "DP16KD"),
        ("pin_target_phy_0__data.buf.buf", "LUT4"),
        ("mystery", "LUT4"),
        ("device.usb.transmitter.$abc$1", "PFUMX"),   # not a counted cell type
    ])
    costs = block_costs(path)
    assert costs["EP0 request handler"]["LUT4"] == 1
    assert costs["control endpoint (LUNA)"]["TRELLIS_FF"] == 1
    assert costs["IN endpoint"]["LUT4"] == 1
    assert costs["device core (LUNA)"]["LUT4"] == 1
    assert costs["telemetry"]["TRELLIS_FF"] == 1
    assert costs["telemetry"]["DP16KD"] == 1
    assert costs["I/O buffers"]["LUT4"] == 1
    assert costs["other"]["LUT4"] == 1
    table = cost_table([("a", costs), ("b", {})])
    assert table.splitlines()[-1].replace("|", "").split() == ["total", "5", "2", "0", "0"]


def test_a_file_that_is_not_a_netlist_is_one_line_error(tmp_path):
    bad = tmp_path / "top.json"
    bad.write_text("[]")
    with pytest.raises(ValueError, match="not a flattened yosys netlist"):
        block_costs(bad)
