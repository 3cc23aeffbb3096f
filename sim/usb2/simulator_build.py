"""Build the USB 2.0 simulator: device design + ULPI PHY model in Verilator, cached by hash."""

from __future__ import annotations

from pathlib import Path

from ..sim_top import HDL, SimTop
from ..verilator_build import build_root, build_verilator_model

__all__ = ["TOPLEVEL", "build_usb2_simulator"]

TOPLEVEL = "usb2_sim_top"
#: The ULPI between the design and the PHY model (same names on both; the PHY has no reset pin).
ULPI_BUS = {port: port for port in ("ulpi_data_i", "ulpi_data_o", "ulpi_data_oe", "ulpi_dir",
                                    "ulpi_nxt", "ulpi_stp")}


def build_usb2_simulator(design: str = "busprobe") -> Path:
    """Generate the design's Verilog (``gateware.usb2.sim_top``), build it with the PHY.

    Both steps are cached by content hash, so a second call in the same or a later run is
    instant while nothing changed.
    """
    from busprobe.gateware.usb2.sim_top import PORTS, TOP_NAMES, generate_verilog

    verilog = generate_verilog(build_root() / "gateware" / "usb2", design=design)
    top = SimTop(TOPLEVEL, "ulpi_phy", HDL / "ulpi_phy.sv", TOP_NAMES[design], PORTS,
                 bus=ULPI_BUS)
    sources = [verilog, HDL / "ulpi_phy.sv", top.write(build_root() / "sim" / "tops")]
    return build_verilator_model(f"usb2-{design}", sources, TOPLEVEL, public_ports_only=True)
