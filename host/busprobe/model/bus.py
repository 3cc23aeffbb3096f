"""The :class:`BusDescription` of a selector or a result file, without opening any device.

``busprobe model`` needs the bus configuration only: for simulated targets it is in the selector's
options (no simulator is started), for real devices it is read from sysfs by
:mod:`busprobe.topology`; ``compare`` and ``report`` read it back from result JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..protocol import pcie as pcie_protocol
from ..protocol.usb2 import MAX_PACKET_SIZE
from ..selectors import parse_selector
from ..transport import BusDescription
from .usb2_hosts import load_profile

__all__ = ["bus_from_json", "bus_for_selector", "sim_bus", "SIM_PCIE_DEFAULTS"]

#: What ``sim:pcie`` is when the selector gives no options (the PCIe simulation's defaults).
SIM_PCIE_DEFAULTS = {"gen": 2, "width": 1, "mps": 256, "mrrs": 512}


def bus_from_json(data: dict[str, Any]) -> BusDescription:
    """Inverse of :meth:`BusDescription.to_json`; ``ValueError`` if ``kind`` is missing."""
    if not isinstance(data, dict) or "kind" not in data:
        raise ValueError("result has no bus description (bus.kind missing)")
    return BusDescription(
        kind=str(data["kind"]), speed=str(data.get("speed", "")), width=int(data.get("width") or 1),
        mps=data.get("mps"), mrrs=data.get("mrrs"), host_profile=data.get("host_profile"),
        max_packet_size=data.get("max_packet_size"), extra=dict(data.get("extra") or {}))


def _int_option(options: dict[str, str], key: str, default: int) -> int:
    text = options.get(key)
    if text is None or text == "":
        return default
    try:
        return int(text, 0)
    except ValueError:
        raise ValueError(f"selector option {key}={text!r} is not an integer") from None


def sim_bus(target: str, options: dict[str, str]) -> BusDescription:
    """The bus a ``sim:TARGET?options`` selector simulates (pure: parses, starts nothing)."""
    if target == "usb2":
        host = options.get("host") or "ideal"
        load_profile(host)  # a bad name or file fails here, in one line
        extra = {k: v for k, v in options.items() if k != "host"}
        return BusDescription("usb2-hs", "high", 1, host_profile=host,
                              max_packet_size=MAX_PACKET_SIZE, extra=extra)
    if target == "pcie":
        gen = _int_option(options, "gen", SIM_PCIE_DEFAULTS["gen"])
        width = _int_option(options, "width", SIM_PCIE_DEFAULTS["width"])
        mps = _int_option(options, "mps", SIM_PCIE_DEFAULTS["mps"])
        mrrs = _int_option(options, "mrrs", SIM_PCIE_DEFAULTS["mrrs"])
        extra: dict[str, Any] = {k: v for k, v in options.items()
                                 if k not in ("gen", "width", "mps", "mrrs")}
        for key in ("cap", "latency_ns"):
            if key in extra:
                try:
                    extra[key] = float(extra[key])
                except ValueError:
                    raise ValueError(f"selector option {key}={extra[key]!r} is not a number") \
                        from None
        # What the simulated link is, as the sim backend states it (sim/pcie/backend.py):
        # cocotbext-pcie sends no SKP ordered sets, the root adds latency_ns to every read and
        # the core keeps READ_TAGS reads in flight.
        extra.setdefault("skp", False)
        extra.setdefault("read_latency_ns", extra.get("latency_ns", 0.0))
        extra.setdefault("outstanding_reads", pcie_protocol.READ_TAGS)
        return BusDescription("pcie", f"gen{gen}", width, mps=mps, mrrs=mrrs, extra=extra)
    if target == "usb3":
        return BusDescription("usb3-ss", "super", 1, max_packet_size=1024, extra=dict(options))
    raise ValueError(f"no simulated target {target!r} (available: usb2, pcie, usb3)")


def bus_for_selector(text: str, *, sysfs_root: str | Path = "/sys") -> BusDescription:
    """The bus configuration ``text`` selects: sim options parsed, real devices read from sysfs."""
    sel = parse_selector(text)
    if sel.scheme == "sim":
        return sim_bus(sel.target, sel.options)
    from ..topology import bus_from_sysfs  # reads sysfs only; no device is opened
    return bus_from_sysfs(sel, sysfs_root=sysfs_root)
