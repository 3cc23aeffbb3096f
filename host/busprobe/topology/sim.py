"""The hops a simulated target models: the host side model and the gateware under test."""

from __future__ import annotations

from ..model.bus import sim_bus
from .hop import Hop

__all__ = ["sim_hops"]


def sim_hops(target: str, options: dict[str, str]) -> list[Hop]:
    """Hops of ``sim:TARGET?options`` (what the simulation puts between host and gateware)."""
    bus = sim_bus(target, options)
    if bus.kind == "usb2-hs":
        return [
            Hop("sim-usb-host-controller", "sim usb2 host", driver="busprobe.sim.usb2",
                description=f"simulated host controller, host profile {bus.host_profile}",
                speed="high", speed_cap="high"),
            Hop("sim-usb-device", "busprobe USB2 HS gateware", driver="ulpi",
                description="LUNA device on a simulated ULPI PHY", speed="high", speed_cap="high"),
        ]
    if bus.kind == "pcie":
        notes = []
        if "cap" in bus.extra:
            notes.append(f"root complex accepts at most {float(bus.extra['cap']) / 1e6:.1f} MB/s"
                         " (simulated chipset cap)")
        if "latency_ns" in bus.extra:
            notes.append(f"memory read latency {float(bus.extra['latency_ns']):g} ns (simulated)")
        return [
            Hop("sim-pci-root-port", "cocotbext-pcie root complex", driver="busprobe.sim.pcie",
                speed=bus.speed, width=bus.width, speed_cap=bus.speed, width_cap=bus.width,
                mps=bus.mps, notes=notes),
            Hop("sim-pci-endpoint", "busprobe PCIe gateware", driver="litepcie",
                description="LitePCIe DMA on the simulated PHY", speed=bus.speed, width=bus.width,
                speed_cap=bus.speed, width_cap=bus.width, mps=bus.mps, mrrs=bus.mrrs),
        ]
    return [Hop("sim-usb-host-controller", "sim usb3 host", speed="super", speed_cap="super"),
            Hop("sim-usb-device", "busprobe USB3 SS gateware", speed="super", speed_cap="super")]
