"""Build the USB 3.0 simulator: device design + PIPE link partner in Verilator, cached by hash."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from busprobe.protocol import usb3

from ..sim_top import HDL, SimTop
from ..verilator_build import build_root, build_verilator_model

__all__ = ["TOPLEVEL", "PARTNER_SOURCES", "DESIGNS", "build_usb3_simulator", "symbol_values",
           "usb3_sim_top"]

TOPLEVEL = "usb3_sim_top"
#: HDL sources of the link partner (the device design and the generated top are added).
PARTNER_SOURCES = (HDL / "pipe_receiver.sv", HDL / "pipe_partner.sv")
#: The PIPE between the design (``pipe_`` + LUNA's PIPEInterface names) and the partner.
PIPE_BUS = {f"pipe_{name}": name for name in (
    "rx_data", "rx_datak", "rx_valid", "rx_status", "phy_status", "rx_elec_idle",
    "power_present", "tx_data", "tx_datak", "tx_elec_idle", "tx_detrx_lpbk")} | {
    "pipe_reset": "phy_reset"}
#: The design's state the tests read beside the partner's ports (stock LUNA has only the first).
STATUS = {"link_trained": 1, "link_in_reset": 1, "configuration": 8}


def symbol_values() -> dict[str, str]:
    """The K symbols the partner frames with, from LUNA's one definition (physical/coding.py)."""
    from luna.gateware.usb.usb3.physical import coding

    return {f"K_{name}": f"8'h{getattr(coding, name).value:02X}"
            for name in ("SKP", "COM", "SHP", "SLC", "SDP", "END", "EDB", "EPF")}


#: Designs the simulator can hold: busprobe's (``gateware/usb3/sim_top.py``: the probe,
#: ``storage``, the null disk, and ``streams``, the probe with bulk streams) and a stock LUNA
#: device with only its control endpoint (``scratch_top``), all with the same PIPE ports.
DESIGNS = ("busprobe", "storage", "streams", "stock")


def usb3_sim_top(dut: str, ports: Mapping[str, tuple[str, int]]) -> SimTop:
    """The simulation top with ``dut`` (with ``ports``: the RTL of a design, or the board
    netlist cut at PIPE) on the link partner."""
    return SimTop(TOPLEVEL, "pipe_partner", HDL / "pipe_partner.sv", dut, ports,
                  bus=PIPE_BUS, exports=STATUS,
                  parameters={**symbol_values(),
                              "SKP_INTERVAL": str(usb3.SKP_INTERVAL_SYMBOLS)})


def build_usb3_simulator(design: str = "busprobe") -> Path:
    """Generate the design's Verilog and build it with the link partner (both steps cached).

    (busprobe's design as the gate-level netlist of its ECPIX-5 board build, in the same top:
    :func:`busprobe.sim.netlist.usb3.build_usb3_netlist_simulator`.)
    """
    out = build_root() / "gateware" / "usb3"
    if design in ("busprobe", "storage", "streams"):
        from busprobe.gateware.usb3.sim_top import PORTS, TOP_NAMES, generate_verilog
        verilog, top_name = generate_verilog(out, design=design), TOP_NAMES[design]
    elif design == "stock":
        from .scratch_top import PORTS, TOP_NAME, generate_verilog
        verilog, top_name = generate_verilog(out), TOP_NAME
    else:
        raise ValueError(f"unknown USB3 design {design!r} (choose from {', '.join(DESIGNS)})")
    top = usb3_sim_top(top_name, PORTS)
    sources = [verilog, *PARTNER_SOURCES, top.write(build_root() / "sim" / "tops")]
    return build_verilator_model(f"usb3-{design}", sources, TOPLEVEL, public_ports_only=True)
