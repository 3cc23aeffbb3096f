"""The buses busprobe knows: one row per bus, read by every part that behaves per bus.

A row says what the bus is called (:attr:`Bus.kind`, the :attr:`BusDescription.kind` of its
configurations), its directions, how a device on it is selected (the selector scheme of real
devices, the name of its simulated target), where its code lives and its sweep defaults. Code is
named by ``"module:name"`` strings and loaded only when used (:func:`load`), so this module imports
nothing above the protocol: a missing extra (``[sim]``, libusb) costs only the commands that need
it, and adding a bus is one row here plus the modules it names.

What each ``"module:name"`` must be:

``describe_real`` / ``describe_sim``
    ``(selector, bus, sysfs_root) -> TargetDescription`` (:mod:`busprobe.targets`): checks the
    selector's options and says what it selects, without opening anything.
``real_backend`` / ``sim_backend``
    ``(target: TargetDescription) -> Transport``, built but not opened.
``ceiling``
    ``(bus: BusDescription, direction, *, length=None, queue_depth=None) -> Ceiling``.
``link_only``
    ``(bus: BusDescription) -> BusDescription``: the same bus without what the host side adds
    (its controller profile, its memory latency), for :func:`busprobe.model.link_ceiling`.
``sim_group``
    ``(target: TargetDescription) -> group`` for a simulated target whose ``sim_group_option``
    is above 1: several targets in one simulation (``targets``: ``(name, transport)`` pairs,
    ``clock``, ``open()``, ``close()``), which ``busprobe sweep`` runs alone and together.
``verdict``
    ``(evidence: busprobe.verdict.evidence.GroupEvidence) -> Finding``: what limits a plateau
    on this bus, read from its device's counters (:mod:`busprobe.verdict`).
``describe``
    ``(bus: BusDescription) -> str``: one line naming a configuration, for ``busprobe model``.
``fit``
    ``(request: busprobe.cli.fit.FitRequest) -> int``: ``busprobe fit`` of a result on this
    bus (a host profile fitted to it, written and reported).
``sim_together``
    ``(options, bus: BusDescription, direction) -> Ceiling | None``: the ceiling of a simulated
    group's targets together where they share one schedule (None where each has its own).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .protocol import pcie as pcie_protocol
from .protocol import usb2 as usb2_protocol
from .protocol import usb3 as usb3_protocol
from .protocol.names import PCIE_DIRECTIONS, USB_DIRECTIONS, Direction
from .transport import InvalidRequest

__all__ = ["Bus", "BUSES", "USB2_HS", "USB3_SS", "PCIE", "USB_STORAGE", "by_kind", "by_scheme",
           "by_sim_target",
           "schemes", "sim_targets", "selector_syntax", "load", "SIM_SCHEME", "SIM_EXTRA_HINT"]

#: Selector scheme of every simulated target (``sim:usb2``).
SIM_SCHEME = "sim"

#: What to do when a simulated target's backend cannot be imported.
SIM_EXTRA_HINT = "pip install 'busprobe[sim]' (make demo installs it)"


@dataclass(frozen=True)
class Bus:
    """One bus busprobe measures and models.

    Attributes
    ----------
    kind : str
        :attr:`busprobe.transport.BusDescription.kind` of its configurations (``usb2-hs``).
    family : str
        What a user calls a device on it, in messages (``USB``, ``PCIe``).
    directions : tuple of str
        Its data directions; the first two are the streaming pair ``--direction both`` means.
    settings : tuple of str
        Bus settings a sweep may vary (``--mps``/``--mrrs``), empty when there are none.
    scheme : str or None
        Selector scheme of a real device on this bus (``usb`` in ``usb:VID:PID``); None when
        its real devices are reached through another row's scheme (a SuperSpeed busprobe device
        is a ``usb:VID:PID`` device that its INFO answer names).
    real_syntax : str
        The real-device selector as help and error messages show it.
    describe_real, real_backend : str
        ``"module:name"`` of the real device's describer and transport factory.
    sim_target : str or None
        Name of its simulated target (``usb2`` in ``sim:usb2``); None when the bus has none
        of its own (a simulated null disk is ``sim:usb2?design=storage`` exported to a kernel).
    sim_syntax : str
        The simulated target's options as help and error messages show them.
    describe_sim, sim_backend : str
        ``"module:name"`` of the simulated target's describer and transport factory (the
        factory needs the ``[sim]`` extra); empty without a simulated target.
    ceiling, link_only : str
        ``"module:name"`` of the closed-form model and of its host-side stripper.
    default_queue_depths : tuple of int
        Queue depths a sweep uses when none are given.
    default_min_length : int
        Shortest length of the default length ladder.
    device_ids : tuple of (int, int)
        Vendor and product/device ids of busprobe's gateware on this bus, for ``busprobe list``.
    sim_group, sim_group_option : str
        ``"module:name"`` of the factory of several simulated targets in one simulation, and
        the selector option that says how many (empty: the simulation hosts one).
    verdict : str
        ``"module:name"`` of its verdict rule (default: the link model alone, for a bus whose
        device keeps no counters).
    profile_beside_link : bool
        Whether the verdict reports the host profile's ceiling beside the link model (USB: a
        host controller's schedule is a ceiling of its own).
    bot_counterpart : str
        What a BOT-framed result on it is best compared with, as the verdict says it.
    describe : str
        ``"module:name"`` of the one-line configuration name; empty: kind and speed.
    framings : tuple of str
        Framings ``busprobe model --protocol`` may put on it (``stream`` always).
    fit : str
        ``"module:name"`` of its ``busprobe fit``; empty: no host profile is fitted to it.
    sim_together : str
        ``"module:name"`` of the ceiling of a simulated group together (``busprobe model``);
        empty: not modelled.
    """

    kind: str
    family: str
    directions: tuple[str, ...]
    settings: tuple[str, ...]
    scheme: str | None
    real_syntax: str
    describe_real: str
    real_backend: str
    sim_target: str | None
    sim_syntax: str
    describe_sim: str
    sim_backend: str
    ceiling: str
    link_only: str
    default_queue_depths: tuple[int, ...]
    default_min_length: int
    device_ids: tuple[tuple[int, int], ...]
    sim_group: str = ""
    sim_group_option: str = ""
    verdict: str = "busprobe.verdict.assess:generic_rules"
    profile_beside_link: bool = False
    bot_counterpart: str = "a streamed run shows the overhead per length"
    describe: str = ""
    framings: tuple[str, ...] = ("stream",)
    fit: str = ""
    sim_together: str = ""


USB2_HS = Bus(
    kind="usb2-hs", family="USB", directions=(*USB_DIRECTIONS, Direction.LOOPBACK), settings=(),
    scheme="usb", real_syntax="usb:VID:PID[#SERIAL]",
    describe_real="busprobe.targets.real:describe_usb",
    real_backend="busprobe.backends.usb:open_usb",
    sim_target="usb2",
    sim_syntax="host=ideal|ehci|xhci|FILE.toml&design=busprobe|full|stock&devices=1|2"
               "&attach=hub|ports",
    describe_sim="busprobe.targets.sim_usb2:describe_sim_usb2",
    sim_backend="busprobe.sim.usb2.backend:open_sim_usb2",
    ceiling="busprobe.model.usb2_framings:usb2_hs_ceiling",
    link_only="busprobe.model.usb2:usb2_link_only",
    # 4 keeps a USB 2.0 host controller's schedule full across completions; one full packet is
    # the shortest length worth a point.
    default_queue_depths=(4,), default_min_length=512,
    device_ids=((usb2_protocol.VID, usb2_protocol.PID),),
    sim_group="busprobe.sim.usb2.backend:open_sim_usb2_group", sim_group_option="devices",
    verdict="busprobe.verdict.usb2:usb2_rules", profile_beside_link=True,
    describe="busprobe.model.usb2:describe_usb2", framings=("stream", "bot", "uas"),
    fit="busprobe.cli.fit:fit_usb2_profile",
    sim_together="busprobe.targets.sim_usb2:sim_usb2_together",
)

USB3_SS = Bus(
    kind="usb3-ss", family="USB", directions=(*USB_DIRECTIONS, Direction.LOOPBACK), settings=(),
    # No selector of its own: ``usb:VID:PID`` opens either device and its INFO says which.
    scheme=None, real_syntax="usb:VID:PID[#SERIAL]",
    describe_real="busprobe.targets.real:describe_usb",
    real_backend="busprobe.backends.usb:open_usb",
    sim_target="usb3", sim_syntax="host=ideal|vl805|small-burst|FILE.toml&burst=1..16",
    describe_sim="busprobe.targets.sim_usb3:describe_sim_usb3",
    sim_backend="busprobe.sim.usb3.backend:open_sim_usb3",
    ceiling="busprobe.model.usb3_framings:usb3_ss_ceiling",
    link_only="busprobe.model.usb3:usb3_link_only",
    # 2 keeps the next transfer on the ring while one completes (the xHCI model's NumP window
    # then never closes between transfers); one packet is the shortest length worth a point.
    default_queue_depths=(2,), default_min_length=usb3_protocol.MAX_PACKET_SIZE,
    device_ids=((usb3_protocol.VID, usb3_protocol.PID),),
    verdict="busprobe.verdict.usb3:usb3_rules", profile_beside_link=True,
    framings=("stream", "bot", "uas"), fit="busprobe.cli.fit:fit_usb3_profile",
)

PCIE = Bus(
    kind="pcie", family="PCIe", directions=(*PCIE_DIRECTIONS, Direction.LOOPBACK),
    settings=("mps", "mrrs"),
    scheme="pcie", real_syntax="pcie:DDDD:BB:DD.F",
    describe_real="busprobe.targets.real:describe_pcie",
    real_backend="busprobe.backends.pcie:open_pcie",
    sim_target="pcie",
    sim_syntax="gen=1|2|3&width=1&mps=..&mrrs=..&rcb=64|128&cap=BYTES_PER_S&latency_ns=.."
               "&endpoints=1..4&phy=sim|ecp5",
    describe_sim="busprobe.targets.sim_pcie:describe_sim_pcie",
    sim_backend="busprobe.sim.pcie.backend:open_sim_pcie",
    ceiling="busprobe.model.pcie:pcie_ceiling", link_only="busprobe.model.pcie:pcie_link_only",
    # DMA engines want more in flight than a USB host; below 256 B every TLP is mostly header.
    default_queue_depths=(8,), default_min_length=256,
    device_ids=((pcie_protocol.VENDOR_ID, pcie_protocol.DEVICE_ID),),
    sim_group="busprobe.sim.pcie.backend:open_sim_pcie_group", sim_group_option="endpoints",
    verdict="busprobe.verdict.pcie:pcie_rules", describe="busprobe.model.pcie:describe_pcie",
    fit="busprobe.cli.fit:fit_pcie_profile",
)

USB_STORAGE = Bus(
    kind="usb-storage", family="block", directions=(Direction.READ, Direction.WRITE), settings=(),
    scheme="block", real_syntax="block:/dev/sdX",
    describe_real="busprobe.targets.block:describe_block",
    real_backend="busprobe.backends.block:open_block",
    # A null disk is simulated as sim:usb2?design=storage and reached through a kernel (the VM
    # harness), never by a transport of its own.
    sim_target=None, sim_syntax="", describe_sim="", sim_backend="",
    ceiling="busprobe.model.usb_storage:storage_ceiling",
    link_only="busprobe.model.usb_storage:storage_link_only",
    # 1 is what BOT runs whatever is asked (one command at a time), 4 what UAS overlaps; 4 KiB
    # is the page-sized I/O that filesystems issue.
    default_queue_depths=(1, 4), default_min_length=4096,
    device_ids=(),
    # A disk the kernel's usb-storage drives is compared with one its uas driver drives.
    bot_counterpart="a UAS run shows how far BOT is behind",
)

#: Every bus, in the order help texts list them.
BUSES: tuple[Bus, ...] = (USB2_HS, USB3_SS, PCIE, USB_STORAGE)


def by_kind(kind: str) -> Bus:
    """The row of :attr:`BusDescription.kind` ``kind``; one-line ``ValueError`` if unknown."""
    for bus in BUSES:
        if bus.kind == kind:
            return bus
    raise ValueError(f"unknown bus kind {kind!r} (known: {', '.join(b.kind for b in BUSES)})")


def by_scheme(scheme: str) -> Bus:
    """The row whose real devices use selector scheme ``scheme``."""
    return _row("scheme", scheme, f"no bus with selector scheme {scheme!r} "
                                  f"(known: {', '.join(schemes())})")


def by_sim_target(name: str) -> Bus:
    """The row of the simulated target ``sim:name``."""
    return _row("sim_target", name, f"no simulated target {name!r} "
                                    f"(available: {', '.join(sorted(sim_targets()))})")


def _row(field: str, value: str, missing: str) -> Bus:
    for bus in BUSES:
        if getattr(bus, field) is not None and getattr(bus, field) == value:
            return bus
    raise InvalidRequest(missing)


def schemes() -> tuple[str, ...]:
    """Every selector scheme: the real devices' and ``sim``."""
    return (*(bus.scheme for bus in BUSES if bus.scheme is not None), SIM_SCHEME)


def sim_targets() -> tuple[str, ...]:
    return tuple(bus.sim_target for bus in BUSES if bus.sim_target is not None)


def selector_syntax() -> str:
    """The selectors in one line, for help texts and error messages."""
    real = ", ".join(bus.real_syntax for bus in BUSES if bus.scheme is not None)
    return f"{real} or {SIM_SCHEME}:{'|'.join(sim_targets())}[?key=value&...]"


def load(spec: str, hint: str = "reinstall busprobe") -> Callable[..., Any]:
    """The object a ``"module:name"`` string names; :class:`InvalidRequest` (one line, ending
    in ``hint``) when its module cannot be imported."""
    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise InvalidRequest(f"{module} is not available ({exc}); {hint}") from None
