"""generate_verilog writes a top module with exactly the simulation contract's ports."""

import re

import pytest
from busprobe.gateware.usb2.sim_top import DESIGNS, PORTS, TOP_NAMES, generate_verilog
from busprobe.targets import sim_usb2


def module_ports(text, name):
    header = re.search(rf"^module {name}\((.*?)\);", text, re.M | re.S)
    assert header, f"no module {name}"
    names = [port.strip() for port in header.group(1).split(",")]
    body = text[header.end():text.index("endmodule", header.end())]
    ports = {}
    for port in names:
        decl = re.search(rf"^\s*(input|output)\s*(\[(\d+):0\])?\s*{port};", body, re.M)
        assert decl, f"port {port} not declared"
        ports[port] = (decl.group(1), int(decl.group(3)) + 1 if decl.group(3) else 1)
    return ports


@pytest.mark.parametrize("design", ["busprobe", "full", "stock"])
def test_generated_verilog_has_exactly_the_contract_ports(tmp_path, design):
    path = generate_verilog(tmp_path, design=design)
    text = path.read_text()
    assert module_ports(text, TOP_NAMES[design]) == PORTS
    # Cached: a second call returns the same file without regenerating it.
    mtime = path.stat().st_mtime_ns
    assert generate_verilog(tmp_path, design=design) == path
    assert path.stat().st_mtime_ns == mtime


def test_unknown_design_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown USB2 design"):
        generate_verilog(tmp_path, design="nope")


def test_every_design_the_selector_offers_is_a_sim_design():
    # `sim:usb2?design=NAME` is checked by the host's description, built from these.
    assert set(sim_usb2.DESIGNS) == set(DESIGNS) == set(TOP_NAMES)
    assert set(sim_usb2.DESIGN_FEATURES) == set(DESIGNS) - {"stock"}
