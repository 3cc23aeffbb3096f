"""Simulation top: the board design with its ULPI bus as Verilog ports (the sim contract).

``generate_verilog(out_dir)`` writes ``busprobe_usb2.v`` (top module ``busprobe_usb2``, the lean
board default; for ``design="full"``, every optional part: ``busprobe_usb2_full``; for
``design="stock"``: ``busprobe_usb2_stock``; for ``design="storage"``, the null disk:
``busprobe_usb2_storage``) with exactly these ports, all in one 60 MHz domain::

    input  clk, input rst (synchronous, active high),
    input  [7:0] ulpi_data_i, output [7:0] ulpi_data_o, output ulpi_data_oe,
    input  ulpi_dir, input ulpi_nxt, output ulpi_stp, output ulpi_rst

Only clock generation and I/O buffers are left out. Files are cached by a hash of the gateware
sources and the tool versions, so unchanged designs are not regenerated.
"""

from collections.abc import Callable
from pathlib import Path

from amaranth import ClockDomain, ClockSignal, Elaboratable, Module, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..verilog_cache import cached_verilog
from .ulpi import ulpi_bus

__all__ = ["Usb2SimTop", "generate_verilog", "DESIGNS", "TOP_NAMES", "PORTS"]


#: Top-level module name per design.
TOP_NAMES = {"busprobe": "busprobe_usb2", "full": "busprobe_usb2_full",
             "stock": "busprobe_usb2_stock", "storage": "busprobe_usb2_storage"}

#: The port contract: name -> (direction, width).
PORTS = {
    "clk": ("input", 1), "rst": ("input", 1),
    "ulpi_data_i": ("input", 8), "ulpi_data_o": ("output", 8), "ulpi_data_oe": ("output", 1),
    "ulpi_dir": ("input", 1), "ulpi_nxt": ("input", 1),
    "ulpi_stp": ("output", 1), "ulpi_rst": ("output", 1),
}


def _busprobe_design(*, ulpi):
    from .device import Usb2ProbeDevice
    return Usb2ProbeDevice(ulpi=ulpi)


def _full_design(*, ulpi):
    from .device import Usb2FullProbeDevice
    return Usb2FullProbeDevice(ulpi=ulpi)


def _storage_design(*, ulpi):
    from .storage import Usb2StorageDevice
    return Usb2StorageDevice(ulpi=ulpi)


def _stock_design(*, ulpi):
    from .stock import StockUsb2Device
    return StockUsb2Device(ulpi=ulpi)


#: Design name -> factory ``(*, ulpi) -> Elaboratable``.
DESIGNS: dict[str, Callable[..., Elaboratable]] = {
    "busprobe": _busprobe_design, "full": _full_design, "stock": _stock_design,
    "storage": _storage_design,
}


class Usb2SimTop(wiring.Component):
    """A USB 2.0 design with its ULPI bus and ``usb`` clock domain as ports.

    Attributes
    ----------
    clk: Signal(), input
        60 MHz ULPI clock; clocks the ``usb`` domain.
    rst: Signal(), input
        Synchronous active-high reset of the ``usb`` domain (also drives ``ulpi_rst``).
    ulpi_data_i: Signal(8), input
    ulpi_data_o: Signal(8), output
    ulpi_data_oe: Signal(), output
    ulpi_dir: Signal(), input
    ulpi_nxt: Signal(), input
    ulpi_stp: Signal(), output
    ulpi_rst: Signal(), output
        The ULPI bus, split into directions as an I/O buffer would.

    Parameters
    ----------
    design: callable
        ``design(ulpi=bus)`` returns the device elaboratable (one of :data:`DESIGNS`).
    """

    clk: In(1)
    rst: In(1)
    ulpi_data_i: In(8)
    ulpi_data_o: Out(8)
    ulpi_data_oe: Out(1)
    ulpi_dir: In(1)
    ulpi_nxt: In(1)
    ulpi_stp: Out(1)
    ulpi_rst: Out(1)

    def __init__(self, *, design: Callable[..., Elaboratable]):
        super().__init__()
        self._design = design

    def elaborate(self, platform):
        m = Module()
        m.domains.usb = ClockDomain("usb", local=True)
        m.d.comb += [ClockSignal("usb").eq(self.clk), ResetSignal("usb").eq(self.rst)]
        bus = ulpi_bus(data_i=self.ulpi_data_i, data_o=self.ulpi_data_o,
                       data_oe=self.ulpi_data_oe, dir_i=self.ulpi_dir, nxt_i=self.ulpi_nxt,
                       stp_o=self.ulpi_stp, rst_o=self.ulpi_rst)
        m.submodules.design = self._design(ulpi=bus)
        return m


#: Packages whose sources become the Verilog (the bus-independent blocks, the USB2 design and the
#: protocol it implements).
PACKAGES = ("busprobe.gateware.common", "busprobe.gateware.usb2", "busprobe.protocol")


def generate_verilog(out_dir: Path, *, design: str = "busprobe") -> Path:
    """Write the Verilog of ``design`` into ``out_dir`` and return the file's path
    (``<top>-<hash>.v``, ``<top>`` from :data:`TOP_NAMES`; cached, see
    :mod:`busprobe.gateware.verilog_cache`).

    Raises
    ------
    ValueError
        If ``design`` is not one of :data:`DESIGNS`.
    """
    if design not in DESIGNS:
        raise ValueError(f"unknown USB2 design {design!r} (choose from {', '.join(DESIGNS)})")
    return cached_verilog(out_dir, TOP_NAMES[design], lambda: Usb2SimTop(design=DESIGNS[design]),
                          packages=PACKAGES)
