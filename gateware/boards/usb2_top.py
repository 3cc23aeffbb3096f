"""Board top for a USB 2.0 design: clock domains from the board, the design on one ULPI PHY."""

from __future__ import annotations

from collections.abc import Callable

from amaranth import ClockDomain, ClockSignal, Elaboratable, Module
from busprobe.protocol.usb2 import CLOCK_HZ as ULPI_CLOCK_HZ

__all__ = ["Usb2BoardTop"]


class Usb2BoardTop(Elaboratable):
    """Puts a USB 2.0 device design on a board's ULPI PHY.

    The design gets the PHY resource exactly as ``platform.request`` returns it (``.i``/``.o``/
    ``.oe`` subfields, as LUNA's ULPI translator expects) and runs in the 60 MHz ``usb`` domain,
    so the same design class is simulated with its ULPI bus as top-level ports. This top owns
    the clocking, which differs per board:

    - PHY clock is an FPGA output (Cynthion: the USB3343 takes a 60 MHz reference): the
      platform's ``clock_domain_generator`` makes ``usb`` from the board oscillator (PLL) and
      this top drives the PHY's clock pin from it;
    - PHY clock is an input (ECPIX-5: the PHY has its own crystal): ``usb`` is that clock,
      constrained here to the 60 MHz ULPI clock.

    Parameters
    ----------
    design : callable
        ``design(ulpi=bus)`` returns the device elaboratable (it must not drive ``ulpi.clk``).
    phy : str
        Name of the board's ULPI resource to put the device on.
    """

    def __init__(self, *, design: Callable[..., Elaboratable], phy: str):
        self.design = design
        self.phy = phy

    def elaborate(self, platform):
        m = Module()
        bus = platform.request(self.phy, 0)
        if hasattr(bus.clk, "o"):
            m.submodules.car = platform.clock_domain_generator()
            m.d.comb += bus.clk.o.eq(ClockSignal("usb"))
        else:
            m.domains.usb = usb = ClockDomain("usb")
            m.d.comb += usb.clk.eq(bus.clk.i)
            # On the domain's clock net: the pin buffer's own net is renamed by synthesis.
            platform.add_clock_constraint(usb.clk, ULPI_CLOCK_HZ)
        m.submodules.device = self.design(ulpi=bus)
        return m
