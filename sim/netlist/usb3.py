"""The SuperSpeed board design's netlist as the simulation's device: cut at PIPE.

``sim:usb3?level=netlist`` runs the post-synthesis netlist of the ECPIX-5 ``usb3`` build inside
``usb3_sim_top`` with the same PIPE link partner. The RTL simulation's top leaves out the ECP5
SerDes (DCU), the PLL and LUNA's ``AsyncPIPEInterface`` (the board top's ``pipe`` submodule: two
asynchronous FIFOs and a row of two-flip-flop synchronizers between the SerDes' 250 MHz side and
the device's 125 MHz side) and drives the device's 4-symbol PIPE directly. Synthesis merges the
device's output logic into the first cells of ``pipe``, so the cut is made where each crossing
starts, found by the structure LUNA gives it (``luna/gateware/interface/pipe.py``):

* receive: the registered output of the receive FIFO (``pipe.r_data``: per half-word of the
  gearbox the 2-symbol data, K flags, valid, status and PHY status) is driven from the
  ``pipe_rx_*`` / ``pipe_phy_status`` ports, both halves alike; ``pipe``'s own combinational
  reassembly of it stays, as on the board;
* ``rx_elec_idle``: the output of its synchronizer is driven by its port;
* transmit data: what the transmit FIFO's storage is written with (traced back from the gearbox
  registers ``pipe.geared_tx_data`` / ``_datak`` through the FIFO) is read by ``pipe_tx_*``;
* transmit controls: what each synchronizer's first flip-flop samples (traced back from
  ``pipe.tx_elec_idle``, ...) is read by its port; ``pipe_reset`` is the asynchronous reset the
  device's reset controller gives ``pipe``'s reset synchronizer;
* the PLL's clocks become ``clk`` (125 MHz) and its ``LOCK`` ``~rst``; then every cell the
  output ports do not depend on goes (the FIFOs' far sides, the DCU, the pins).

A signal the board build fixed (the board ties ``power_present`` high; ``power_down`` and the
like are constant) has no net: its input port is left unconnected, its output reads 0, and the
generated file's header says so, as for the status outputs (``link_trained``, ...) which only
cocotb tests look at.
"""

from __future__ import annotations

import re
from pathlib import Path

from .board_cut import CutReport, Pin, cut_clocking, cut_pads
from .build import build_netlist_model, cut_netlist
from .cells import ecp5_library
from .verilog import Boundary, write_verilog
from .yosys_json import Bit, Netlist, NetlistError

__all__ = ["BOARD", "usb3_netlist_verilog", "build_usb3_netlist_simulator"]

BOARD = "ecpix5-85"
#: Bits per gearbox half-word in the receive FIFO: data, K flags, valid, status, PHY status.
_RX_FIELDS = (("pipe_rx_data", 16), ("pipe_rx_datak", 2), ("pipe_rx_valid", 1),
              ("pipe_rx_status", 3), ("pipe_phy_status", 1))
#: Transmit controls crossing through a synchronizer, by the name of its output in ``pipe``.
_TX_CONTROLS = ("tx_elec_idle", "tx_detrx_lpbk", "rx_polarity", "rx_termination", "power_down",
                "phy_mode", "rate", "elas_buf_mode", "tx_deemph", "tx_margin", "tx_swing",
                "rx_eq_training")


def _only(netlist: Netlist, pattern: str) -> list[Bit] | None:
    """The bits of the one net whose names match ``pattern`` (a net may have several)."""
    found = {tuple(bits): name for name, bits in netlist.netnames.items()
             if re.fullmatch(pattern, name)}
    if len(found) > 1:
        raise NetlistError(f"{len(found)} nets match {pattern}: {', '.join(found.values())}")
    return list(next(iter(found))) if found else None


def _input_of(netlist: Netlist, bit: Bit, kind: str, port: str) -> Bit:
    """The ``port`` input of the ``kind`` cell driving ``bit``, or raise naming what is there."""
    found = netlist.driver(bit)
    if found is None or found[0].type != kind:
        raise NetlistError(f"{netlist.describe(bit)} is driven by "
                           f"{found[0].type + ' ' + found[0].name if found else 'nothing'}, "
                           f"not the {kind} LUNA's AsyncPIPEInterface has there")
    cell, _, index = found
    bits = cell.connections[port]
    return bits[index] if len(bits) > 1 else bits[0]


def _cut_pipe(netlist: Netlist, boundary: Boundary, report: CutReport) -> None:
    # Receive FIFO output register -> from the ports, every half-word alike.
    r_data = _only(netlist, r"pipe\.r_data(\$\d+)?")
    if r_data is None:
        raise NetlistError("no pipe.r_data net: nowhere to cut the netlist at PIPE")
    half = sum(width for _, width in _RX_FIELDS)
    if len(r_data) % half:
        raise NetlistError(f"pipe.r_data has {len(r_data)} bits, not a multiple of {half}")
    for gear in range(len(r_data) // half):
        offset = gear * half
        for port, width in _RX_FIELDS:
            part = gear if port in ("pipe_rx_data", "pipe_rx_datak") else 0
            for index in range(width):
                bit = r_data[offset + index]
                if isinstance(bit, int):
                    netlist.detach(bit)
                    boundary.drives[bit] = f"{port}[{part * width + index}]" if port in (
                        "pipe_rx_data", "pipe_rx_datak", "pipe_rx_status") else port
            offset += width
    report.notes.append(f"pipe_rx_*, pipe_phy_status: drive pipe.r_data ({len(r_data)} bits)")
    # Receive-side synchronizer outputs.
    for name in ("rx_elec_idle", "power_present"):
        bits = _only(netlist, rf"device\..*\.{name}")
        found = netlist.driver(bits[0]) if bits else None
        if bits is None or found is None or not found[0].name.startswith("pipe."):
            report.notes.append(f"pipe_{name}: no synchronizer output in the netlist; "
                                "unconnected (constant on the board)")
            continue
        netlist.detach(bits[0])
        boundary.drives[bits[0]] = f"pipe_{name}"
        report.notes.append(f"pipe_{name}: drives the output of {found[0].name}")
    # Transmit data: gearbox register <- FIFO read register <- storage; read what is written.
    for port, name in (("pipe_tx_data", "geared_tx_data"), ("pipe_tx_datak", "geared_tx_datak")):
        geared = _only(netlist, rf"pipe\.{name}")
        if geared is None:
            raise NetlistError(f"no pipe.{name} net to trace the transmit FIFO from")
        written = []
        for bit in geared:
            read = _input_of(netlist, _input_of(netlist, bit, "TRELLIS_FF", "DI"),
                             "TRELLIS_FF", "DI")
            found = netlist.driver(read)
            if found is None or found[0].type != "TRELLIS_DPR16X4":
                raise NetlistError(f"pipe.{name}: {netlist.describe(read)} does not come "
                                   "from the transmit FIFO's storage")
            written.append(found[0].connections["DI"][found[2]])
        boundary.reads[port] = written
        report.notes.append(f"{port}: reads what the transmit FIFO stores")
    # Transmit controls: what each synchronizer's first stage samples.
    for name in _TX_CONTROLS:
        bits = _only(netlist, rf"pipe\.{name}")
        port = f"pipe_{name}"
        if bits is None:
            continue  # constant on the board: reads 0 (below)
        boundary.reads[port] = [
            _input_of(netlist, _input_of(netlist, b, "TRELLIS_FF", "DI"), "TRELLIS_FF", "DI")
            for b in bits]
        report.notes.append(f"{port}: reads the input of pipe.{name}'s synchronizer")
    # The PHY reset: the asynchronous reset the device drives into pipe's reset synchronizer.
    resets = {cell.net("LSR") for cell in netlist.of_type("TRELLIS_FF")
              if cell.name.startswith("pipe.") and cell.parameters.get("SRMODE") == "ASYNC"
              and (found := netlist.driver(cell.net("LSR"))) is not None
              and found[0].name.startswith("device.")}
    if len(resets) != 1:
        raise NetlistError(f"{len(resets)} resets from the device into pipe; expected one "
                           "(its reset synchronizer)")
    boundary.reads["pipe_reset"] = [resets.pop()]
    report.notes.append("pipe_reset: reads the device's reset of pipe's reset synchronizer")


def usb3_netlist_verilog(netlist: Netlist, *, module: str, header: str = "") -> str:
    """The Verilog of the SuperSpeed board netlist cut at the device's PIPE.

    Raises
    ------
    NetlistError
        If the netlist does not have the structure of LUNA's ``AsyncPIPEInterface`` where the
        cut is made (each message names the net), a cell the ports depend on has no model (the
        DCU, were the device to read it other than through PIPE), or a net is left undriven.
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
    removed = netlist.prune(needed)
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
