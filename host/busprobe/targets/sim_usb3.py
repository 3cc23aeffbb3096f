"""``sim:usb3``: what the SuperSpeed simulation is, from the selector's options alone.

``sim:usb3?host=ideal|vl805|small-burst|FILE.toml&burst=1..16&design=busprobe|storage|streams``
``&level=rtl|netlist&primes=named|pipe``

``host`` is the SuperSpeed host-controller profile the simulated xHCI obeys and the model reads
(:mod:`busprobe.model.usb3_hosts`; loading it here is what checks it); ``burst`` caps the NumP
window the host grants (and its OUT burst) at that many packets, below the profile's own;
``design=storage`` is the SCSI null disk over BOT (``usb3-storage``) in place of the probe,
``design=streams`` the probe with bulk streams (``gateware/usb3/streams_device.py``);
``level=netlist`` simulates the gate-level netlist of the ECPIX-5 board build, cut at the same
PIPE interface, instead of the Amaranth design (:mod:`busprobe.sim.netlist`); ``primes`` is how
the simulated xHCI primes a stream endpoint (:data:`busprobe.protocol.streams.PRIMINGS`: each
transfer's stream by name, or the pipe once with the Prime Stream ID), which the UAS ceiling
follows. The
simulation backend (:mod:`busprobe.sim.usb3.backend`) builds its device from this description;
nothing here imports the simulation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..buses import USB3_SS
from ..model.usb3_hosts import MAX_BURST_PACKETS, load_usb3_profile
from ..protocol import usb2
from ..protocol.streams import NAMED_PRIMES, PRIMINGS
from ..protocol.usb3 import MAX_PACKET_SIZE
from ..topology.hop import Hop
from ..transport import BusDescription
from .description import simulated_target
from .options import Option, choice, loadable, one_of

__all__ = ["describe_sim_usb3", "sim_usb3_bus", "sim_usb3_hops", "OPTIONS", "NAME", "LEVELS",
           "DESIGNS", "DESIGN_FEATURES"]

NAME = "sim:usb3"
#: Gateware the simulation can run: the probe, the SCSI null disk over BOT, or the probe with
#: bulk streams on its IN and OUT endpoints.
DESIGNS = ("busprobe", "storage", "streams")
#: What each design's GET_INFO names.
DESIGN_FEATURES: dict[str, usb2.Feature] = {"busprobe": usb2.NO_FEATURES,
                                            "storage": usb2.Feature.STORAGE,
                                            "streams": usb2.NO_FEATURES}
#: What of the design is simulated: the Amaranth source, or the netlist of its board build.
LEVELS = ("rtl", "netlist")
#: The board build the netlist comes from.
NETLIST_BOARD = "ecpix5-85"


OPTIONS: tuple[Option, ...] = (
    Option("host", "ideal", loadable(load_usb3_profile),
           "ideal, small-burst, vl805 or a FILE.toml"),
    Option("burst", MAX_BURST_PACKETS, choice(range(1, MAX_BURST_PACKETS + 1)),
           f"a whole number of packets, 1..{MAX_BURST_PACKETS}"),
    Option("design", "busprobe", choice(DESIGNS), one_of(DESIGNS)),
    Option("level", "rtl", choice(LEVELS), one_of(LEVELS)),
    Option("primes", NAMED_PRIMES, choice(PRIMINGS), one_of(PRIMINGS)),
)


def sim_usb3_bus(options: Mapping[str, Any]) -> BusDescription:
    """The bus the simulation presents for typed ``options`` (``host``, ``burst``).

    ``extra["max_burst"]`` is the ``burst`` cap the model applies on top of the profile's
    windows (:func:`busprobe.model.usb3.usb3_ceiling`); ``extra["primes"]`` how stream
    endpoints are primed (:func:`busprobe.model.usb3_uas_ceiling.uas_ceiling`).
    """
    return BusDescription(kind=USB3_SS.kind, speed="super", host_profile=options["host"],
                          max_packet_size=MAX_PACKET_SIZE,
                          extra={"simulated": True, "max_burst": options["burst"],
                                 "design": options["design"], "level": options["level"],
                                 "primes": options["primes"]})


def sim_usb3_hops(options: Mapping[str, Any]) -> tuple[Hop, ...]:
    """The simulated xHCI root port and the gateware on the PIPE link partner."""
    device, what = "busprobe USB3 SS gateware", "LUNA SuperSpeed device"
    if options["design"] == "storage":
        device += ", SCSI null disk over BOT"
    elif options["design"] == "streams":
        device += ", bulk streams"
    if options["level"] == "netlist":
        device += ", gate-level netlist"
        what = f"gate-level netlist of the {NETLIST_BOARD} build"
    return (
        Hop("sim-usb-host-controller", "sim usb3 host", driver="busprobe.sim.usb3",
            description=f"simulated xHCI, host profile {options['host']}, burst "
                        f"{options['burst']}, {options['primes']} primes", speed="super",
            speed_cap="super"),
        Hop("sim-usb-device", device, driver="pipe",
            description=f"{what} on the PIPE link partner (sim/hdl/pipe_partner.sv)",
            speed="super", speed_cap="super"),
    )


describe_sim_usb3 = simulated_target(NAME, OPTIONS, sim_usb3_bus, sim_usb3_hops)
