"""The ECPIX-5 SuperSpeed build: the design elaborates onto the DCU with its PLL and clocks, and
only the crossing runs at 250 MHz (no tool run; ``busprobe build`` runs yosys/nextpnr)."""

import re
from types import SimpleNamespace

from amaranth import Signal
from amaranth.hdl import Fragment
from busprobe.bitstream.designs import get_design
from busprobe.bitstream.ecp5 import declared_clocks, prepare_ecp5
from busprobe.gateware.boards import get_board
from busprobe.gateware.common.fragment_domains import fragment_domains
from busprobe.gateware.usb3.ecp5_phy import ECP5Usb3Phy


def test_usb3_design_goes_on_dcu0_channel1_with_the_pll_and_both_clocks_constrained():
    platform, plan = prepare_ecp5(get_board("ecpix5-85"), get_design("usb3"))
    rtlil = plan.files["top.il"]
    assert re.search(r'attribute \\LOC "DCU0"', rtlil) and "DCUA" in rtlil
    assert "EHXPLLL" in rtlil
    lpf = plan.files["top.lpf"]
    assert '"AF9"' in lpf and '"AD10"' in lpf  # the USB-C SuperSpeed pair
    # The SerDes' clock, on the crossing's domain net (ss is derived from the PLL by nextpnr).
    constraints = [line for line in lpf.splitlines() if "FREQUENCY" in line]
    assert 'FREQUENCY NET "phy.crossing.pclk_clk" 250000000.0 HZ;' in constraints, constraints
    assert declared_clocks(platform, get_design("usb3")) == (
        {"ss": 125.0, "pclk": 250.0}, ("ss", "pclk"))



def test_only_the_crossing_runs_on_the_serdes_250_mhz_clock():
    def pads():
        return SimpleNamespace(p=Signal(), n=Signal())

    phy = ECP5Usb3Phy(tx_pads=pads(), rx_pads=pads(), dual=0, channel=1,
                      refclk_frequency=250e6)
    domains = list(fragment_domains(Fragment.get(phy, None)))
    at_250 = {path for path, domain in domains if domain == "pclk"}
    # The gearbox registers and pointers, and the receive FIFO's write port: nothing else
    # (LUNA's SerDes register interface, its error flag and LFPS run in ss).
    assert at_250 == {"crossing", "crossing/rx_fifo"}, at_250
    assert {path for path, domain in domains if domain == "ss"} >= {
        "serdes", "serdes/sci", "serdes/sci_trans", "lfps_generator", "lfps_detector",
        "crossing/tx_even", "crossing/tx_odd"}
    assert {domain for _, domain in domains} == {"comb", "ss", "pclk"}
