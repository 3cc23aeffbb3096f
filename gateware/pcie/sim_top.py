"""Verilog of the busprobe PCIe core with its PHY interface as top-level ports (for Verilator).

:func:`generate_verilog` elaborates :class:`~busprobe.gateware.pcie.core.BusprobePCIeSoC` around
:class:`~busprobe.gateware.pcie.sim_phy.SimPCIEPHY` and writes, into ``out_dir``:

``busprobe_pcie_sim.v``
    Top module ``busprobe_pcie_sim``. Ports: ``sys_clk`` (the 125 MHz core clock), ``sys_rst``
    (active high), and ``pcie_sim_<pad>`` for every pad listed in :mod:`.sim_phy`.
``csr.csv`` / ``csr.json``
    LiteX's CSR map export (compared with :data:`busprobe.protocol.pcie.CSRS` by a test).

Run as ``python -m busprobe.gateware.pcie.sim_top OUT_DIR``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from busprobe.protocol import pcie as proto
from litex.build.generic_platform import GenericPlatform, Pins
from litex.build.io import CRG
from litex.soc.integration.builder import Builder

from .core import BusprobePCIeSoC
from .sim_phy import SimPCIEPHY, sim_phy_io

__all__ = ["TOPLEVEL", "generate_verilog", "SimTopPlatform"]

TOPLEVEL = "busprobe_pcie_sim"


class SimTopPlatform(GenericPlatform):
    """A platform whose "build" is writing the Verilog: no vendor tools, no pins to place."""

    def __init__(self):
        io = [("sys_clk", 0, Pins(1)), ("sys_rst", 0, Pins(1)), *sim_phy_io()]
        GenericPlatform.__init__(self, "sim", io)

    def build(self, fragment, build_dir, build_name, run=False, **kwargs):
        out = Path(build_dir)
        out.mkdir(parents=True, exist_ok=True)
        verilog = self.get_verilog(fragment, name=build_name)
        verilog.write(str(out / f"{build_name}.v"))
        return out / f"{build_name}.v"


def build_sim_soc() -> BusprobePCIeSoC:
    """The core around the simulated PHY, not yet finalised."""
    platform = SimTopPlatform()
    crg = CRG(platform.request("sys_clk"), rst=platform.request("sys_rst"))
    phy = SimPCIEPHY(platform.request("pcie_sim"), data_width=proto.DATA_WIDTH,
                     bar0_size=proto.BAR0_SIZE)
    return BusprobePCIeSoC(platform, phy=phy, clk_freq=proto.CLOCK_HZ, crg=crg)


def generate_verilog(out_dir: str | Path) -> Path:
    """Write the simulation top and its CSR map into ``out_dir``; return the Verilog file."""
    out = Path(out_dir).resolve()
    soc = build_sim_soc()
    builder = Builder(soc, output_dir=str(out), gateware_dir=str(out),
                      csr_csv=str(out / "csr.csv"), csr_json=str(out / "csr.json"),
                      compile_software=False, compile_gateware=False)
    builder.build(build_name=TOPLEVEL, run=False)
    return out / f"{TOPLEVEL}.v"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    print(generate_verilog(parser.parse_args().out_dir))


if __name__ == "__main__":
    main()
