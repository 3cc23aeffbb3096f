"""Board top for PCIe designs on the Lattice ECP5-5G Versa: its x1 edge connector on a DCU.

The Versa (LFE5UM5G-45F-8BG381) has a PCIe x1 edge connector wired to DCU0 channel 0, whose
reference input is the connector's 100 MHz REFCLK through the DCU's own pads (the ``EXTREFB``
at site ``EXTREF0``); amaranth-boards' Versa platform declares none of these, so
:class:`VersaPciePlatform` adds them (:data:`VERSA_PCIE_RESOURCES`, pins as litex-boards' Versa
platform has them and Yumewatari's Versa PHY places them). The top makes:

- ``ctl``: the board's 100 MHz oscillator, free-running before the DCU's PLL locks, for LUNA's
  DCU reset sequencer and register interface; reset by the board's button.
- The PHY (:class:`~busprobe.gateware.pcie.soft.ecp5_pcie_phy.Ecp5PciePhy`), whose DCU side
  runs on the DCU's 125 MHz fabric clock (``pclk``, two symbols a clock, constrained there).
- ``link``: 62.5 MHz, a word of four symbols a clock at Gen1, from a fabric PLL halving the
  DCU's fabric clock (the PHY's FIFOs have no elasticity: the link's clock must come from the
  DCU's). It is held in reset until the PLL locks, while the slot asserts PERST#, and while
  the button is down.

The design runs in ``link`` (its ``sync``, renamed) and is given the PHY: ``design(phy=phy)``;
if it has ``leds`` they drive the board's eight LEDs. Every clock that drives logic is
constrained and must be in nextpnr's report (:data:`CLOCKS_MHZ`): ``ctl`` by the oscillator
pin's constraint, ``pclk`` and ``link`` on the top's own nets (see ``elaborate``).
"""

from __future__ import annotations

from collections.abc import Callable

from amaranth import ClockDomain, ClockSignal, DomainRenamer, Elaboratable, Instance, Module, Signal
from amaranth.build import Attrs, DiffPairs, PinsN, Resource, Subsignal
from amaranth.lib.cdc import ResetSynchronizer
from amaranth_boards.versa_ecp5_5g import VersaECP55GPlatform

from ..pcie.soft.ecp5_pcie_phy import SERDES_CLOCK_HZ, WORD_LINK_CLOCK_HZ, Ecp5PciePhy

__all__ = ["VersaPciePlatform", "VersaPcieTop", "CLOCKS_MHZ", "VERSA_PCIE_RESOURCES", "PCIE_DUAL",
           "PCIE_CHANNEL", "REFCLK_SITE", "CONTROL_CLOCK_HZ", "REFCLK_HZ"]

#: The clocks of this top that drive logic, by domain, and the frequency each must be timed at.
CONTROL_CLOCK_HZ = 100e6
CLOCKS_MHZ = {"link": WORD_LINK_CLOCK_HZ / 1e6, "pclk": SERDES_CLOCK_HZ / 1e6,
              "ctl": CONTROL_CLOCK_HZ / 1e6}
#: Where the edge connector's lane is: DCU0 channel 0, its reference on EXTREF0.
PCIE_DUAL, PCIE_CHANNEL, REFCLK_SITE = 0, 0, "EXTREF0"
REFCLK_HZ = 100e6

#: The x1 edge connector: REFCLK, the lane (the DCU's own pads: no I/O buffer) and PERST#.
VERSA_PCIE_RESOURCES = [
    Resource("pcie_x1", 0,
             Subsignal("refclk", DiffPairs("Y11", "Y12", dir="i")),
             Subsignal("rx", DiffPairs("Y5", "Y6", dir="i")),
             Subsignal("tx", DiffPairs("W4", "W5", dir="o")),
             Subsignal("perst", PinsN("A6", dir="i"), Attrs(IO_TYPE="LVCMOS33"))),
]


class VersaPciePlatform(VersaECP55GPlatform):
    """amaranth-boards' ECP5-5G Versa with the PCIe edge connector (``VERSA_PCIE_RESOURCES``)."""

    resources = [*VersaECP55GPlatform.resources, *VERSA_PCIE_RESOURCES]


def _extref(m, pads):
    """The DCU's reference clock input buffer on the connector's REFCLK pads."""
    refclk = Signal()
    m.submodules.extref = Instance(
        "EXTREFB",
        i_REFCLKP=pads.p, i_REFCLKN=pads.n, o_REFCLKO=refclk,
        p_REFCK_PWDNB="0b1", p_REFCK_RTERM="0b1", p_REFCK_DCBIAS_EN="0b0",
        a_LOC=REFCLK_SITE)
    return refclk


def _link_pll(m, clk125, locked):
    """ECP5 PLL: the DCU's 125 MHz in, the link's 62.5 MHz (CLKOP) out. CLKI divided by 2 at
    the phase detector (62.5 MHz), CLKOP fed back undivided, the VCO at 8 times the output
    (500 MHz, inside the ECP5's 400-800)."""
    link_clk = Signal()
    m.submodules.link_pll = Instance(
        "EHXPLLL",
        p_CLKI_DIV=2, p_CLKFB_DIV=1, p_FEEDBK_PATH="CLKOP",
        p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=8, p_CLKOP_CPHASE=7, p_CLKOP_FPHASE=0,
        p_OUTDIVIDER_MUXA="DIVA",
        p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
        p_DPHASE_SOURCE="DISABLED", p_PLL_LOCK_MODE=0,
        i_CLKI=clk125, i_CLKFB=link_clk, i_RST=0, i_STDBY=0, i_PHASESEL0=0, i_PHASESEL1=0,
        i_PHASEDIR=1, i_PHASESTEP=1, i_PHASELOADREG=1, i_PLLWAKESYNC=0, i_ENCLKOP=0,
        o_CLKOP=link_clk, o_LOCK=locked,
        a_FREQUENCY_PIN_CLKI="125", a_FREQUENCY_PIN_CLKOP=f"{WORD_LINK_CLOCK_HZ / 1e6:g}",
        a_ICP_CURRENT="12", a_LPF_RESISTOR="8",
    )
    return link_clk


class VersaPcieTop(Elaboratable):
    """Puts a PCIe design on the Versa's x1 edge connector (see the module docstring).

    Attributes
    ----------
    phy: Ecp5PciePhy
        Made at elaboration.

    Parameters
    ----------
    design: callable
        ``design(phy=phy)`` returns the design's elaboratable, in ``sync`` (run as ``link``).
    """

    def __init__(self, *, design: Callable[..., Elaboratable]):
        self.design = design
        self.phy = None

    def elaborate(self, platform):
        m = Module()
        pcie = platform.request("pcie_x1", 0, dir={"refclk": "-", "rx": "-", "tx": "-"})
        button = platform.request("rst", 0).i

        m.domains.ctl = ClockDomain("ctl")
        m.d.comb += ClockSignal("ctl").eq(platform.request("clk100", 0).i)
        m.submodules.ctl_reset = ResetSynchronizer(button, domain="ctl")

        self.phy = phy = Ecp5PciePhy(
            tx_pads=pcie.tx, rx_pads=pcie.rx, dual=PCIE_DUAL, channel=PCIE_CHANNEL,
            refclk_frequency=REFCLK_HZ, domain="link", control_domain="ctl")
        m.submodules.phy = phy
        m.d.comb += phy.refclk.eq(_extref(m, pcie.refclk))

        # Both clocks constrained here, on nets of this module kept through synthesis: the
        # PHY's own constraint names a net of whichever of its submodules Amaranth names the
        # local domain's clock after, which yosys may merge away (nextpnr then warns and drops
        # it, and with it the constraint it would derive through the PLL).
        serdes_clk = Signal(attrs={"keep": 1})
        locked = Signal(init=1)
        m.d.comb += serdes_clk.eq(phy.serdes_clk)
        platform.add_clock_constraint(serdes_clk, SERDES_CLOCK_HZ)
        m.domains.link = ClockDomain("link")
        link_clk = Signal(attrs={"keep": 1})
        m.d.comb += link_clk.eq(_link_pll(m, serdes_clk, locked))
        platform.add_clock_constraint(link_clk, WORD_LINK_CLOCK_HZ)
        m.d.comb += ClockSignal("link").eq(link_clk)
        # Released synchronously, from flip-flops (the reset reaching every register of the
        # link is then not a long path from the PLL's LOCK or the pins).
        m.submodules.link_reset = ResetSynchronizer(~locked | pcie.perst.i | button,
                                                    domain="link")

        m.submodules.design = design = DomainRenamer({"sync": "link"})(self.design(phy=phy))
        if hasattr(design, "leds"):
            for i in range(len(design.leds)):
                m.d.comb += platform.request("led", i).o.eq(design.leds[i])
        return m
