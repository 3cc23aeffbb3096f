"""``sim:pcie``: what the PCIe simulation is, from the selector's options alone.

``sim:pcie?gen=1|2|3&width=1&mps=128|256|512&mrrs=128..4096&rcb=64|128&cap=BYTES_PER_S&latency_ns=..&driver_latency_ns=..&endpoints=1..4&phy=sim|ecp5&partner=present|silent``

``phy=ecp5`` runs the core on busprobe's soft Gen1 x1 endpoint (``SoftPCIEPHY``, symbol by
symbol: the link layers the ECP5 board will have) in place of the TLP-level PHY; it takes
``gen=1`` and none of ``cap``, ``latency_ns``, ``rcb=128`` or ``endpoints``. With it,
``partner=silent`` takes the root port off the lane (no receiver, nothing heard): the link never
leaves Detect, and opening the target fails naming the LTSSM's state.

``endpoints=N`` (N > 1) puts N cores behind one PCIe switch in one simulation; the root complex
behind the switch's upstream port carries ``cap`` for all of them: ``busprobe sweep`` then runs
them as N targets, alone and together (:mod:`busprobe.cli.sweep_multi`).

The options are the fields of the simulated link (:class:`busprobe.sim.pcie.testbench.LinkConfig`)
the backend (:mod:`busprobe.sim.pcie.backend`) hands to the simulator, and ``driver_latency_ns``,
the simulated host's: how long its interrupt and driver path takes to answer each MSI (an
artificially slow host driver, which the firmware's device-run DMA does not see); the
:class:`~busprobe.transport.BusDescription` says what the ceiling model must assume for that link,
so ``busprobe model`` and a sweep of the same selector report the same ceilings. Nothing here
imports the simulation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..buses import PCIE
from ..protocol import pcie as pcie_protocol
from ..protocol.pci_config import LINK_SPEEDS, SIZES
from ..topology.hop import Hop
from ..transport import BusDescription, InvalidRequest
from .description import simulated_target
from .options import Option, check_value, choice, number, one_of

__all__ = ["describe_sim_pcie", "sim_pcie_bus", "sim_pcie_hops", "check_setting", "OPTIONS",
           "NAME", "MAX_LATENCY_NS"]

NAME = "sim:pcie"
#: A second of read latency already makes every read point take hours of simulation.
MAX_LATENCY_NS = 1e9
_MPS = (128, 256, 512)  # what the core supports (protocol.pcie.MAX_PAYLOAD_SIZE)
_PHYS = ("sim", "ecp5")  # the TLP-level PHY, or the soft endpoint symbol by symbol
_PARTNERS = ("present", "silent")  # phy=ecp5: the root port on the lane, or not
_ENDPOINTS = (1, 2, 3, 4)  # whole cores in one model: busprobe.sim.pcie.multi_top.MAX_ENDPOINTS

#: The options, in the order they are listed; defaults are the simulated link's defaults.
OPTIONS: tuple[Option, ...] = (
    Option("gen", 2, choice((1, 2, 3)), one_of((1, 2, 3))),
    Option("width", 1, choice((1,)), "1 (the gateware is x1)"),
    Option("mps", 256, choice(_MPS), one_of(_MPS)),
    Option("mrrs", 512, choice(SIZES), one_of(SIZES)),
    Option("rcb", 64, choice((64, 128)), one_of((64, 128))),
    Option("cap", None, number(0.0, low_open=True), "a finite number of bytes/s above 0"),
    Option("latency_ns", 0.0, number(0.0, MAX_LATENCY_NS),
           "a finite number of ns from 0 to 1e9 (one second)"),
    Option("driver_latency_ns", 0.0, number(0.0, MAX_LATENCY_NS),
           "a finite number of ns from 0 to 1e9 (one second)"),
    Option("endpoints", 1, choice(_ENDPOINTS), one_of(_ENDPOINTS)),
    Option("phy", "sim", choice(_PHYS), one_of(_PHYS)),
    Option("partner", "present", choice(_PARTNERS), one_of(_PARTNERS)),
)
_BY_KEY = {option.key: option for option in OPTIONS}


def check_setting(key: str, value: int) -> int:
    """``value`` if the simulation can switch ``mps``/``mrrs`` to it (the selector's rules);
    :class:`InvalidRequest` otherwise."""
    if key not in ("mps", "mrrs"):
        raise InvalidRequest(f"{NAME}: cannot set {key} (only mps and mrrs)")
    return check_value(NAME, _BY_KEY[key], str(value))


def _check_soft_phy(link: Mapping[str, Any]) -> None:
    """``phy=ecp5`` is the soft Gen1 x1 endpoint behind a plain root complex."""
    if link.get("phy", "sim") != "ecp5":
        if link.get("partner", "present") != "present":
            raise InvalidRequest(f"{NAME} option partner: only with phy=ecp5 (the symbol-level "
                                 "link)")
        return
    if link["gen"] != 1:
        raise InvalidRequest(f"{NAME} option phy=ecp5: the soft endpoint is Gen1 (add gen=1)")
    refused = [key for key, plain in (("cap", None), ("latency_ns", 0.0), ("rcb", 64),
                                      ("endpoints", 1)) if link[key] != plain]
    if refused:
        raise InvalidRequest(f"{NAME} option phy=ecp5: not with {', '.join(refused)}")


#: What the soft endpoint's transmitter sends beside TLPs (its gateware's constants): a SKP
#: ordered set every 1200 symbol times (``WordSkpInserter``) and UpdateFC-P and -NP every 7500
#: (30 µs, ``UpdateFc``), counted on a write's lane in the Verilator model; the root port
#: sends its own periodic UpdateFCs on the other.
_SOFT_PHY_LINK = {"skp_interval": 1200, "fc_update_us": 30.0, "fc_update_dllps": 2}


def sim_pcie_bus(link: Mapping[str, Any]) -> BusDescription:
    """The bus of the simulated link ``link`` (typed options, as :data:`OPTIONS` gives them)."""
    _check_soft_phy(link)
    latency = link["latency_ns"]
    return BusDescription(
        kind=PCIE.kind, speed=LINK_SPEEDS[link["gen"]], width=link["width"], mps=link["mps"],
        mrrs=link["mrrs"],
        # What the ceiling model must assume for this link (busprobe.model.pcie), as
        # busprobe.sim.pcie.testbench documents it: no SKP ordered sets, one ACK and one
        # UpdateFC DLLP per read request, completions as large as MPS allows; the root adds
        # ``latency_ns`` to reads and the core keeps READ_TAGS reads in flight; the PHY holds
        # four TLPs for the link (sim/pcie/tlp_stream.py, ``tx_buffer``).
        extra={"rcb": link["rcb"], "cap": link["cap"], "latency_ns": latency,
               "driver_latency_ns": link.get("driver_latency_ns", 0.0),
               # The soft endpoint's link sends SKP ordered sets, as a real one does.
               "simulated": True, "skp": link.get("phy") == "ecp5", "ack_every": 1,
               "updatefc_every": 1,
               "split_at_rcb": False, "read_latency_ns": latency,
               "outstanding_reads": pcie_protocol.READ_TAGS, "tx_buffer_tlps": 4,
               **(_SOFT_PHY_LINK if link.get("phy") == "ecp5" else {})})


def sim_pcie_hops(link: Mapping[str, Any], index: int | None = None) -> tuple[Hop, ...]:
    """The root complex and the gateware, with the simulated link between them; endpoint
    ``index`` of ``endpoints=N`` sits behind a switch's downstream port ``index``."""
    speed, width = LINK_SPEEDS[link["gen"]], link["width"]
    notes = []
    if link["cap"] is not None:
        notes.append(f"root complex accepts at most {link['cap'] / 1e6:.1f} MB/s "
                     "(simulated chipset cap)")
    if link["latency_ns"]:
        notes.append(f"memory read latency {link['latency_ns']:g} ns (simulated)")
    if link.get("driver_latency_ns"):
        notes.append(f"host driver answers each MSI {link['driver_latency_ns']:g} ns late "
                     "(simulated slow driver path)")
    description = ("LitePCIe DMA on the soft Gen1 x1 endpoint (symbol level)"
                   if link.get("phy") == "ecp5" else "LitePCIe DMA on the simulated PHY")
    endpoint = Hop("sim-pci-endpoint", "busprobe PCIe gateware", driver="litepcie",
                   description=description, speed=speed, width=width,
                   speed_cap=speed, width_cap=width, mps=link["mps"], mrrs=link["mrrs"])
    if index is None:
        return (Hop("sim-pci-root-port", "cocotbext-pcie root complex",
                    driver="busprobe.sim.pcie", speed=speed, width=width, speed_cap=speed,
                    width_cap=width, mps=link["mps"], notes=notes), endpoint)
    endpoint.name = f"busprobe PCIe gateware #{index}"
    # The switch's upstream link is untimed: what the endpoints share is the root's cap.
    return (Hop("sim-pci-root-port", "cocotbext-pcie root complex", driver="busprobe.sim.pcie",
                mps=link["mps"], notes=notes),
            Hop("sim-pci-switch-upstream", "sim-switch", driver="busprobe.sim.pcie",
                description="cocotbext-pcie switch, upstream port (untimed link to the root)"),
            Hop("sim-pci-switch-downstream", f"sim-switch port {index}",
                driver="busprobe.sim.pcie", speed=speed, width=width, speed_cap=speed,
                width_cap=width, mps=link["mps"]),
            endpoint)


describe_sim_pcie = simulated_target(NAME, OPTIONS, sim_pcie_bus, sim_pcie_hops)
