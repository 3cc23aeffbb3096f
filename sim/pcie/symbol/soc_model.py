"""busprobe's PCIe SoC (the same core, CSRs, CPU and firmware as on the AC701) on the soft
endpoint's LitePCIe PHY, as a Verilator model for cocotb.

The top is :func:`busprobe.gateware.pcie.sim_top.generate_verilog`'s with
:class:`~busprobe.gateware.pcie.soft.litepcie_phy.SoftPCIEPHY` in place of ``SimPCIEPHY``:
module :data:`TOPLEVEL`, ports ``sys_clk``/``sys_rst``, the simulation UART's ``serial_*``,
and the PHY's pads ``pcie_soft_<pad>`` (``rx_word``/``tx_word`` words of four symbols as in
:mod:`.endpoint_model`, ``receiver_detected``, and the endpoint's state and counters). One
clock: ``sys_clk`` is the link's word clock (16 ns, a word each way every clock: Gen1 x1 at
62.5 MHz, as on the board), so the core runs at 62.5 MHz here. The LTSSM runs
:data:`~.amaranth_bench.SIM_TIMING`. Verilog written once per design (the endpoint's
once per source hash), Verilator run once per Verilog hash, as the other models.
"""

from __future__ import annotations

from pathlib import Path

from busprobe.gateware.pcie.soft.ltssm import GEN1_WORD_CLOCK_HZ

__all__ = ["TOPLEVEL", "PREFIX", "LINK_CLOCK_HZ", "build_soft_soc_simulator",
           "soft_soc_sources"]

TOPLEVEL = "busprobe_pcie_soft"
#: The PHY pads' prefix in the top's port names.
PREFIX = "pcie_soft_"
#: ``sys_clk``: a word of four symbols a clock at 2.5 GT/s (the board's link clock too).
LINK_CLOCK_HZ = GEN1_WORD_CLOCK_HZ


def _make_phy(platform):
    from busprobe.build_cache import build_root
    from busprobe.gateware.pcie.soft.litepcie_phy import SoftPCIEPHY
    from busprobe.protocol import pcie as proto

    from . import amaranth_bench

    return SoftPCIEPHY(platform, platform.request(PREFIX[:-1]),
                       verilog_dir=build_root() / "gateware" / "pcie",
                       timing=amaranth_bench.SIM_TIMING,
                       digest_files=[Path(amaranth_bench.__file__)],
                       bar0_size=proto.BAR0_SIZE)


def soft_soc_sources() -> list[Path]:
    """The top's Verilog (generated into ``<build root>/pcie-soft-verilog/``, with LiteX's CSR
    map beside it) and the rest it needs, the top first."""
    from busprobe.gateware.pcie.soft.litepcie_phy import soft_phy_io

    from ..testbench import build_pcie_simulator_sources

    return build_pcie_simulator_sources("pcie-soft-verilog", toplevel=TOPLEVEL,
                                        make_phy=_make_phy, phy_io=soft_phy_io(PREFIX[:-1]),
                                        clk_freq=LINK_CLOCK_HZ)


def build_soft_soc_simulator() -> Path:
    """Build (or reuse) the Verilator model; its folder."""
    from busprobe.sim.verilator_build import build_verilator_model

    from ..testbench import TIMESCALE

    return build_verilator_model("pcie-soft-soc-words", soft_soc_sources(), TOPLEVEL,
                                 timescale=TIMESCALE, public_ports_only=True)
