"""Cynthion r1.4 (Great Scott Gadgets): ECP5 LFE5U-12F with three USB3343 ULPI PHYs.

The pins come from ``constraints/cynthion_r1_4.toml`` (copied from the ``cynthion`` PyPI package's
platform file, which this project does not install: it pulls luna-soc, pygreat, pyfwup and a
dozen more packages for a few dozen pin names). Clocking follows that platform: the 60 MHz
oscillator feeds the ECP5 PLL in LUNA's :class:`LunaECP5DomainGenerator`, which makes the
``usb`` (60 MHz), ``sync`` (120 MHz) and ``fast`` (240 MHz) domains; the FPGA drives the PHY's
reference clock from ``usb``.
"""

from __future__ import annotations

from amaranth.vendor import LatticeECP5Platform
from luna.gateware.architecture.car import LunaECP5DomainGenerator

from .constraints import load_constraints

__all__ = ["CynthionR14Platform"]

_PINS = load_constraints("cynthion_r1_4")


class CynthionR14Platform(LatticeECP5Platform):
    """Amaranth platform for Cynthion r1.4.

    Attributes
    ----------
    clock_domain_generator : type
        Elaboratable that creates the ``usb``/``sync``/``fast`` domains from ``default_clk``.
    DEFAULT_CLOCK_FREQUENCIES_MHZ : dict
        Frequencies that generator uses (LUNA's convention).
    ulpi_extra_registers : dict[int, int]
        USB3343 registers LUNA's ``UTMITranslator`` writes at start-up (D+/D- swap).
    """

    name = "Cynthion r1.4"
    device = _PINS.device["device"]
    package = _PINS.device["package"]
    speed = _PINS.device["speed"]
    default_clk = "clk_60MHz"
    resources = _PINS.amaranth_resources()
    connectors = []

    clock_domain_generator = LunaECP5DomainGenerator
    DEFAULT_CLOCK_FREQUENCIES_MHZ = {"fast": 240, "sync": 120, "usb": 60}
    ulpi_extra_registers = dict(_PINS.ulpi_extra_registers)

    def toolchain_prepare(self, fragment, name, **kwargs):
        # The board's configuration-flash clock, as the upstream platform sets it.
        kwargs.setdefault("ecppack_opts", _PINS.device["ecppack_opts"])
        return super().toolchain_prepare(fragment, name, **kwargs)
