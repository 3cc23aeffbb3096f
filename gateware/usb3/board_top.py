"""Board top for the SuperSpeed design on the ECPIX-5: PLL, ECP5 SerDes (DCU) and PIPE crossing.

What the simulation top leaves out lives here: the board's 100 MHz oscillator feeds an ECP5 PLL
that makes the 125 MHz ``ss``/``sync`` clock and the SerDes' 250 MHz reference; the PHY
(:class:`~.ecp5_phy.ECP5Usb3Phy`: LUNA's DCU block on the USB-C connector's SuperSpeed pair, DCU0
channel 1 as LUNA's own ECPIX-5 board file places it) moves two symbols per 250 MHz SerDes clock
and gives the device the 4-symbol, 125 MHz PIPE the simulation top has.

Every clock that drives logic is constrained and checked by nextpnr (:data:`CLOCKS_MHZ`): ``ss``
by the PLL's derived constraint, the SerDes' ``pclk`` by the PHY. The PLL's 250 MHz output
feeds only the DCU's reference input and the DCU's 500 MHz byte clock only its own FIFO, so
neither has a path nextpnr could time.
"""

from __future__ import annotations

from collections.abc import Callable

from amaranth import ClockDomain, ClockSignal, Elaboratable, Instance, Module, Signal
from amaranth.build import DiffPairs, Pins, Resource, Subsignal
from amaranth.lib.cdc import ResetSynchronizer

from .ecp5_phy import LINK_CLOCK_HZ, SERDES_CLOCK_HZ, ECP5Usb3Phy

__all__ = ["Usb3BoardTop", "CLOCKS_MHZ", "DOMAINS"]

#: The clocks of this top that drive logic, by the domain nextpnr's report is read as, and the
#: frequency each must be timed at: every one must be in the report, met.
CLOCKS_MHZ = {"ss": LINK_CLOCK_HZ / 1e6, "pclk": SERDES_CLOCK_HZ / 1e6}
#: Domains the top makes from the PLL's 125 MHz output (one clock net, reported as ``ss``).
DOMAINS = ("ss", "sync")
SERDES_REFCLK_HZ = 250e6

#: The USB-C SuperSpeed lanes of the ECPIX-5 (the ``lna``/``lnb`` pins of amaranth-boards'
#: ``usbc_mux``, which it declares as LVCMOS18D I/O: here they are the DCU's own pads) and the
#: three mux control pins alone, so the lanes are not requested twice.
ECPIX5_USB3_RESOURCES = [
    Resource("usb3_lanes", 0,
             Subsignal("rx", DiffPairs("AF9", "AF10", dir="i")),
             Subsignal("tx", DiffPairs("AD10", "AD11", dir="o"))),
    Resource("usb3_mux", 0,
             Subsignal("en", Pins("C23", dir="o")),
             Subsignal("amsel", Pins("B26", dir="o")),
             Subsignal("pol", Pins("D26", dir="o"))),
]


def _pll_125_250(m, clk100, locked):
    """ECP5 PLL: 100 MHz in, 125 MHz (CLKOP) and 250 MHz (CLKOS) out. VCO 500 MHz, PFD 25 MHz."""
    clk125, clk250 = Signal(), Signal()
    m.submodules.pll = Instance(
        "EHXPLLL",
        p_CLKI_DIV=4, p_CLKFB_DIV=5, p_FEEDBK_PATH="CLKOP",
        p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=4, p_CLKOP_CPHASE=3, p_CLKOP_FPHASE=0,
        p_CLKOS_ENABLE="ENABLED", p_CLKOS_DIV=2, p_CLKOS_CPHASE=1, p_CLKOS_FPHASE=0,
        p_OUTDIVIDER_MUXA="DIVA", p_OUTDIVIDER_MUXB="DIVB",
        p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
        p_DPHASE_SOURCE="DISABLED", p_PLL_LOCK_MODE=0,
        i_CLKI=clk100, i_CLKFB=clk125, i_RST=0, i_STDBY=0, i_PHASESEL0=0, i_PHASESEL1=0,
        i_PHASEDIR=1, i_PHASESTEP=1, i_PHASELOADREG=1, i_PLLWAKESYNC=0, i_ENCLKOP=0,
        o_CLKOP=clk125, o_CLKOS=clk250, o_LOCK=locked,
        a_FREQUENCY_PIN_CLKI="100", a_FREQUENCY_PIN_CLKOP="125", a_FREQUENCY_PIN_CLKOS="250",
        a_ICP_CURRENT="12", a_LPF_RESISTOR="8",
    )
    return clk125, clk250


class Usb3BoardTop(Elaboratable):
    """Puts the SuperSpeed device design on the ECPIX-5's USB-C SuperSpeed lanes.

    Parameters
    ----------
    design : callable
        ``design(phy=pipe, sync_frequency=hz)`` returns the device elaboratable.
    """

    def __init__(self, *, design: Callable[..., Elaboratable]):
        self.design = design

    def elaborate(self, platform):
        m = Module()
        platform.add_resources(ECPIX5_USB3_RESOURCES)
        locked = Signal()
        clk125, clk250 = _pll_125_250(m, platform.request("clk100", 0).i, locked)
        for name in DOMAINS:
            m.domains += ClockDomain(name)
            m.d.comb += ClockSignal(name).eq(clk125)
            # Released synchronously after the PLL locks; from flip-flops, so the reset that
            # reaches every register is not a long path from the PLL's LOCK output.
            m.submodules[f"{name}_reset"] = ResetSynchronizer(~locked, domain=name)
        # No constraint on the PLL outputs: nextpnr derives them from clk100's (and one on the
        # Amaranth signal would name a net synthesis has renamed).

        lanes = platform.request("usb3_lanes", 0, dir={"rx": "-", "tx": "-"})
        m.submodules.phy = phy = ECP5Usb3Phy(
            tx_pads=lanes.tx, rx_pads=lanes.rx, dual=0, channel=1,
            refclk_frequency=SERDES_REFCLK_HZ)
        # The DCU has no VBUS sense and the board routes none to the FPGA: a device plugged in
        # is powered by the port, so VBUS is taken as present (LUNA trains on it).
        m.d.comb += [phy.power_present.eq(1), phy.clk.eq(clk250)]

        # The USB-C mux routes the SuperSpeed pair to lanes A/B; which pair of the plug depends
        # on the cable's orientation, which the board's Type-C controller reports on
        # usbc_cfg.dir. Assumption (board schematic not at hand): en=1, amsel=0 (USB 3 only),
        # pol follows dir.
        mux = platform.request("usb3_mux", 0)
        orientation = platform.request("usbc_cfg", 0)
        m.d.comb += [mux.en.o.eq(1), mux.amsel.o.eq(0), mux.pol.o.eq(orientation.dir.i)]

        m.submodules.device = self.design(phy=phy, sync_frequency=LINK_CLOCK_HZ)
        return m
