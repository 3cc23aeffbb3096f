"""busprobe's PCIe SoC on the Versa's soft endpoint (``--design pcie`` on ``versa-ecp5-5g``): the
build takes LiteX's Verilog of the SoC (the DMA engine, the CPU, the soft endpoint's own
Verilog) and the ROM with the firmware image as its sources, instantiates it in the link's
domain on the board's PHY with the UART on the board's pins, and times the same three clocks
as the endpoint alone (no place and route here: ``busprobe build`` runs it, about ten minutes;
the figures are in docs/DESIGN.md §3.10, "The DMA engine on the Versa")."""

import re

from busprobe.bitstream.designs import get_design
from busprobe.bitstream.ecp5 import declared_clocks, prepare_ecp5
from busprobe.bitstream.firmware import build_firmware
from busprobe.gateware.boards import get_board
from busprobe.gateware.boards.versa_pcie import CLOCKS_MHZ
from busprobe.gateware.boards.versa_pcie_soc import PREFIX, TOPLEVEL


def test_the_soc_is_instantiated_on_the_phy_with_its_verilog_and_the_firmware_in_its_rom():
    platform, plan = prepare_ecp5(get_board("versa-ecp5-5g"), get_design("pcie"))
    files = plan.files
    top = files[f"{TOPLEVEL}.v"]
    assert re.search(rf"module {TOPLEVEL}\s*\(", top)
    for port in ("rx_word", "tx_word", "receiver_detected", "dl_active", "status"):
        assert f"{PREFIX}{port}" in top, port
    assert "VexRiscv_Min.v" in files
    (endpoint,) = [name for name in files if name.startswith("soft_litepcie")]
    assert "module soft_litepcie" in files[endpoint]
    # The ROM holds the firmware the AC701's SoC and the simulated one run.
    rom = [int(word, 16) for word in files[f"{TOPLEVEL}_rom.init"].split()]
    words = list(build_firmware().words)
    assert rom[:len(words)] == words and not any(rom[len(words):])
    # Instantiated in the top, on the link's clock; the UART on the board's pins.
    rtlil = files["top.il"]
    assert re.search(rf"cell \\{TOPLEVEL} ", rtlil)
    for pin in ("A11", "C11"):
        assert f'SITE "{pin}";' in files["top.lpf"], pin
    assert declared_clocks(platform, get_design("pcie")) == (dict(CLOCKS_MHZ), tuple(CLOCKS_MHZ))
