"""``sim:usb2``: what the USB 2.0 simulation is, from the selector's options alone.

``sim:usb2?host=ideal|ehci|xhci|FILE.toml&design=busprobe|full|stock|storage&level=rtl|netlist&devices=1|2&attach=hub|ports``

``host`` is the host-controller profile the simulated controller obeys and the model reads
(:mod:`busprobe.model.usb2_hosts`; loading it here is what checks it), ``design`` the gateware
under test: ``busprobe``, the lean default board design; ``full``, the ``usb2-full`` board
design with every optional part (BOT framer, packet-shape and receive-drop counters);
``stock``, LUNA's reference endpoints, for the benchmark; ``storage``, the ``usb2-storage``
null disk (a SCSI block device over Bulk-Only Transport, issue 28). ``level`` is what of it is
simulated: ``rtl``, the Amaranth design; ``netlist``, the gate-level netlist of its Cynthion
r1.4 board build (yosys' post-synthesis netlist, the one nextpnr packs into the bitstream; see
:mod:`busprobe.sim.netlist`), the same cycle by cycle, only slower to build. The simulation
backend (:mod:`busprobe.sim.usb2.backend`) builds its device from this description; nothing here
imports the simulation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..buses import USB2_HS
from ..model.ceiling_type import Ceiling
from ..model.usb2 import usb2_shared_ceiling
from ..model.usb2_hosts import load_profile
from ..protocol import usb2
from ..protocol.names import Direction
from ..protocol.usb2 import MAX_PACKET_SIZE
from ..topology.hop import Hop
from ..transport import BusDescription
from .description import simulated_target
from .options import Option, choice, loadable, one_of

__all__ = ["describe_sim_usb2", "sim_usb2_bus", "sim_usb2_hops", "sim_usb2_together", "OPTIONS",
           "NAME", "DESIGNS", "DESIGN_FEATURES", "LEVELS"]

NAME = "sim:usb2"
#: Gateware the simulation can run: busprobe's lean default, busprobe's with every optional
#: part, or LUNA's stock endpoints (no vendor requests).
DESIGNS = ("busprobe", "full", "stock", "storage")
#: What of the design is simulated: the Amaranth source, or the netlist of its board build.
LEVELS = ("rtl", "netlist")
#: Devices one simulation hosts (``busprobe.sim.usb2.multi_top.MAX_DEVICES``) and how several
#: are attached (``busprobe.sim.usb2.multi_session.ATTACH``).
DEVICES = (1, 2)
ATTACH = ("hub", "ports")
#: The board build each design's netlist comes from.
NETLIST_BOARD = "cynthion-r1.4"
#: What each busprobe design's GET_INFO names (the simulation's cocotb tests check it).
DESIGN_FEATURES: dict[str, usb2.Feature] = {"busprobe": usb2.NO_FEATURES,
                                            "full": usb2.ALL_FEATURES,
                                            "storage": usb2.Feature.STORAGE}
#: The hop name of each design.
_DEVICES = {"busprobe": "busprobe USB2 HS gateware",
            "full": "busprobe USB2 HS gateware, full (BOT, packet shapes, receive drops)",
            "stock": "stock LUNA USB2 HS endpoints",
            "storage": "busprobe USB2 HS gateware, SCSI null disk over BOT"}


OPTIONS: tuple[Option, ...] = (
    Option("host", "ideal", loadable(load_profile), "ideal, ehci, xhci or a FILE.toml"),
    Option("design", "busprobe", choice(DESIGNS), one_of(DESIGNS)),
    Option("level", "rtl", choice(LEVELS), one_of(LEVELS)),
    Option("devices", 1, choice(DEVICES), one_of(DEVICES)),
    Option("attach", "hub", choice(ATTACH), one_of(ATTACH)),
)


def sim_usb2_bus(options: Mapping[str, Any]) -> BusDescription:
    """The bus the simulation presents for typed ``options`` (``host``, ``design``, ``level``)."""
    return BusDescription(kind=USB2_HS.kind, speed="high", host_profile=options["host"],
                          max_packet_size=MAX_PACKET_SIZE,
                          extra={"simulated": True, "design": options["design"],
                                 "level": options["level"]})


def sim_usb2_hops(options: Mapping[str, Any], index: int | None = None) -> tuple[Hop, ...]:
    """The simulated host controller and the gateware on the ULPI PHY model; device ``index``
    of ``devices=2`` sits on hub port ``index + 1`` (``attach=hub``) or on root port
    ``index + 1`` (``attach=ports``; a host profile whose root ports share one schedule, EHCI's,
    says so on the controller's hop, the hop the devices share)."""
    device = _DEVICES[options["design"]]
    what = "LUNA device"
    if options["level"] == "netlist":
        device += ", gate-level netlist"
        what = f"gate-level netlist of the {NETLIST_BOARD} build"
    host = Hop("sim-usb-host-controller", "sim usb2 host", driver="busprobe.sim.usb2",
               description=f"simulated host controller, host profile {options['host']}",
               speed="high", speed_cap="high")
    if index is None:
        return (host, Hop("sim-usb-device", device, driver="ulpi",
                          description=f"{what} on the ULPI PHY model (sim/hdl/ulpi_phy.sv)",
                          speed="high", speed_cap="high"))
    leaf = Hop("sim-usb-device", f"{device} #{index}", driver="ulpi",
               description=f"{what} on ULPI PHY model #{index} (sim/hdl/ulpi_phy.sv)",
               speed="high", speed_cap="high")
    if options["attach"] == "ports":
        host.one_schedule = load_profile(options["host"]).root_ports_share_schedule
        if host.one_schedule:
            # EHCI: the controller's one asynchronous schedule serves every root port.
            host.notes.append(f"its root ports share one schedule, a transaction at a time: "
                              f"one 480 Mb/s bus (host profile {options['host']}, simulated)")
            port = "on the controller's one high-speed bus"
        else:
            port = "a high-speed bus of its own"
        return (host, Hop("sim-usb-root-port", f"root port {index + 1}",
                          driver="busprobe.sim.usb2", description=port, speed="high",
                          speed_cap="high"), leaf)
    hub = Hop("sim-usb-hub", "sim-hub", driver="busprobe.sim.usb2",
              description="high-speed hub on root port 1 (a repeater: one bus for its ports)",
              speed="high", speed_cap="high",
              notes=["its ports share one 480 Mb/s high-speed bus (simulated)"])
    return (host, hub, Hop("sim-usb-hub-port", f"sim-hub port {index + 1}",
                           driver="busprobe.sim.usb2", speed="high", speed_cap="high"), leaf)


def sim_usb2_together(options: Mapping[str, Any], bus: BusDescription,
                      direction: str) -> Ceiling | None:
    """The ceiling of the ``devices`` of one simulation together, when they share one schedule
    (behind the hub, or on root ports of a controller whose root ports share one: EHCI); None
    when each has a bus of its own or there is one device (or the direction is loopback)."""
    devices = options["devices"]
    shared = options["attach"] == "hub" or load_profile(options["host"]).root_ports_share_schedule
    if devices < 2 or not shared or direction not in (Direction.IN, Direction.OUT):
        return None
    return usb2_shared_ceiling(bus, direction, devices)


describe_sim_usb2 = simulated_target(NAME, OPTIONS, sim_usb2_bus, sim_usb2_hops)
