"""Build the USB 2.0 simulator: device design + ULPI PHY model in Verilator, cached by hash."""

from __future__ import annotations

from pathlib import Path

from ..sim_top import HDL, SimTop
from ..verilator_build import build_root, build_verilator_model

__all__ = ["TOPLEVEL", "PHY_SOURCE", "usb2_sim_top", "build_usb2_simulator"]

TOPLEVEL = "usb2_sim_top"
#: The ULPI PHY model the design is attached to.
PHY_SOURCE = HDL / "ulpi_phy.sv"
#: The ULPI between the design and the PHY model (same names on both; the PHY has no reset pin).
ULPI_BUS = {port: port for port in ("ulpi_data_i", "ulpi_data_o", "ulpi_data_oe", "ulpi_dir",
                                    "ulpi_nxt", "ulpi_stp")}


def usb2_sim_top(dut: str) -> SimTop:
    """The simulation top with ``dut`` (a module with the ports of ``gateware.usb2.sim_top``: the
    RTL of a design, or its netlist cut at ULPI) on the PHY model."""
    from busprobe.gateware.usb2.sim_top import PORTS

    return SimTop(TOPLEVEL, "ulpi_phy", PHY_SOURCE, dut, PORTS, bus=ULPI_BUS)


def build_usb2_simulator(design: str = "busprobe") -> Path:
    """Generate the design's Verilog (``gateware.usb2.sim_top``), build it with the PHY.

    Both steps are cached by content hash, so a second call in the same or a later run is
    instant while nothing changed. (The gate-level netlist of the design's board build, in the
    same top: :func:`busprobe.sim.netlist.usb2.build_usb2_netlist_simulator`.)
    """
    from busprobe.gateware.usb2.sim_top import TOP_NAMES, generate_verilog

    verilog = generate_verilog(build_root() / "gateware" / "usb2", design=design)
    top = usb2_sim_top(TOP_NAMES[design])
    sources = [verilog, PHY_SOURCE, top.write(build_root() / "sim" / "tops")]
    return build_verilator_model(f"usb2-{design}", sources, TOPLEVEL, public_ports_only=True)
