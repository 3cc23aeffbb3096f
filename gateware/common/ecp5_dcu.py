"""One ECP5 DCU channel in a PHY: LUNA's DCU block, its control logic's domain, its fabric clock.

Both of busprobe's SerDes PHYs use the DCU through LUNA's ``ECP5SerDes`` (the DCUA instance with
its parameters, the reset sequencer, the SerDes Client Interface that sets polarity, termination
and electrical idle): the SuperSpeed one at 5 Gb/s (:mod:`busprobe.gateware.usb3.ecp5_phy`), the
soft PCIe endpoint's at 2.5 GT/s (:mod:`busprobe.gateware.pcie.soft.ecp5_pcie_phy`, which retunes
a few parameters). What they share is how it goes into the PHY's module, which is here.
"""

from amaranth import ClockDomain, DomainRenamer

__all__ = ["add_dcu"]


def add_dcu(m, platform, serdes, *, control_domain: str, clock_hz: float,
            clock_domain: str = "pclk"):
    """Add LUNA's ``serdes`` to module ``m`` and make its fabric clock a local domain of ``m``.

    LUNA runs the register interface and the decode-error flag in a ``pipe`` domain and the
    reset sequencer in ``ss``; both become ``control_domain``, which must be a free-running
    fabric clock (the DCU's own clock only runs once its PLL is locked, which the sequencer
    waits for). The DCU's fabric clock (``serdes.pclk``) becomes ``clock_domain``, local to
    ``m`` and without reset, so the PHY's own logic beside the DCU can run on it; it is
    constrained to ``clock_hz`` on platforms that take constraints, on the domain's net, which
    synthesis keeps (LUNA constrains nothing, and an unconstrained clock would be timed at
    nextpnr's default of 12 MHz).

    Returns the clock domain.
    """
    renames = {name: control_domain for name in ("pipe", "ss") if name != control_domain}
    m.submodules.serdes = DomainRenamer(renames)(serdes)
    domain = ClockDomain(clock_domain, reset_less=True, local=True)
    m.domains += domain
    m.d.comb += domain.clk.eq(serdes.pclk)
    if platform is not None and hasattr(platform, "add_clock_constraint"):
        platform.add_clock_constraint(domain.clk, clock_hz)
    return domain
