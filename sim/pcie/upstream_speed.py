"""Where cocotbext-pcie builds its own objects, the quicker subclasses instead: the one place
(simulation speed).

The PCIe benches build what they can as busprobe's subclasses of cocotbext-pcie's classes
(:class:`~.chipset.ChipsetRootComplex` and its root ports, :class:`~.route_speed.DirectSwitch`
and its bridges, :class:`~.tlp_stream.TlpStreamEndpoint` and its TLPs). The rest cocotbext-pcie
builds inside its own code, by names its modules hold: every link port (a ``Device``'s and each
bridge's ``SimPort``), the root complex's host bridge, the copy of each TLP a link receiver makes,
the root's requests and completions, and the transmit loop's ``First``. :func:`install` rebinds
exactly those names, each to a subclass of what it names (or, for ``First``, to a function
returning one of cocotb's triggers or cocotb's ``First`` itself), and nothing else.

Each was one of the largest costs per TLP in the profile of the PCIe simulations (issue 30,
DESIGN §5.3 "Simulation speed"); behaviour is upstream's (the tests beside each subclass compare
it with upstream's). Nothing is changed when a module is imported: the benches
(:class:`~.testbench.PcieTestbench`, :class:`~.multi_top.SwitchedBench`) call :func:`install`
before they build anything, and ``tests/test_upstream_speed.py`` checks that importing them
leaves cocotbext-pcie as it is.
"""

from __future__ import annotations

__all__ = ["install", "replacements"]


def replacements() -> list[tuple[object, str, object]]:
    """``(module, name, replacement)`` for every name :func:`install` rebinds."""
    from cocotbext.pcie.core import bridge, device, port, rc, region

    from .port_speed import FastSimPort, first
    from .route_speed import FastHostBridge
    from .tlp_speed import FastTlp

    return [
        # The transmit task of every port waits for the first of three events 2-3 times per
        # TLP; cocotb's First makes a task per awaitable each time (port_speed.first).
        (port, "First", first),
        # Every link receiver copies each TLP it takes, and every later hop checks the copy
        # and reads its fmt_type (tlp_speed.FastTlp: both without repeated work).
        (port, "Tlp", FastTlp),
        # The root's completions (the data of every DMA read) and its requests (config, MMIO).
        (rc, "Tlp", FastTlp),
        (region, "Tlp", FastTlp),
        # A Device's port, and the port each switch and root port bridge builds: a task per
        # packet and per timer otherwise (port_speed.FastSimPort).
        (device, "SimPort", FastSimPort),
        (bridge, "SimPort", FastSimPort),
        # RootComplex's constructor builds its host bridge by this name, which every TLP to
        # the host crosses; its routing checks by table (route_speed.FastRouting).
        (rc, "HostBridge", FastHostBridge),
    ]


def install() -> None:
    """Rebind each of :func:`replacements` in cocotbext-pcie's modules (idempotent)."""
    for module, name, replacement in replacements():
        setattr(module, name, replacement)
