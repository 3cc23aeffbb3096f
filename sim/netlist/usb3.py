"""The SuperSpeed board design's netlist as the simulation's device: cut at PIPE.

``sim:usb3?level=netlist`` runs the post-synthesis netlist of the ECPIX-5 ``usb3`` build inside
``usb3_sim_top`` with the same PIPE link partner. On the board the device's 4-symbol, 125 MHz
PIPE comes from :class:`~busprobe.gateware.usb3.ecp5_phy.ECP5Usb3Phy`: LUNA's DCU block, LUNA's
LFPS generator and detector and its SerDes reset sequencer (all at 125 MHz), and busprobe's
:class:`~busprobe.gateware.usb3.serdes_crossing.SerdesCrossing`, whose 250 MHz side meets the
DCU. The RTL simulation leaves all of that out and drives the device's PIPE; the netlist is cut
at the same place. Synthesis merges the PHY's combinational outputs into the device's LUTs
(``phy_status = ~tx_ready``, ``rx_elec_idle = ~present``) and names registers after either side
(the crossing's receive word carries a name from LUNA's physical layer), so the cut is made at
registers and primitive ports, found by structure where it can be:

* receive data: the crossing's receive FIFO is the distributed RAM written on a clock the DCU
  makes; the device's ``rx_data`` / ``rx_datak`` are the 36 ``ss`` registers loaded from that
  RAM's outputs that no such register reads back (the others hold the crossing's plan). They are
  driven from ``pipe_rx_data`` / ``pipe_rx_datak``, in the bit order of the 32- and 4-bit net
  over them (the device's names for its PIPE inputs, whatever they are called);
* transmit data: the transmit FIFO (the other distributed RAM) is written from a register that
  is loaded from another: what that first register samples is the device's ``tx_data`` /
  ``tx_datak``, read by the ports in the order of the 32- and 4-bit net over it;
* transmit controls, at the DCU's own input ports: ``pipe_tx_elec_idle`` is ``CHn_FFC_EI_EN``
  or ``CHn_FFC_LDR_CORE2TX_EN`` (LUNA's PHY gives the first ``tx_elec_idle & ~tx_detrx_lpbk``,
  the second LFPS, ``tx_elec_idle & tx_detrx_lpbk``: the partner's LFPS), ``pipe_tx_detrx_lpbk``
  is the second and ``pipe_reset`` is ``D_FFC_DUAL_RST``;
* ``phy_status``: the reset sequencer's ``tx_pcs_ready`` register (``~phy_status``) is driven
  by ``~pipe_phy_status``;
* ``rx_elec_idle``: the LFPS detector's measured half periods (``total_time_high`` / ``_low``)
  are driven with a period it takes as LFPS (its shortest half period) while
  ``pipe_rx_elec_idle`` is low, and 0 otherwise, so its ``present`` is ``~pipe_rx_elec_idle``;
* the PLL's clocks become ``clk`` (125 MHz) and its ``LOCK`` ``~rst``; then every cell the
  output ports do not depend on goes (the crossing's far side, the DCU, the pins). A DCU left
  after that means the device reads the SerDes some other way: refused, naming it.

A signal the board build fixed (the board ties ``power_present`` high; ``power_down`` and the
like are constant) has no net: its input port is left unconnected, its output reads 0, and the
generated file's header says so, as for the status outputs (``link_trained``, ...) which only
cocotb tests look at.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from .board_cut import CutReport, Pin, cut_clocking, cut_pads
from .build import build_netlist_model, cut_netlist
from .cells import ecp5_library
from .verilog import Boundary, write_verilog
from .yosys_json import Bit, Cell, Netlist, NetlistError

__all__ = ["BOARD", "usb3_netlist_verilog", "build_usb3_netlist_simulator"]

BOARD = "ecpix5-85"
#: Registers of LUNA's PHY blocks whose outputs the device reads through merged logic.
_TX_READY = r"(.*\.)?reset_sequencer\.tx_pcs_ready"
_LFPS_TIMES = (r"(.*\.)?lfps_detector\.total_time_high", r"(.*\.)?lfps_detector\.total_time_low")


class _Graph:
    """Who drives each net and who reads it, built once (the netlist has ~100 k cells)."""

    def __init__(self, netlist: Netlist) -> None:
        self.driver: dict[int, Cell] = {}
        self.readers: dict[int, list[Cell]] = defaultdict(list)
        for cell in netlist.cells.values():
            for port, bits in cell.connections.items():
                out = cell.directions.get(port) == "output"
                for bit in bits:
                    if isinstance(bit, int):
                        if out:
                            self.driver[bit] = cell
                        else:
                            self.readers[bit].append(cell)

    def outputs(self, cell: Cell) -> set[int]:
        return {b for port, bits in cell.connections.items()
                if cell.directions.get(port) == "output" for b in bits if isinstance(b, int)}

    def registers_behind(self, bit: Bit) -> set[str]:
        """The registers, RAMs and DCUs whose outputs reach ``bit`` through logic alone."""
        found, seen, work = set(), set(), [bit]
        while work:
            net = work.pop()
            if not isinstance(net, int) or net in seen or net not in self.driver:
                continue
            seen.add(net)
            cell = self.driver[net]
            if cell.type in ("TRELLIS_FF", "TRELLIS_DPR16X4", "DCUA"):
                found.add(cell.name)
                continue
            work += [b for port, bits in cell.connections.items()
                     if cell.directions.get(port) != "output" for b in bits]
        return found


def _ordered(netlist: Netlist, nets: set[int], width: int, what: str) -> list[int]:
    """The ``width`` nets of ``nets`` in the bit order of the one net name lying over them."""
    orders = {tuple(bits) for bits in netlist.netnames.values()
              if len(bits) == width and set(bits) <= nets}
    if len(orders) != 1:
        raise NetlistError(f"{what}: {len(orders)} bit orders among the names of "
                           f"{len(nets)} registers, not one {width}-bit net")
    return list(orders.pop())


def _input_of(graph: _Graph, netlist: Netlist, bit: Bit, what: str) -> Bit:
    cell = graph.driver.get(bit) if isinstance(bit, int) else None
    if cell is None or cell.type != "TRELLIS_FF":
        raise NetlistError(f"{what}: {netlist.describe(bit)} is driven by "
                           f"{cell.type + ' ' + cell.name if cell else 'nothing'}, not the "
                           "register SerdesCrossing has there")
    return cell.net("DI")


def _one_net(netlist: Netlist, graph: _Graph, pattern: str, what: str) -> list[int]:
    found = {tuple(bits) for name, bits in netlist.netnames.items() if re.fullmatch(pattern, name)}
    if len(found) != 1:
        raise NetlistError(f"{len(found)} nets named like {pattern} ({what}); expected one")
    bits = list(found.pop())
    for bit in bits:
        _input_of(graph, netlist, bit, what)
    return bits


def _cut_pipe(netlist: Netlist, boundary: Boundary, report: CutReport) -> None:
    graph = _Graph(netlist)
    dcus = netlist.of_type("DCUA")
    serdes_clocks = {b for dcu in dcus for b in graph.outputs(dcu)}
    rams = netlist.of_type("TRELLIS_DPR16X4")
    rx_ram = {r.name for r in rams if r.net("WCK") in serdes_clocks}
    # The transmit RAM: written on another clock, read by registers on the DCU's.
    read_by_serdes = set().union(*(graph.registers_behind(ff.net("DI"))
                                   for ff in netlist.of_type("TRELLIS_FF")
                                   if ff.net("CLK") in serdes_clocks))
    tx_ram = [r for r in rams if r.name in read_by_serdes and r.name not in rx_ram]
    if not rx_ram or not tx_ram:
        raise NetlistError("no distributed RAM written on a DCU clock and none read by it: no "
                           "SerdesCrossing to cut the netlist at PIPE")

    # Receive: the ss registers loaded from the receive RAM that none of them reads back.
    loaded = {}
    for ff in netlist.of_type("TRELLIS_FF"):
        if ff.net("CLK") not in serdes_clocks:
            behind = graph.registers_behind(ff.net("DI"))
            if behind & rx_ram:
                loaded[ff.name] = behind
    read_back = set().union(*loaded.values())
    word = {netlist.cells[name].net("Q") for name in loaded if name not in read_back}
    if len(word) != 36:
        raise NetlistError(f"{len(word)} registers take the receive FIFO's word, not 36 "
                           "(4 symbols and their K flags): not SerdesCrossing's structure")
    data = _ordered(netlist, word, 32, "receive word")
    kflags = _ordered(netlist, word - set(data), 4, "receive K flags")
    for port, bits in (("pipe_rx_data", data), ("pipe_rx_datak", kflags)):
        for index, bit in enumerate(bits):
            netlist.detach(bit)
            boundary.drives[bit] = f"{port}[{index}]"
    report.notes.append("pipe_rx_data, pipe_rx_datak: drive the crossing's receive word "
                        f"({len(loaded) - 36} other registers behind its FIFO go)")

    # Transmit: RAM <- register <- register <- the device's word.
    sampled = set()
    for ram in tx_ram:
        for bit in ram.connections["DI"]:
            held = _input_of(graph, netlist, bit, "transmit FIFO input")
            sampled.add(_input_of(graph, netlist, held, "transmit word register"))
    if len(sampled) != 36:
        raise NetlistError(f"the transmit FIFO stores {len(sampled)} distinct bits, not 36")
    boundary.reads["pipe_tx_data"] = _ordered(netlist, sampled, 32, "transmit word")
    boundary.reads["pipe_tx_datak"] = _ordered(
        netlist, sampled - set(boundary.reads["pipe_tx_data"]), 4, "transmit K flags")
    report.notes.append("pipe_tx_data, pipe_tx_datak: read what the crossing's transmit word "
                        "register samples")

    # Transmit controls and the PHY reset, at the DCU's inputs.
    if len(dcus) != 1:
        raise NetlistError(f"{len(dcus)} DCUs in the netlist; the PHY uses one")
    dcu, ports = dcus[0], {}
    for name in ("FFC_EI_EN", "FFC_LDR_CORE2TX_EN"):
        nets = [b for port, bits in dcu.connections.items() for b in bits
                if re.fullmatch(rf"CH\d_{name}", port) and isinstance(b, int)]
        if len(nets) != 1:
            raise NetlistError(f"DCU {dcu.name}: {len(nets)} channels drive {name}; expected one")
        ports[name] = nets[0]
    idle, lfps = ports["FFC_EI_EN"], ports["FFC_LDR_CORE2TX_EN"]
    boundary.reads["pipe_tx_elec_idle"] = [f"=n{idle} | n{lfps}"]
    boundary.reads["pipe_tx_detrx_lpbk"] = [lfps]
    reset = dcu.connections.get("D_FFC_DUAL_RST", ["x"])[0]
    if not isinstance(reset, int):
        raise NetlistError(f"DCU {dcu.name}: D_FFC_DUAL_RST is constant; no PHY reset to read")
    boundary.reads["pipe_reset"] = [reset]
    report.notes.append(f"pipe_tx_elec_idle: {dcu.name} EI_EN | LDR_CORE2TX_EN; "
                        "pipe_tx_detrx_lpbk: LDR_CORE2TX_EN (LFPS); pipe_reset: D_FFC_DUAL_RST")

    # PHY status and electrical idle: the registers LUNA's PHY computes them from.
    from busprobe.gateware.usb3.ecp5_phy import LINK_CLOCK_HZ, _LFPSDetector

    for bit in _one_net(netlist, graph, _TX_READY, "the SerDes' tx_ready"):
        netlist.detach(bit)
        boundary.drives[bit] = "~pipe_phy_status"
    shortest = _LFPSDetector(clock_frequency=LINK_CLOCK_HZ)._half_cycle_min
    for pattern in _LFPS_TIMES:
        bits = _one_net(netlist, graph, pattern, "LFPS half period")
        for index, bit in enumerate(bits):
            netlist.detach(bit)
            boundary.drives[bit] = "~pipe_rx_elec_idle" if shortest >> index & 1 else "1'b0"
    report.notes.append("pipe_phy_status: drives tx_pcs_ready (inverted); pipe_rx_elec_idle: "
                        f"drives the LFPS detector's half periods ({shortest} cycle while low)")


def usb3_netlist_verilog(netlist: Netlist, *, module: str, header: str = "") -> str:
    """The Verilog of the SuperSpeed board netlist cut at the device's PIPE.

    Raises
    ------
    NetlistError
        If the netlist does not have the structure of ``SerdesCrossing`` and LUNA's PHY blocks
        where the cut is made (each message names what is missing), the device still reads the
        DCU after the cut, or a net is left undriven.
    """
    from busprobe.gateware.usb3.sim_top import CLOCK_HZ, PORTS

    boundary = Boundary(ports=[(name, direction, width)
                               for name, (direction, width) in PORTS.items()])
    report = CutReport()
    cut_clocking(netlist, boundary, report, clock="clk", reset="rst", clock_mhz=CLOCK_HZ / 1e6)
    _cut_pipe(netlist, boundary, report)
    for port, (direction, width) in PORTS.items():
        if direction == "output" and port not in boundary.reads:
            boundary.reads[port] = ["0"] * width
            report.notes.append(f"{port}: no net in the board netlist (constant there); reads 0")
    needed = {b for bits in boundary.reads.values() for b in bits if isinstance(b, int)}
    needed |= {int(n) for bits in boundary.reads.values() for b in bits if isinstance(b, str)
               for n in re.findall(r"\bn(\d+)", b)}  # nets an expression reads
    removed = netlist.prune(needed)
    left = netlist.of_type("DCUA")
    if left:
        raise NetlistError(f"the device still reads DCU {left[0].name} after the cut at PIPE")
    cut_pads(netlist, boundary, report, lambda pad: Pin("drop"))
    kinds = sorted({c.type for c in removed})
    report.notes.append(f"removed {len(removed)} cells the output ports do not depend on "
                        f"({', '.join(kinds)})")
    library = ecp5_library(netlist.cells.values())
    text = "\n".join([header, *report.lines()])
    return write_verilog(netlist, module, boundary, library.models, header=text)
def build_usb3_netlist_simulator() -> Path:
    """The Verilator model of ``usb3_sim_top`` with the ``usb3`` board netlist as its device."""
    from busprobe.gateware.usb3.sim_top import PORTS

    from ..usb3.simulator_build import PARTNER_SOURCES, usb3_sim_top

    module = "busprobe_usb3_netlist"
    path = cut_netlist(BOARD, "usb3", module, lambda netlist, header:
                       usb3_netlist_verilog(netlist, module=module, header=header))
    return build_netlist_model("usb3-netlist", path, usb3_sim_top(module, PORTS),
                               PARTNER_SOURCES)
