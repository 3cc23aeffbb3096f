"""The Versa's soft PCIe builds' netlists as a simulation's device: cut at their DCU channel.

``busprobe build --board versa-ecp5-5g --design pcie-endpoint`` synthesizes the endpoint, its
word gearbox and LUNA's DCU block (reset sequencer, SerDes Client Interface, the ``DCUA``
primitive) into one netlist; ``--design pcie`` puts busprobe's PCIe SoC (LitePCIe's DMA
engine, the CSRs, VexRiscv and its firmware ROM, a UART) around the same endpoint, on the
same PHY. Both are cut the same way (:data:`CUTS`: one :class:`PcieCut` per design, which
differ only in their pins and the module's name). Nothing models the ``DCUA``'s serial side,
so the cut is at the primitive's fabric ports, the boundary every other part of the design is
built against: what the DCU hands the fabric (two decoded symbols a 125 MHz clock with their K
flags, its fabric clock, loss of signal and of lock, the receiver detection's answer) becomes
the module's inputs, what the fabric hands the DCU (two symbols to encode, electrical idle,
the detection strobes) its outputs, and the bench (:mod:`busprobe.sim.pcie.symbol.dcu_wire`)
plays the DCU and the root port on the far side of the lane. The rest of the cut is the
board's:

* the pins (:func:`.board_cut.cut_pads`): the 100 MHz oscillator is ``ctl_clk``, the button
  and PERST# are ``button_n`` / ``perst_n`` as the pins see them (low: pressed, asserted), the
  eight LEDs ``led_n0``..``led_n7`` (low: lit); the ``pcie`` design's UART is ``uart_tx``
  (out) and ``uart_rx`` (in, idle high);
* the PLL that makes the link's 62.5 MHz from the DCU's clock: its output is ``link_clk``, its
  ``LOCK`` ``pll_locked`` (the bench runs the two clocks from one reference, as the PLL does);
* the ``EXTREFB`` reference buffer, which only the DCU reads.

A DCU output the design reads that the bench does not drive (the clock-compensation FIFO's
flags, the SCI's read data) is driven 0, and the generated file's header lists it. A second
DCU, or an input of the DCU the bench must read and cannot find, is refused in one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .board_cut import CutReport, Pin, cut_pads
from .build import cut_netlist
from .cells import ecp5_library
from .verilog import Boundary, write_verilog
from .yosys_json import Netlist, NetlistError

__all__ = ["BOARD", "DESIGN", "MODULE", "PORTS", "CUTS", "PcieCut", "pcie_netlist_verilog",
           "build_pcie_netlist_simulator", "RX_BITS", "TX_BITS"]

BOARD = "versa-ecp5-5g"
#: The DCU's 24-bit fabric buses at 1:2 gearing: per half (symbol), 8 data bits, the K flag and
#: 3 status bits (LUNA's layout: half 1 from bit 12).
RX_BITS = TX_BITS = 24
#: The ports both designs' modules have: name -> (direction, width).
PORTS = {
    "ctl_clk": ("input", 1), "pclk": ("input", 1), "link_clk": ("input", 1),
    "pll_locked": ("input", 1), "button_n": ("input", 1), "perst_n": ("input", 1),
    "rx_d": ("input", RX_BITS), "rx_los": ("input", 1), "rx_lol": ("input", 1),
    "pll_lol": ("input", 1), "pcie_done": ("input", 1), "pcie_con": ("input", 1),
    "tx_d": ("output", TX_BITS), "tx_idle": ("output", 1), "pcie_det_en": ("output", 1),
    "pcie_ct": ("output", 1),
    **{f"led_n{i}": ("output", 1) for i in range(8)},
}
#: DCU output port (``CHn_`` stripped) -> the module input that drives it.
_FROM_DCU = {"FF_TX_PCLK": "pclk", "FFS_RLOS": "rx_los", "FFS_RLOL": "rx_lol",
             "D_FFS_PLOL": "pll_lol", "FFS_PCIE_DONE": "pcie_done", "FFS_PCIE_CON": "pcie_con"}
#: DCU input port (``CHn_`` stripped) -> the module output that reads it.
_TO_DCU = {"FFC_EI_EN": "tx_idle", "FFC_PCIE_DET_EN": "pcie_det_en",
           "FFC_PCIE_CT": "pcie_ct"}
_PINS = {"clk100_0__p": Pin("in", "ctl_clk"), "rst_0__io": Pin("in", "button_n"),
         "pcie_x1_0__perst__io": Pin("in", "perst_n"),
         **{f"led_{i}__io": Pin("out", f"led_n{i}") for i in range(8)}}


@dataclass(frozen=True)
class PcieCut:
    """How one Versa PCIe design's netlist is cut.

    Attributes
    ----------
    design: the board design (``busprobe build --design``).
    module: the cut module's name (the Verilator model's top).
    model: the Verilator model's build directory name.
    ports: the module's ports, name -> (direction, width).
    pins: pad name in the netlist -> what the cut makes of it.
    """

    design: str
    module: str
    model: str
    ports: dict[str, tuple[str, int]]
    pins: dict[str, Pin]


#: The cut of each design. The SoC's UART is the board's FT2232H channel; its pins are ports
#: so that a test can watch the console (and so that the receiver is held idle, not floating).
CUTS = {
    "pcie-endpoint": PcieCut("pcie-endpoint", "busprobe_versa_pcie_endpoint_netlist",
                             "pcie-netlist-versa", PORTS, _PINS),
    "pcie": PcieCut("pcie", "busprobe_versa_pcie_soc_netlist", "pcie-soc-netlist-versa",
                    {**PORTS, "uart_rx": ("input", 1), "uart_tx": ("output", 1)},
                    {**_PINS, "uart_0__rx__io": Pin("in", "uart_rx"),
                     "uart_0__tx__io": Pin("out", "uart_tx")}),
}
#: The endpoint's design and module, as before there were two.
DESIGN = "pcie-endpoint"
MODULE = CUTS[DESIGN].module


def _channel_port(port: str) -> str:
    """``CH0_FF_RX_D_3`` -> ``FF_RX_D_3``; a dual-wide port (``D_FFS_PLOL``) as it is."""
    return re.sub(r"^CH\d_", "", port)


def _cut_dcu(netlist: Netlist, boundary: Boundary, report: CutReport) -> None:
    dcus = netlist.of_type("DCUA")
    if len(dcus) != 1:
        raise NetlistError(f"{len(dcus)} DCUs in the netlist; the endpoint uses one")
    dcu = dcus[0]
    read = {bit for cell in netlist.cells.values() if cell is not dcu
            for port, bits in cell.connections.items()
            if cell.directions.get(port) != "output" for bit in bits if isinstance(bit, int)}
    zeroed = []
    tx_d = ["0"] * TX_BITS
    for port, bits in sorted(dcu.connections.items()):
        name, bit = _channel_port(port), bits[0]
        if not isinstance(bit, int):
            continue
        if dcu.directions.get(port) == "output":
            if bit not in read or bit in boundary.drives:
                continue
            if match := re.fullmatch(r"FF_RX_D_(\d+)", name):
                boundary.drives[bit] = f"rx_d[{match.group(1)}]"
            elif name in _FROM_DCU:
                boundary.drives[bit] = _FROM_DCU[name]
            else:
                boundary.drives[bit] = "1'b0"
                zeroed.append(port)
        elif match := re.fullmatch(r"FF_TX_D_(\d+)", name):
            tx_d[int(match.group(1))] = bit
        elif name in _TO_DCU:
            boundary.reads[_TO_DCU[name]] = [bit]
    missing = [port for port in _TO_DCU.values() if port not in boundary.reads]
    if missing or all(bit == "0" for bit in tx_d):
        raise NetlistError(f"DCU {dcu.name}: the design drives none of {missing or ['tx_d']}")
    boundary.reads["tx_d"] = tx_d
    netlist.remove(dcu)
    report.notes.append(f"DCU {dcu.name}: cut at its fabric ports (rx_d, pclk, rx_los, "
                        "rx_lol, pll_lol, pcie_done, pcie_con in; tx_d, tx_idle, pcie_det_en, "
                        "pcie_ct out)")
    if zeroed:
        report.notes.append("DCU outputs driven 0: " + ", ".join(zeroed))


def _cut_clocking(netlist: Netlist, boundary: Boundary, report: CutReport) -> None:
    plls = netlist.of_type("EHXPLLL")
    if len(plls) != 1:
        raise NetlistError(f"{len(plls)} PLLs in the netlist; the board top has one")
    pll = plls[0]
    boundary.drives[pll.net("CLKOP")] = "link_clk"
    boundary.drives[pll.net("LOCK")] = "pll_locked"
    netlist.remove(pll)
    report.notes.append(f"PLL {pll.name}: CLKOP is link_clk, LOCK pll_locked")
    for buffer in netlist.of_type("EXTREFB"):
        netlist.remove(buffer)
        report.notes.append(f"EXTREFB {buffer.name}: removed (only the DCU reads it)")


def pcie_netlist_verilog(netlist: Netlist, design: str = DESIGN, *, module: str | None = None,
                         header: str = "") -> str:
    """The Verilog of a Versa PCIe design's netlist cut at its DCU and pins (see the module's
    docstring); ``design`` is a key of :data:`CUTS`, ``module`` defaults to its module name.

    Raises
    ------
    NetlistError
        If a pin is not one the design's cut knows, the netlist has not one DCU and one PLL, a
        cell reads a net the cut left undriven, or a cell type has no model.
    """
    cut = CUTS[design]
    boundary = Boundary(ports=[(name, direction, width)
                               for name, (direction, width) in cut.ports.items()])
    report = CutReport()

    def pin(pad: str) -> Pin:
        if pad in cut.pins:
            return cut.pins[pad]
        raise NetlistError(f"pin {pad}: not one the cut of the Versa's {design} knows")

    cut_pads(netlist, boundary, report, pin)
    _cut_clocking(netlist, boundary, report)
    _cut_dcu(netlist, boundary, report)
    for name, (direction, _) in cut.ports.items():
        if direction == "output" and name not in boundary.reads:
            raise NetlistError(f"the netlist drives nothing for {name}")
    library = ecp5_library(netlist.cells.values())
    text = "\n".join([header, *report.lines()])
    return write_verilog(netlist, module or cut.module, boundary, library.models, header=text)


def build_pcie_netlist_simulator(design: str = DESIGN) -> Path:
    """The Verilator model of a Versa PCIe design's netlist (its top: ``CUTS[design].module``),
    the board build's netlist or, if the build cache has none, yosys' run alone."""
    from ..verilator_build import build_verilator_model

    cut = CUTS[design]
    path = cut_netlist(BOARD, design, cut.module, lambda netlist, header:
                       pcie_netlist_verilog(netlist, design, header=header))
    library = ecp5_library()
    return build_verilator_model(cut.model, [path, *library.sources], cut.module,
                                 defines=library.defines,
                                 build_args=[f"-I{library.include_dir}"],
                                 public_ports_only=True)
