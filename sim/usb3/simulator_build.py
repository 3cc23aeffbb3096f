"""Build the USB 3.0 simulator: device design + PIPE link partner in Verilator, cached by hash."""

from __future__ import annotations

from pathlib import Path

from ..toolchain import build_root, build_verilator_model

__all__ = ["TOPLEVEL", "PARTNER_SOURCES", "DESIGNS", "build_usb3_simulator", "symbol_defines"]

TOPLEVEL = "usb3_sim_top"
HDL = Path(__file__).resolve().parent.parent / "hdl"
#: HDL sources of the link partner and the simulation top (the device design is added).
PARTNER_SOURCES = (HDL / "pipe_receiver.sv", HDL / "pipe_partner.sv", HDL / "usb3_sim_top.sv")


def symbol_defines() -> dict[str, str]:
    """The K symbols the partner frames with, from LUNA's one definition (physical/coding.py)."""
    from luna.gateware.usb.usb3.physical import coding

    return {f"K_{name}": f"8'h{getattr(coding, name).value:02X}"
            for name in ("SKP", "COM", "SHP", "SLC", "SDP", "END", "EDB", "EPF")}


#: Designs the simulator can hold: busprobe's (``gateware/usb3/sim_top.py``) and a stock LUNA
#: device with only its control endpoint (``scratch_top``), both with the same PIPE ports.
DESIGNS = ("busprobe", "stock")


def build_usb3_simulator(design: str = "busprobe", level: str = "rtl") -> Path:
    """Generate the design's Verilog and build it with the link partner (both steps cached).

    ``level="netlist"``: busprobe's design as the gate-level netlist of its ECPIX-5 board build
    (:mod:`busprobe.sim.netlist.usb3`), in the same top.
    """
    if level == "netlist":
        if design != "busprobe":
            raise ValueError(f"no board build of the USB3 design {design!r}")
        from ..netlist.usb3 import build_usb3_netlist_simulator

        return build_usb3_netlist_simulator()
    out = build_root() / "gateware" / "usb3"
    defines: dict[str, object] = dict(symbol_defines())
    if design == "busprobe":
        from busprobe.gateware.usb3.sim_top import TOP_NAME, generate_verilog
    elif design == "stock":
        from .scratch_top import TOP_NAME, generate_verilog
        defines["DUT_STOCK"] = 1
    else:
        raise ValueError(f"unknown USB3 design {design!r} (choose from {', '.join(DESIGNS)})")
    verilog = generate_verilog(out)
    return build_verilator_model(f"usb3-{design}", [verilog, *PARTNER_SOURCES], TOPLEVEL,
                                 defines={"DUT_MODULE": TOP_NAME, **defines},
                                 public_ports_only=True)
