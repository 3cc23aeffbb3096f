"""Build the USB 2.0 simulator: device design + ULPI PHY model in Verilator, cached by hash."""

from __future__ import annotations

from pathlib import Path

from ..toolchain import build_root, build_verilator_model
from .phy import PHY_SOURCES

__all__ = ["TOPLEVEL", "build_usb2_simulator"]

TOPLEVEL = "usb2_sim_top"


def build_usb2_simulator(design: str = "busprobe", level: str = "rtl") -> Path:
    """Generate the design's Verilog (``gateware.usb2.sim_top``), build it with the PHY.

    Both steps are cached by content hash, so a second call in the same or a later run is
    instant while nothing changed. ``level="netlist"``: the gate-level netlist of the design's
    board build instead (:mod:`busprobe.sim.netlist.usb2`), in the same top.
    """
    if level == "netlist":
        from ..netlist.usb2 import build_usb2_netlist_simulator

        return build_usb2_netlist_simulator(design)
    from busprobe.gateware.usb2.sim_top import TOP_NAMES, generate_verilog

    verilog = generate_verilog(build_root() / "gateware" / "usb2", design=design)
    return build_verilator_model(f"usb2-{design}", [verilog, *PHY_SOURCES], TOPLEVEL,
                                 defines={"DUT_MODULE": TOP_NAMES[design]},
                                 public_ports_only=True)
