"""The SuperSpeed sim top keeps its port contract and its Verilog is cached by content."""

import re

from busprobe.gateware.usb3 import sim_top


def test_verilog_top_has_exactly_the_contract_ports(tmp_path):
    path = sim_top.generate_verilog(tmp_path)
    text = path.read_text()
    header = re.search(rf"module {sim_top.TOP_NAME}\((.*?)\);", text, re.S)
    assert header, "top module not found"
    names = {name.strip() for name in header.group(1).split(",")}
    assert names == set(sim_top.PORTS)
    for name, (direction, width) in sim_top.PORTS.items():
        rng = "" if width == 1 else rf"\[{width - 1}:0\] "
        assert re.search(rf"^\s*{direction} {rng}{name};", text, re.M), name
    assert sim_top.generate_verilog(tmp_path) == path  # the second call reuses the file
