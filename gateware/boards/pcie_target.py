"""LiteX target: the busprobe PCIe core on a 7-series board's hard IP, x1 Gen2.

:class:`S7PCIEPHY` wraps Xilinx's ``pcie_7x`` IP (instantiated as ``pcie_s7``; Vivado generates
it from the TCL this target emits) on the board's ``pcie_x1`` lanes. The core's ``sys`` domain is
the PHY's 125 MHz user clock (as LitePCIe's standalone core does it), so the DMA datapath runs
at 64 bit x 125 MHz = 1 GB/s against a 500 MB/s Gen2 x1 link: never the bottleneck. The SoC's
firmware goes into its ROM (``firmware``: the image's words), its UART onto the board's
``serial`` pins, and the link history reads the hard IP's status (:func:`s7_link_state`).
"""

from __future__ import annotations

from busprobe.gateware.pcie.core import BusprobePCIeSoC
from busprobe.protocol import pcie as proto
from litepcie.phy.s7pciephy import S7PCIEPHY
from litex.gen import LiteXModule
from migen import ClockDomain, ClockSignal, ResetSignal

__all__ = ["PCIeUserClockCRG", "build_pcie_target_soc", "s7_link_state"]


class PCIeUserClockCRG(LiteXModule):
    """``sys`` = the PCIe PHY's user clock and reset (``pcie`` domain, created by the PHY)."""

    def __init__(self):
        self.cd_sys = ClockDomain()
        self.comb += [
            self.cd_sys.clk.eq(ClockSignal("pcie")),
            self.cd_sys.rst.eq(ResetSignal("pcie")),
        ]


def s7_link_state(phy: S7PCIEPHY) -> dict:
    """The link history's inputs from LitePCIe's 7-series PHY: its ``link_status`` CSR's fields
    (LTSSM, rate, width, link up, already in ``sys``) and Device Control as the IP outputs it.

    LitePCIe keeps ``cfg_dcommand`` inside the PHY (it derives its clamped MPS/MRRS from it);
    the history wants the register the host programmed, so it is taken from the IP's port list,
    the one place busprobe reaches into the PHY. It is in the IP's user clock, which is ``sys``
    here (:class:`PCIeUserClockCRG`).
    """
    fields = phy._link_status.fields
    return {"ltssm": fields.ltssm, "up": fields.status, "rate": fields.rate,
            "width": fields.width, "device_control": phy.pcie_phy_params["o_cfg_dcommand"]}


def build_pcie_target_soc(platform, *, lanes: str = "pcie_x1",
                          firmware: list[int] | None = None) -> BusprobePCIeSoC:
    """The busprobe PCIe SoC on ``platform``'s ``lanes`` resource (not yet finalised).

    Parameters
    ----------
    platform
        A LiteX 7-series platform (e.g. ``litex_boards.platforms.xilinx_ac701.Platform()``).
    lanes : str
        Name of the platform's PCIe resource; x1 keeps the link at one lane.
    firmware : list of int or None
        The ROM image (:func:`busprobe.bitstream.firmware.build_firmware`'s words).
    """
    pads = platform.request(lanes)
    if len(pads.tx_p) != 1:
        raise ValueError(f"{lanes} has {len(pads.tx_p)} lanes; the busprobe target is x1")
    phy = S7PCIEPHY(platform, pads, data_width=proto.DATA_WIDTH, bar0_size=proto.BAR0_SIZE)
    # The IP's identity and BAR0 follow the busprobe contract (LitePCIe defaults: 1 MiB BAR0).
    phy.update_config({
        "Vendor_ID": f"{proto.VENDOR_ID:04X}",
        "Device_ID": f"{proto.DEVICE_ID:04X}",
        "Bar0_Scale": "Kilobytes",
        "Bar0_Size": proto.BAR0_SIZE // 1024,
    })
    return BusprobePCIeSoC(platform, phy=phy, link_state=s7_link_state(phy),
                           clk_freq=proto.CLOCK_HZ, crg=PCIeUserClockCRG(), firmware=firmware,
                           uart_name="serial")
