"""The ECPIX-5 SuperSpeed build: the design elaborates onto the DCU with its PLL and clocks
(no tool run; ``busprobe build`` runs yosys/nextpnr)."""

import re

from busprobe.bitstream.designs import get_design
from busprobe.bitstream.ecp5 import prepare_ecp5
from busprobe.gateware.boards import get_board


def test_usb3_design_goes_on_dcu0_channel1_with_the_pll_and_a_timed_pclk():
    platform, plan = prepare_ecp5(get_board("ecpix5-85"), get_design("usb3"))
    rtlil = plan.files["top.il"]
    assert re.search(r'attribute \\LOC "DCU0"', rtlil) and "DCUA" in rtlil
    assert "EHXPLLL" in rtlil
    lpf = plan.files["top.lpf"]
    assert '"AF9"' in lpf and '"AD10"' in lpf  # the USB-C SuperSpeed pair
    assert any("pclk" in line and "250000000.0 HZ" in line for line in lpf.splitlines()), lpf
    assert platform.DEFAULT_CLOCK_FREQUENCIES_MHZ == {"ss": 125.0, "sync": 125.0}
