"""The SuperSpeed board design's netlist as the simulation's device: cut at PIPE.

``sim:usb3?level=netlist`` runs the post-synthesis netlist of the ECPIX-5 ``usb3`` build inside
``usb3_sim_top`` with the same PIPE link partner. The RTL simulation's top leaves out the ECP5
SerDes (DCU), the PLL and LUNA's ``AsyncPIPEInterface`` gearbox (submodule ``pipe`` of the
board top, gateware/usb3/board_top.py) and drives the 4-symbol, 125 MHz PIPE the device sees;
the netlist is cut at the same place, by the names yosys kept for those nets (``pipe.rx_data``,
``pipe.tx_data``, ...):

* every PHY-to-MAC net is driven by its ``pipe_*`` port (its driver in the gearbox is cut off);
* every MAC-to-PHY net is read by its ``pipe_*`` port;
* the PLL's clocks become ``clk`` (the 125 MHz ``ss``/``sync`` clock; its 250 MHz output only
  clocks the gearbox) and its ``LOCK`` ``~rst``, so the board's reset synchronizers run;
* then every cell those ports do not depend on goes: the gearbox, the DCU and its fabric logic,
  the pins.

A PIPE signal the board build fixed (the board ties ``power_present`` high, so synthesis folds
it away) has no net to cut: its port is left unconnected there and the header says so, as it
does for the status outputs (``link_trained``, ...) when synthesis kept no net of that name.
"""

from __future__ import annotations

from pathlib import Path

from .board_cut import CutReport, Pin, cut_clocking, cut_pads
from .build import build_netlist_model, cut_netlist
from .cells import ecp5_library
from .verilog import Boundary, write_verilog
from .yosys_json import Netlist, NetlistError

__all__ = ["BOARD", "usb3_netlist_verilog", "build_usb3_netlist_simulator"]

BOARD = "ecpix5-85"
#: Where the PIPE the device sees is in the board netlist: the board top's ``pipe`` submodule.
PIPE_SCOPE = "pipe"
#: Status outputs of the sim top -> the names the device's signals may carry.
STATUS_NETS = {"link_trained": "device.core.link_trained",
               "link_in_reset": "device.core.link_in_reset",
               "configuration": "device.core.configuration"}


def usb3_netlist_verilog(netlist: Netlist, *, module: str, header: str = "") -> str:
    """The Verilog of the SuperSpeed board netlist cut at the device's PIPE.

    Raises
    ------
    NetlistError
        If no PIPE net can be found, a cell the device depends on has no model (the DCU, if
        the device reads it other than through the PIPE), or a net is left undriven.
    """
    from busprobe.gateware.usb3.sim_top import CLOCK_HZ, PORTS

    boundary = Boundary(ports=[(name, direction, width)
                               for name, (direction, width) in PORTS.items()])
    report = CutReport()
    cut_clocking(netlist, boundary, report, clock="clk", reset="rst", clock_mhz=CLOCK_HZ / 1e6)
    found = 0
    for port, (direction, width) in PORTS.items():
        if port in ("clk", "rst"):
            continue
        name = f"{PIPE_SCOPE}.{port.removeprefix('pipe_')}" if port.startswith("pipe_") \
            else STATUS_NETS[port]
        bits = netlist.netnames.get(name)
        if bits is None or len(bits) != width:
            report.notes.append(f"{port}: no net {name} in the netlist; unconnected")
            if direction == "output":
                boundary.reads[port] = ["0"] * width
            continue
        found += 1
        if direction == "output":
            boundary.reads[port] = bits
            report.notes.append(f"{port}: reads {name}")
            continue
        for index, bit in enumerate(bits):
            if isinstance(bit, int):
                netlist.detach(bit)
                boundary.drives[bit] = f"{port}[{index}]" if width > 1 else port
        report.notes.append(f"{port}: drives {name}")
    if not found:
        raise NetlistError(f"no {PIPE_SCOPE}.* nets in the netlist: nowhere to cut it at PIPE")
    needed = {b for bits in boundary.reads.values() for b in bits if isinstance(b, int)}
    removed = netlist.prune(needed)
    cut_pads(netlist, boundary, report, lambda pad: Pin("drop"))
    kinds = sorted({c.type for c in removed})
    report.notes.append(f"removed {len(removed)} cells the PIPE ports do not depend on "
                         f"({', '.join(kinds)})")
    library = ecp5_library(netlist.cells.values())
    text = "\n".join([header, *report.lines()])
    return write_verilog(netlist, module, boundary, library.models, header=text)


def build_usb3_netlist_simulator() -> Path:
    """The Verilator model of ``usb3_sim_top`` with the ``usb3`` board netlist as its device."""
    from ..usb3.simulator_build import PARTNER_SOURCES, TOPLEVEL, symbol_defines

    module = "busprobe_usb3_netlist"
    path = cut_netlist(BOARD, "usb3", module, lambda netlist, header:
                       usb3_netlist_verilog(netlist, module=module, header=header))
    return build_netlist_model("usb3-netlist", path, PARTNER_SOURCES, TOPLEVEL, module,
                               symbol_defines())
