"""The SuperSpeed sim top keeps its port contract and its Verilog is cached by content."""

import re

import pytest
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


@pytest.mark.sim
def test_verilog_is_lint_clean(tmp_path):
    """Verilator lint, as the project's own lint counts it (Amaranth's width and case style
    warnings apart). Zero-width wires that LUNA's one-word descriptor ROMs get are declared
    ``[-1:0]`` and reported as ascending ranges: counted apart too, as what they are."""
    from busprobe.bitstream.xilinx_stubs import verilator_lint

    report = verilator_lint([sim_top.generate_verilog(tmp_path)], sim_top.TOP_NAME)
    findings = [f for f in report.findings
                if not (f.startswith("%Warning-ASCRANGE") and "[-1:0]" in f)]
    assert not findings, findings[:5]
