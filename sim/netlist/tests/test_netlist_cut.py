"""The netlist machinery without a simulator: the cut at the pins and the PLL, the Verilog it
writes, the cell library's refusals, and the cache record that ties a netlist to its build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from busprobe.bitstream.netlist import NETLIST_FILE, load_record, record_netlist
from busprobe.sim.netlist.board_cut import CutReport, Pin, cut_clocking, cut_pads
from busprobe.sim.netlist.cells import ecp5_library
from busprobe.sim.netlist.usb2 import usb2_netlist_verilog
from busprobe.sim.netlist.usb3 import usb3_netlist_verilog
from busprobe.sim.netlist.verilog import Boundary, write_verilog
from busprobe.sim.netlist.yosys_json import Netlist, NetlistError


def _cell(kind: str, connections: dict, parameters: dict | None = None,
          outputs: tuple[str, ...] = (), attributes: dict | None = None) -> dict:
    return {"type": kind, "parameters": parameters or {}, "attributes": attributes or {},
            "connections": connections,
            "port_directions": {p: "output" if p in outputs else "input" for p in connections}}


def _io(pad: int, direction: str, **nets) -> dict:
    outputs = ("O",) if direction != "OUTPUT" else ()
    return _cell("TRELLIS_IO", {"B": [pad], **{k: [v] for k, v in nets.items()}},
                 {"DIR": direction}, outputs)


def _board(lut_input: int = 20) -> dict:
    """A board top: a ULPI-ish PHY (dir in, stp out, 2 data pins), an oscillator into a PLL
    whose 60 MHz output clocks an FF fed by a LUT of ``dir`` (``lut_input``)."""
    ports = {"phy_0__dir__io": {"direction": "input", "bits": [2]},
             "phy_0__stp__io": {"direction": "output", "bits": [3]},
             "phy_0__data__io": {"direction": "inout", "bits": [4, 5]},
             "clk_0__io": {"direction": "input", "bits": [6]}}
    cells = {
        "dir_buf": _io(2, "INPUT", O=20),
        "stp_buf": _io(3, "OUTPUT", I=31, T="0"),
        "d0": _io(4, "BIDIR", I=31, O=40, T=20),
        "d1": _io(5, "BIDIR", I=31, O=41, T=20),
        "osc_buf": _io(6, "INPUT", O=21),
        "pll": _cell("EHXPLLL", {"CLKI": [21], "CLKFB": [22], "CLKOP": [22], "CLKOS2": [23],
                                 "LOCK": [24]}, outputs=("CLKOP", "CLKOS2", "LOCK"),
                     attributes={"FREQUENCY_PIN_CLKOP": "120.000000",
                                 "FREQUENCY_PIN_CLKOS2": "60.000000"}),
        "lut": _cell("LUT4", {"A": [lut_input], "B": [24], "C": ["0"], "D": ["x"], "Z": [30]},
                     {"INIT": "0101010101010101"}, ("Z",)),
        "ff": _cell("TRELLIS_FF", {"CLK": [23], "DI": [30], "Q": [31]},
                    {"CEMUX": "1 ", "REGSET": "SET", "GSR": "DISABLED"}, ("Q",)),
        "scope": {"type": "$scopeinfo", "connections": {}},
    }
    netnames = {"dir_i": {"bits": [20]}, "osc": {"bits": [21]}, "q": {"bits": [31]}}
    return {"attributes": {"top": "1"}, "ports": ports, "cells": cells, "netnames": netnames}


def _netlist(tmp_path: Path, top: dict) -> Netlist:
    path = tmp_path / "top.json"
    path.write_text(json.dumps({"modules": {"top": top}}))
    return Netlist.load(path)


def _pin(pad: str) -> Pin:
    roles = {"phy_0__dir__io": Pin("in", "ulpi_dir"), "phy_0__stp__io": Pin("out", "ulpi_stp"),
             "phy_0__data__io": Pin("bidir", "ulpi_data")}
    return roles.get(pad, Pin("drop"))


def _cut(netlist: Netlist) -> tuple[str, CutReport]:
    boundary = Boundary(ports=[("clk", "input", 1), ("rst", "input", 1),
                               ("ulpi_dir", "input", 1), ("ulpi_stp", "output", 1),
                               ("ulpi_data_i", "input", 2), ("ulpi_data_o", "output", 2)])
    report = CutReport()
    cut_pads(netlist, boundary, report, _pin)
    cut_clocking(netlist, boundary, report, clock="clk", reset="rst", clock_mhz=60)
    text = write_verilog(netlist, "dut", boundary, ecp5_library(netlist.cells.values()).models)
    return text, report


def test_pins_become_ports_and_pll_outputs_the_sim_clock_with_lock_from_reset(tmp_path):
    text, report = _cut(_netlist(tmp_path, _board()))
    assert "TRELLIS_IO" not in text and "EHXPLLL" not in text and "scopeinfo" not in text
    assert "assign n20 = ulpi_dir;" in text
    assert "assign n40 = ulpi_data_i[0];" in text and "assign n41 = ulpi_data_i[1];" in text
    assert "assign ulpi_data_o = {n31, n31};" in text and "assign ulpi_stp = n31;" in text
    assert "assign n23 = clk;" in text and "assign n24 = ~rst;" in text
    assert "dropped pin clk_0__io" in report.lines()
    assert any("120 MHz on the board, the 60 MHz clk here" in line for line in report.lines())


def test_parameters_and_constants_are_written_as_yosys_meant_them(tmp_path):
    text, _ = _cut(_netlist(tmp_path, _board()))
    assert ".INIT(16'b0101010101010101)" in text
    assert '.CEMUX("1")' in text  # a string that would read as bits, marked by a space
    assert '.REGSET("SET")' in text
    assert ".C(1'b0)" in text and ".D(1'b0)" in text  # "x" is 0: Verilator is two-state


def test_a_cell_reading_a_net_the_cut_left_undriven_is_named(tmp_path):
    with pytest.raises(NetlistError) as info:
        _cut(_netlist(tmp_path, _board(lut_input=21)))  # the oscillator's pin, dropped
    message = str(info.value)
    assert "LUT4 lut reads net 21 (osc) on A" in message and "\n" not in message


def test_a_cell_type_without_a_model_is_refused_in_one_line_naming_it(tmp_path):
    top = _board()
    top["cells"]["dsp"] = _cell("MULT18X18D", {"A0": [20]})
    top["cells"]["dsp2"] = _cell("MULT18X18D", {"A0": [20]})
    with pytest.raises(NetlistError) as info:
        ecp5_library(_netlist(tmp_path, top).cells.values())
    message = str(info.value)
    assert "no simulation model for ECP5 cell types: EHXPLLL (1 cell, e.g. pll); " \
        "MULT18X18D (2 cells, e.g. dsp)" in message
    assert "\n" not in message


def test_block_rams_simulate_with_busprobes_models_not_the_upstream_black_box(tmp_path):
    top = _board()
    top["cells"]["ram"] = _cell("DP16KD", {"CLKA": [23]})
    del top["cells"]["pll"]  # (the cut removes it; it has no model)
    library = ecp5_library(_netlist(tmp_path, top).cells.values())
    assert library.models["DP16KD"] == "busprobe_DP16KD"
    assert library.models["LUT4"] == "LUT4" and library.models["TRELLIS_FF"] == "TRELLIS_FF"
    assert [s.name for s in library.sources][0] == "cells_sim_ecp5.v"


def test_usb2_cut_refuses_a_phy_pin_ulpi_does_not_have(tmp_path):
    top = _board()
    top["ports"]["phy_0__bogus__io"] = {"direction": "input", "bits": [7]}
    top["cells"]["bogus"] = _io(7, "INPUT", O=25)
    with pytest.raises(NetlistError, match="pin phy_0__bogus__io: 'bogus' is not a ULPI signal"):
        usb2_netlist_verilog(_netlist(tmp_path, top), phy="phy", module="dut")


def test_usb3_cut_refuses_a_netlist_without_the_serdes_crossing_in_one_line(tmp_path):
    with pytest.raises(NetlistError) as info:
        usb3_netlist_verilog(_netlist(tmp_path, _board()), module="dut")
    message = str(info.value)
    assert message == ("no distributed RAM written on a DCU clock and none read by it: no "
                       "SerdesCrossing to cut the netlist at PIPE")


def test_a_netlist_changed_after_it_was_recorded_is_not_used(tmp_path):
    workdir = tmp_path / "cynthion-r1.4-usb2-0123456789ab"
    workdir.mkdir()
    (workdir / NETLIST_FILE).write_text("{}")
    record = record_netlist(workdir, source="synthesis", seconds=1.0)
    assert record.key == "0123456789ab"
    assert load_record(workdir) == record
    (workdir / NETLIST_FILE).write_text('{"modules": {}}')
    assert load_record(workdir) is None
    moved = tmp_path / "cynthion-r1.4-usb2-ba9876543210"
    workdir.rename(moved)  # a record of another key: another design or toolchain
    (moved / NETLIST_FILE).write_text("{}")
    assert load_record(moved) is None
