"""The USB 2.0 board designs' netlists as the simulation's device: cut at ULPI, built with the PHY.

``sim:usb2?level=netlist`` runs the post-synthesis netlist of the Cynthion r1.4 build of the
selected design (``usb2``, ``usb2-full``, ``usb2-stock``) in place of the RTL, inside the same
``usb2_sim_top`` with the same ULPI PHY model: the netlist is cut at the pins of its ULPI PHY
(:mod:`.board_cut`) into a module with exactly the ports of the RTL simulation's top
(:data:`busprobe.gateware.usb2.sim_top.PORTS`), so everything above it (PHY model, host model,
transport) is unchanged.

Every step is cached by content: the netlist by its build key (:func:`busprobe.bitstream.ecp5.
ecp5_netlist`), the Verilog by the netlist's SHA-256, the Verilator model by the Verilog.
"""

from __future__ import annotations

from pathlib import Path

from .board_cut import CutReport, Pin, cut_clocking, cut_pads
from .build import build_netlist_model, cut_netlist
from .cells import ecp5_library
from .verilog import Boundary, write_verilog
from .yosys_json import Netlist, NetlistError

__all__ = ["BOARD", "BOARD_DESIGNS", "usb2_netlist_verilog", "build_usb2_netlist_simulator"]

#: The board whose builds the USB 2.0 netlist simulation runs.
BOARD = "cynthion-r1.4"
#: Simulation design -> board design.
BOARD_DESIGNS = {"busprobe": "usb2", "full": "usb2-full", "stock": "usb2-stock",
                 "storage": "usb2-storage"}
#: ULPI subsignal -> where its pin goes (the PHY's clock input is the simulation's clk).
_ULPI = {"data": Pin("bidir", "ulpi_data"), "dir": Pin("in", "ulpi_dir"),
         "nxt": Pin("in", "ulpi_nxt"), "stp": Pin("out", "ulpi_stp"),
         "rst": Pin("out", "ulpi_rst"), "clk": Pin("drop")}


def usb2_netlist_verilog(netlist: Netlist, *, phy: str, module: str, header: str = "") -> str:
    """The Verilog of a USB 2.0 board netlist cut at its ULPI PHY ``phy`` (a resource name).

    Raises
    ------
    NetlistError
        If a pin of the PHY is not one ULPI has, the data pins' output enables differ, a cell
        reads a net the cut left undriven, or a cell type has no model.
    """
    from busprobe.gateware.usb2.sim_top import PORTS
    from busprobe.protocol.usb2 import CLOCK_HZ

    prefix = f"{phy}_0__"

    def pin(pad: str) -> Pin:
        if not pad.startswith(prefix):
            return Pin("drop")  # the board's oscillator (into the PLL), LEDs, other PHYs
        sub = pad[len(prefix):].removesuffix("__io")
        if sub not in _ULPI:
            raise NetlistError(f"pin {pad}: {sub!r} is not a ULPI signal")
        return _ULPI[sub]

    boundary = Boundary(ports=[(name, direction, width)
                               for name, (direction, width) in PORTS.items()])
    report = CutReport()
    tristates = cut_pads(netlist, boundary, report, pin)
    cut_clocking(netlist, boundary, report, clock="clk", reset="rst",
                 clock_mhz=CLOCK_HZ / 1e6)
    enables = set(tristates.get("ulpi_data", []))
    if len(enables) != 1 or not isinstance(next(iter(enables)), int):
        raise NetlistError(f"the ULPI data pins have {len(enables)} different output enables; "
                           "the simulation's ULPI bus has one")
    # TRELLIS_IO's T is high while the pin is an input: the output enable is its inverse.
    boundary.reads["ulpi_data_oe"] = [f"=~n{next(iter(enables))}"]
    for name, (direction, _) in PORTS.items():
        if direction == "output" and name not in boundary.reads:
            raise NetlistError(f"the netlist drives no pin for {name}")
    library = ecp5_library(netlist.cells.values())
    text = "\n".join([header, *report.lines()])
    return write_verilog(netlist, module, boundary, library.models, header=text)


def build_usb2_netlist_simulator(design: str = "busprobe") -> Path:
    """The Verilator model of ``usb2_sim_top`` with ``design``'s netlist as its device."""
    from busprobe.gateware.boards import get_board

    from ..usb2.simulator_build import PHY_SOURCE, usb2_sim_top

    module = f"busprobe_usb2_{design}_netlist"
    phy = get_board(BOARD).phy
    path = cut_netlist(BOARD, BOARD_DESIGNS[design], module, lambda netlist, header:
                       usb2_netlist_verilog(netlist, phy=phy, module=module, header=header))
    return build_netlist_model(f"usb2-netlist-{design}", path, usb2_sim_top(module), [PHY_SOURCE])
