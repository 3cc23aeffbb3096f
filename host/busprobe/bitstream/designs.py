"""Designs ``busprobe build --design`` can put on a board, by name.

Each entry names the device class (``"module:Class"``, constructed with keyword arguments only:
``ulpi=`` for USB 2.0). Classes are imported only when a build asks for them.

``usb2`` is the lean default: the always-ready stream endpoints, the PATTERN and LOOPBACK data
modes and the core telemetry, with none of the optional parts
(:class:`busprobe.protocol.usb2.Feature`). ``usb2-full`` adds them all: the BOT framer
(``--protocol bot``), the packet-shape counters and the receive-drop counters. GET_INFO says
which a flashed bitstream has. ``usb2-storage`` is the null disk: a SCSI block device over
Bulk-Only Transport that the operating system's storage driver binds (issue 28);
``usb3-storage`` the same disk on the SuperSpeed device.
``usb2-stock`` is LUNA's reference device, for comparison. ``pcie-endpoint`` is the soft PCIe
endpoint (data link layer, configuration space, BAR0 router) on an ECP5 DCU lane.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from .result import BuildError

__all__ = ["Design", "DESIGNS", "get_design", "BuildError"]


@dataclass(frozen=True)
class Design:
    """A gateware design.

    Attributes
    ----------
    name : str
        ``--design`` value.
    bus : str
        ``"usb2"``, ``"usb3"``, ``"pcie"`` (LiteX, Artix-7) or ``"pcie-dcu"`` (the soft PCIe
        endpoint's PHY on an ECP5 DCU): which board top wraps it.
    candidates : tuple of str
        ``"module:Class"`` to try in order; the first importable one is built.
    clock_domain : str
        The domain whose Fmax decides whether the design meets timing on the board.
    mapping_delay_ps : int or None
        Delay target of yosys' LUT mapping (``abc9.D``), ECP5 builds only. Without one, abc9
        maps every path for the least depth it can reach, duplicating logic on paths far
        shorter than any clock needs; with one, paths under the target are mapped for area.
        ``None``: abc9's default.
    placer_timing_weight : int or None
        nextpnr-ecp5's heap placer timing weight (``--placer-heap-timingweight``, default 10),
        ECP5 builds only: how hard placement pulls the cells of critical paths together.
        ``None``: nextpnr's default.
    """

    name: str
    bus: str
    candidates: tuple[str, ...]
    clock_domain: str
    mapping_delay_ps: int | None = None
    placer_timing_weight: int | None = None

    def load(self) -> type:
        """Import the design class."""
        missing = []
        for spec in self.candidates:
            module_name, _, attr = spec.partition(":")
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as exc:
                if exc.name is None or not module_name.startswith(exc.name):
                    raise  # the design's own import failed: show that, not "not found"
                missing.append(module_name)
                continue
            return getattr(module, attr)
        raise BuildError(f"design {self.name!r} is not available: none of "
                         f"{', '.join(missing)} is importable")


#: abc9 delay target of the USB 2.0 designs, all three alike so that they compare. The usb
#: domain runs at 60 MHz and is held to 95 MHz on the ECP5-8 (docs/DESIGN.md §2.3); measured on
#: Cynthion r1.4 with nextpnr seeds 1-3, 6 ns of mapped depth routes to 104-110 MHz, 6.5 ns to
#: 94-100 MHz, and no target to 109-113 MHz with some 100 LUT4 more.
USB2_MAPPING_DELAY_PS = 6000
#: Heap placer timing weight of the USB 3.0 design. Its ss domain (125 MHz) fails by routing,
#: not logic depth: some 80 % of each critical path is wire between LUNA's link, endpoint and
#: request logic spread over the LFE5UM5G-85F. Measured on one netlist with nextpnr seeds 1, 3
#: and 5: the default weight (10) reached 117.5 / 123.8 / 120.3 MHz, weight 40 reached
#: 134.1 / 137.7 / 125.9 MHz.
USB3_PLACER_TIMING_WEIGHT = 40

DESIGNS: dict[str, Design] = {design.name: design for design in (
    Design(name="usb2", bus="usb2", clock_domain="usb",
           candidates=("busprobe.gateware.usb2.device:Usb2ProbeDevice",),
           mapping_delay_ps=USB2_MAPPING_DELAY_PS),
    Design(name="usb2-full", bus="usb2", clock_domain="usb",
           candidates=("busprobe.gateware.usb2.device:Usb2FullProbeDevice",),
           mapping_delay_ps=USB2_MAPPING_DELAY_PS),
    Design(name="usb2-storage", bus="usb2", clock_domain="usb",
           candidates=("busprobe.gateware.usb2.storage:Usb2StorageDevice",),
           mapping_delay_ps=USB2_MAPPING_DELAY_PS),
    Design(name="usb2-stock", bus="usb2", clock_domain="usb",
           candidates=("busprobe.gateware.usb2.stock:StockUsb2Device",),
           mapping_delay_ps=USB2_MAPPING_DELAY_PS),
    Design(name="usb3", bus="usb3", clock_domain="ss",
           candidates=("busprobe.gateware.usb3.device:Usb3ProbeDevice",),
           placer_timing_weight=USB3_PLACER_TIMING_WEIGHT),
    Design(name="usb3-storage", bus="usb3", clock_domain="ss",
           candidates=("busprobe.gateware.usb3.storage:Usb3StorageDevice",),
           placer_timing_weight=USB3_PLACER_TIMING_WEIGHT),
    Design(name="pcie-endpoint", bus="pcie-dcu", clock_domain="link",
           candidates=("busprobe.gateware.boards.soft_pcie_endpoint:SoftPcieEndpoint",)),
    Design(name="pcie", bus="pcie", clock_domain="sys",
           candidates=("busprobe.gateware.pcie.core:BusprobePCIeSoC",)),
)}


def get_design(name: str) -> Design:
    try:
        return DESIGNS[name]
    except KeyError:
        raise ValueError(f"unknown design {name!r} (known: {', '.join(sorted(DESIGNS))})") \
            from None
