"""The hop several targets share: the common ancestor of their paths from the root.

Each target's topology is its hops from the root down (:func:`busprobe.topology.topology_for`,
or a simulated target's modelled hops). The deepest hop on every path is what they share: a USB
host controller, root hub or hub; a PCIe switch or root port. Two PCIe paths with no hop in
common still share the root complex, and when both enter it through chipset (PCH) root ports,
the chipset's one uplink to the CPU (DMI on Intel platforms) carries both: that link is named.
Two USB devices on root ports of an EHCI controller share its root hub on paper, but the hop that
limits them is the controller: its one asynchronous schedule makes all its ports one high-speed
bus (an xHCI controller's root ports each have their bandwidth, so there the root hub is named).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .hop import hop_field
from .usb import root_ports_share_schedule

__all__ = ["SharedHop", "shared_hop", "is_one_bus", "is_chipset_root_port",
           "CHIPSET_ROOT_PORT_DEVICES"]

#: Device numbers on bus 0 where Intel platforms put the chipset's (PCH's) root ports, which
#: reach the CPU through the one DMI link; the CPU's own root ports sit at 00:01-00:07.
CHIPSET_ROOT_PORT_DEVICES = frozenset({0x1B, 0x1C, 0x1D})

SharedHop = dict[str, Any]


def _key(hop: dict[str, Any]) -> tuple[str, str]:
    return (str(hop.get("kind")), str(hop_field(hop, "name")))


def is_chipset_root_port(hop: dict[str, Any]) -> bool:
    name = str(hop_field(hop, "name") or "")
    parts = name.split(":")
    if hop.get("kind") != "pci-root-port" or len(parts) != 3 or parts[1] != "00":
        return False
    try:
        return int(parts[2].split(".")[0], 16) in CHIPSET_ROOT_PORT_DEVICES
    except ValueError:
        return False


def _schedule_shared_above(controller: dict[str, Any], root_hub: dict[str, Any]) -> bool:
    """Whether ``root_hub`` is the root hub of a controller that runs one schedule for all its
    root ports (EHCI): targets on two of its ports then share the controller, not a hub."""
    return (controller.get("kind") == "usb-host-controller"
            and root_hub.get("kind") == "usb-root-hub" and _one_schedule(controller))


def _one_schedule(controller: dict[str, Any]) -> bool:
    """Whether a controller hop runs one schedule for all its root ports; a hop recorded
    without ``one_schedule`` answers by its driver."""
    if controller.get("one_schedule") is not None:
        return bool(controller["one_schedule"])
    return root_ports_share_schedule(hop_field(controller, "driver"))


def is_one_bus(hop: dict[str, Any] | None) -> bool:
    """Whether the targets below the shared ``hop`` are on one USB high-speed bus: a hub's
    ports are (its repeater forwards every packet), and so are the root ports of a controller
    with one schedule (EHCI); PCIe hops and xHCI root hubs give each path its own link."""
    if hop is None:
        return False
    kind = str(hop.get("kind", "")).removeprefix("sim-")
    if kind == "usb-hub":
        return True
    return kind == "usb-host-controller" and _one_schedule(hop)


def shared_hop(paths: Sequence[Sequence[dict[str, Any]]]) -> SharedHop | None:
    """What every path in ``paths`` goes through, deepest first, or None when nothing is known.

    Returns a dict: ``kind`` and ``name`` of the shared hop (``pci-chipset-uplink`` for DMI,
    ``pci-root-complex`` when only the root is shared), ``hop`` (the hop itself when one is on
    every path), ``depth`` (its index in the paths), ``what`` (one phrase naming it) and, when
    a hop is on every path, ``one_bus`` (:func:`is_one_bus`).
    """
    if len(paths) < 2 or any(not p for p in paths):
        return None
    depth = 0
    while all(depth < len(p) for p in paths) and \
            len({_key(p[depth]) for p in paths}) == 1:
        depth += 1
    if depth == len(paths[0]) and all(len(p) == depth for p in paths):
        raise ValueError("the same device was named twice (identical paths)")
    if depth >= 2 and _schedule_shared_above(paths[0][depth - 2], paths[0][depth - 1]):
        depth -= 1  # the root hub's ports are one bus: the controller's schedule is the hop
    if depth:
        hop = dict(paths[0][depth - 1])
        kind, name = _key(hop)
        label = kind.removeprefix("sim-").removeprefix("pci-").removeprefix("usb-")
        # What the hops on the shared path say of themselves (a cap, a link trained low).
        notes = [note for shared in paths[0][:depth] for note in shared.get("notes") or ()]
        return {"kind": kind, "name": name, "hop": hop, "depth": depth - 1, "notes": notes,
                "one_bus": is_one_bus(hop),
                "what": f"{label.replace('-', ' ')} {name}".strip()
                + (f" ({'; '.join(notes)})" if notes else "")}
    roots = [p[0] for p in paths]
    if all(str(r.get("kind", "")).startswith("pci-") for r in roots):
        names = ", ".join(str(hop_field(r, "name")) for r in roots)
        if all(is_chipset_root_port(r) for r in roots):
            return {"kind": "pci-chipset-uplink", "name": "DMI", "hop": None, "depth": -1,
                    "what": f"the chipset's uplink to the CPU (DMI), behind chipset root "
                            f"ports {names}"}
        return {"kind": "pci-root-complex", "name": "root complex", "hop": None, "depth": -1,
                "what": f"the root complex (memory, or the CPU's I/O fabric) behind root "
                        f"ports {names}"}
    return None
