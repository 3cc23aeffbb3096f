"""Board top for a USB 2.0 design: clock domains from the board, the design on one ULPI PHY."""

from __future__ import annotations

from collections.abc import Callable

from amaranth import Elaboratable, Module

__all__ = ["Usb2BoardTop"]


class Usb2BoardTop(Elaboratable):
    """Puts a USB 2.0 device design on a board's ULPI PHY.

    The platform provides ``clock_domain_generator`` (an elaboratable creating the 60 MHz ``usb``
    domain the design runs in); the design gets the PHY resource exactly as
    ``platform.request`` returns it (``.i``/``.o``/``.oe`` subfields, as LUNA's ULPI translator
    expects), so the same design class is simulated with its ULPI bus as top-level ports.

    Parameters
    ----------
    design : callable
        ``design(ulpi=bus)`` returns the device elaboratable.
    phy : str
        Name of the board's ULPI resource to put the device on.
    """

    def __init__(self, *, design: Callable[..., Elaboratable], phy: str):
        self.design = design
        self.phy = phy

    def elaborate(self, platform):
        m = Module()
        m.submodules.car = platform.clock_domain_generator()
        m.submodules.device = self.design(ulpi=platform.request(self.phy, 0))
        return m
