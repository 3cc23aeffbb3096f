"""The usb3 cut at SerdesCrossing's 125 MHz side, on a small netlist with the crossing's shape.

The board netlist takes a minute to synthesize and its model minutes to build (``make bench``);
here a netlist of a few hundred cells has what the cut looks for: a DCU whose clock writes one
distributed RAM and reads another, the 36 registers of the received word behind the first (and
a plan register that reads itself back), two registers before the second, the DCU's control
ports, and LUNA's ``tx_pcs_ready`` and LFPS half-period registers. Its device loops the received
word back to the transmit word, so where each port meets the netlist can be read off the text.
"""

from __future__ import annotations

import json
import re
from itertools import count
from pathlib import Path

import pytest
from busprobe.sim.netlist.usb3 import usb3_netlist_verilog
from busprobe.sim.netlist.yosys_json import Netlist, NetlistError


def _cell(kind: str, inputs: dict, outputs: dict, parameters: dict | None = None) -> dict:
    connections = {**inputs, **outputs}
    return {"type": kind, "parameters": parameters or {}, "attributes": {},
            "connections": connections,
            "port_directions": {p: "output" if p in outputs else "input" for p in connections}}


def _lut(a, z) -> dict:
    return _cell("LUT4", {"A": [a], "B": ["0"], "C": ["0"], "D": ["0"]}, {"Z": [z]},
                 {"INIT": "1010101010101010"})


def _ff(clk, di, q) -> dict:
    return _cell("TRELLIS_FF", {"CLK": [clk], "DI": [di]}, {"Q": [q]})


def _crossing(*, tx_ready: bool = True) -> dict:
    net = count(100)
    ss, lock, pclk, rx_sym, gpio, ready = (next(net) for _ in range(6))
    cells: dict[str, dict] = {}
    names: dict[str, list] = {}
    ei, ldr, reset, tx_sym = (next(net) for _ in range(4))
    cells["pll"] = _cell("EHXPLLL", {}, {"CLKOP": [ss], "LOCK": [lock]})
    cells["dcu"] = _cell("DCUA", {"CH1_FFC_EI_EN": [ei], "CH1_FFC_LDR_CORE2TX_EN": [ldr],
                                  "CH0_FFC_EI_EN": ["0"], "D_FFC_DUAL_RST": [reset],
                                  "CH1_FF_TX_D_0": [tx_sym]},
                         {"CH1_FF_RX_PCLK": [pclk], "CH1_FF_RX_D_0": [rx_sym],
                          "CH1_LDR_RX2CORE": [gpio], "CH1_FFS_READY": [ready]})
    out = [next(net) for _ in range(4)]
    cells["rx_fifo"] = _cell("TRELLIS_DPR16X4", {"WCK": [pclk], "DI": [rx_sym] * 4},
                             {"DO": out})
    plan, plan_d = next(net), next(net)
    cells["plan_lut"] = _cell("LUT4", {"A": [out[0]], "B": [plan], "C": ["0"], "D": ["0"]},
                              {"Z": [plan_d]}, {"INIT": "0110011001100110"})
    cells["plan"] = _ff(ss, plan_d, plan)
    word = [next(net) for _ in range(36)]
    for i, q in enumerate(word):
        d = next(net)
        cells[f"word_lut{i}"] = _cell("LUT4", {"A": [out[i % 4]], "B": [plan], "C": ["0"],
                                               "D": ["0"]}, {"Z": [d]}, {"INIT": "1" * 16})
        cells[f"device.physical.payload_{i}"] = _ff(ss, d, q)
    names["device.physical.payload"] = word[31::-1]  # an order only the name tells
    names["device.physical.ctrl"] = word[32:]
    # The device: the received word back out (one LUT each), as its tx word.
    sent = [next(net) for _ in range(36)]
    for i in range(36):
        cells[f"device.loop{i}"] = _lut(word[i], sent[i])
    names["device.tx_payload"], names["device.tx_ctrl"] = sent[:32], sent[32:]
    held = []
    for i in range(36):
        sampled, h = next(net), next(net)
        cells[f"crossing.word{i}"] = _ff(ss, sent[i], sampled)
        cells[f"crossing.held{i}"] = _ff(ss, sampled, h)
        held.append(h)
    for k in range(9):
        fifo_out = next(net)
        cells[f"tx_even.0.{k}"] = _cell("TRELLIS_DPR16X4", {"WCK": [ss],
                                                            "DI": held[4 * k:4 * k + 4]},
                                        {"DO": [fifo_out] + [next(net) for _ in range(3)]})
        cells[f"crossing.out{k}"] = _ff(pclk, fifo_out, tx_sym if k == 0 else next(net))
    # LUNA's registers: tx_pcs_ready and the LFPS detector's half periods, read by the device.
    tx_pcs_ready = next(net)
    cells["phy.serdes.reset_sequencer.tx_pcs_ready_TRELLIS_FF_Q"] = _ff(ss, ready, tx_pcs_ready)
    if tx_ready:
        names["phy.serdes.reset_sequencer.tx_pcs_ready"] = [tx_pcs_ready]
    for which in ("high", "low"):
        bits = [next(net) for _ in range(4)]
        for i, q in enumerate(bits):
            cells[f"phy.lfps_detector.total_time_{which}{i}"] = _ff(ss, gpio, q)
        names[f"phy.lfps_detector.total_time_{which}"] = bits
    present = names["phy.lfps_detector.total_time_high"][0]
    for source, target in ((tx_pcs_ready, ei), (present, ldr), (lock, reset)):
        cells[f"device.ctrl{target}"] = _lut(source, target)
    netnames = {name: {"bits": bits} for name, bits in names.items()}
    return {"attributes": {"top": "1"}, "ports": {}, "cells": cells, "netnames": netnames}


def _verilog(tmp_path: Path, top: dict) -> str:
    path = tmp_path / "top.json"
    path.write_text(json.dumps({"modules": {"top": top}}))
    return usb3_netlist_verilog(Netlist.load(path), module="dut")


def test_usb3_cut_drives_the_received_word_and_reads_the_sent_one_in_the_names_bit_order(
        tmp_path):
    top = _crossing()
    text = _verilog(tmp_path, top)
    word = top["netnames"]["device.physical.payload"]["bits"]
    assert f"assign n{word[0]} = pipe_rx_data[0];" in text
    assert f"assign n{word[31]} = pipe_rx_data[31];" in text
    kflags = top["netnames"]["device.physical.ctrl"]["bits"]
    assert f"assign n{kflags[3]} = pipe_rx_datak[3];" in text
    sent = top["netnames"]["device.tx_payload"]["bits"]
    assert "assign pipe_tx_data = {" + ", ".join(f"n{b}" for b in reversed(sent)) + "};" in text
    dcu = top["cells"]["dcu"]["connections"]
    ei, ldr = dcu["CH1_FFC_EI_EN"][0], dcu["CH1_FFC_LDR_CORE2TX_EN"][0]
    assert f"assign pipe_tx_elec_idle = n{ei} | n{ldr};" in text
    assert f"assign pipe_tx_detrx_lpbk = n{ldr};" in text
    assert f"assign pipe_reset = n{dcu['D_FFC_DUAL_RST'][0]};" in text
    ready = top["netnames"]["phy.serdes.reset_sequencer.tx_pcs_ready"]["bits"][0]
    assert f"assign n{ready} = ~pipe_phy_status;" in text
    high = top["netnames"]["phy.lfps_detector.total_time_high"]["bits"]
    assert f"assign n{high[0]} = ~pipe_rx_elec_idle;" in text  # 1 cycle: LFPS
    assert f"assign n{high[1]} = 1'b0;" in text
    # The DCU, both RAMs, the crossing's registers and LUNA's PHY registers are gone.
    assert not re.search(r"DCUA|TRELLIS_DPR16X4|crossing\.|phy\.|\bplan\b", text.split(
        "module dut")[1])


def test_usb3_cut_names_the_phy_register_it_cannot_find_in_one_line(tmp_path):
    with pytest.raises(NetlistError) as info:
        _verilog(tmp_path, _crossing(tx_ready=False))
    message = str(info.value)
    assert "0 nets named like" in message and "tx_ready" in message and "\n" not in message
