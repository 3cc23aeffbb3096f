"""The soft PCIe endpoint on the ECP5-5G Versa: the build elaborates onto DCU0 channel 0 with the
edge connector's reference clock on EXTREF0, the link at four symbols a clock on a 62.5 MHz
clock a PLL makes from the DCU's, and every clock constrained on a net synthesis keeps (yosys
alone, or the cached board build's netlist; no place and route: ``busprobe build`` runs it, a
minute or more; the figures are in docs/DESIGN.md §3.10, "The Versa ECP5-5G board")."""

import json
import re

from amaranth.hdl import Fragment
from busprobe.bitstream.designs import get_design
from busprobe.bitstream.ecp5 import declared_clocks, ecp5_netlist, prepare_ecp5
from busprobe.build_cache import build_root
from busprobe.gateware.boards import get_board
from busprobe.gateware.boards.soft_pcie_endpoint import SoftPcieEndpoint
from busprobe.gateware.boards.versa_pcie import VersaPciePlatform, VersaPcieTop
from busprobe.gateware.common.fragment_domains import fragment_domains


def _plan():
    return prepare_ecp5(get_board("versa-ecp5-5g"), get_design("pcie-endpoint"))


def _cell(rtlil: str, kind: str) -> str:
    """The RTLIL text of the one cell of ``kind``."""
    (start,) = [m.start() for m in re.finditer(rf"cell \\{kind} ", rtlil)]
    return rtlil[rtlil.rfind("\n", 0, start):rtlil.index("\n  end", start)]


def _attribute_before(rtlil: str, kind: str, name: str) -> str:
    """An attribute Amaranth writes on the lines just above the cell of ``kind``."""
    start = rtlil.index(f"cell \\{kind} ")
    block = rtlil[rtlil.rfind("\n\n", 0, start):start]
    match = re.search(rf'attribute \\{name} "([^"]*)"', block)
    assert match, f"{kind} has no {name}"
    return match.group(1)


def test_the_lane_is_on_dcu0_channel0_with_its_reference_on_extref0():
    _, plan = _plan()
    rtlil = plan.files["top.il"]
    assert _attribute_before(rtlil, "DCUA", "LOC") == "DCU0"
    assert _attribute_before(rtlil, "DCUA", "CHAN") == "CH0"
    assert _attribute_before(rtlil, "EXTREFB", "LOC") == "EXTREF0"
    dcu = _cell(rtlil, "DCUA")
    assert 'parameter \\D_TX_MAX_RATE "2.5"' in dcu  # the PHY's Gen1 retuning
    assert re.search(r"connect \\CH0_HDINP ", dcu) and re.search(r"connect \\CH0_HDOUTP ", dcu)
    # 100 MHz reference, multiplied by 25 to the line rate.
    assert 'parameter \\D_REFCK_MODE "0b100"' in dcu
    lpf = plan.files["top.lpf"]
    for pin in ("Y5", "Y6", "W4", "W5", "Y11", "Y12"):  # the edge connector's lane and REFCLK
        assert f'SITE "{pin}";' in lpf, pin
    assert re.search(r'LOCATE COMP "pcie_x1_0__perst__io" SITE "A6";', lpf)


def test_every_clock_is_constrained_and_required_in_the_report():
    platform, plan = _plan()
    constraints = [line for line in plan.files["top.lpf"].splitlines() if "FREQUENCY" in line]
    assert 'FREQUENCY PORT "clk100_0__p" 100000000.0 HZ;' in constraints
    # On the top's own kept nets: the DCU's fabric clock and the link's.
    assert 'FREQUENCY NET "serdes_clk" 125000000.0 HZ;' in constraints
    assert 'FREQUENCY NET "link_clk" 62500000.0 HZ;' in constraints
    rtlil = plan.files["top.il"]
    for net in ("serdes_clk", "link_clk"):
        assert re.search(rf"attribute \\keep 1\n\s+wire width 1 \\{net}\n", rtlil), net
    assert declared_clocks(platform, get_design("pcie-endpoint")) == (
        {"link": 62.5, "pclk": 125.0, "ctl": 100.0}, ("link", "pclk", "ctl"))


def test_the_word_link_runs_at_half_the_dcus_clock_from_a_pll():
    """CLKI 125 MHz divided by 2 at the phase detector, fed back from CLKOP undivided: 62.5 MHz
    out, the VCO at 8 times that (500 MHz, inside the ECP5's 400-800)."""
    _, plan = _plan()
    pll = _cell(plan.files["top.il"], "EHXPLLL")
    for name, value in (("CLKI_DIV", 2), ("CLKFB_DIV", 1), ("CLKOP_DIV", 8),
                        ("CLKOP_CPHASE", 7)):
        assert re.search(rf"parameter \\{name} {value}\n", pll), name
    assert 'FREQUENCY_PIN_CLKOP "62.5"' in plan.files["top.il"]


def test_the_endpoint_runs_in_the_link_domain_and_luna_s_sequencer_on_the_oscillator():
    top = VersaPcieTop(design=SoftPcieEndpoint)
    domains = list(fragment_domains(Fragment.get(top, VersaPciePlatform())))
    design = {domain for path, domain in domains if path.startswith("design")}
    assert design == {"comb", "link"}
    for block in ("design/link", "design/config", "design/router", "design/merge"):
        assert any(path.startswith(block) for path, domain in domains if domain == "link"), block
    on_control = {path for path, domain in domains if domain == "ctl"}
    assert {"phy/serdes", "phy/serdes/sci", "phy/serdes/sci_trans"} <= on_control
    assert not any(path.startswith("design") for path in on_control)
    assert {domain for _, domain in domains} == {"comb", "link", "ctl", "pclk", "async_ff"}


def test_the_constrained_clock_nets_and_the_serdes_cells_survive_synthesis():
    """The nets the top constrains are in yosys' netlist, so nextpnr finds them (the PHY's own
    constraint names a net yosys merged away: nextpnr dropped it, and the link's with it)."""
    _, plan = _plan()
    constrained = re.findall(r'FREQUENCY NET "(\S+)"', plan.files["top.lpf"])
    record = ecp5_netlist(get_board("versa-ecp5-5g"), get_design("pcie-endpoint"),
                          root=build_root())
    top = json.loads(record.path.read_text())["modules"]["top"]
    assert {"serdes_clk", "link_clk"} <= set(constrained) & set(top["netnames"])
    kinds = [cell["type"] for cell in top["cells"].values()]
    assert [kinds.count(kind) for kind in ("DCUA", "EXTREFB", "EHXPLLL")] == [1, 1, 1]
