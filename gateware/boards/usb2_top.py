"""Board top for a USB 2.0 design: clock domains from the board, the design on one ULPI PHY."""

from __future__ import annotations

from collections.abc import Callable

from amaranth import ClockDomain, ClockSignal, Elaboratable, Module

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
    - PHY clock is an input (a PHY with its own crystal): ``usb`` is that clock.

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
            m.domains.usb = ClockDomain("usb")
            m.d.comb += ClockSignal("usb").eq(bus.clk.i)
        m.submodules.device = self.design(ulpi=bus)
        return m
