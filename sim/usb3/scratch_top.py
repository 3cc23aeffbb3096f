"""A stock LUNA SuperSpeed device with its PIPE bus as Verilog ports (the model's own test top).

The PIPE link partner is developed and tested against this top while busprobe's own design
(``gateware/usb3``) lands; both expose LUNA's :class:`~luna.gateware.interface.pipe.PIPEInterface`
at width 4 (32 bits a cycle, one 125 MHz ``ss`` clock), so the model is the same for both.

``generate_verilog(out_dir)`` writes ``usb3_stock.v`` (module ``usb3_stock``) with the ports of
:data:`PORTS`; only LUNA's stock control endpoint and descriptors are inside.
"""

# No ``from __future__ import annotations``: wiring reads the class annotations as objects.
import hashlib
import importlib.metadata
import os
import tempfile
from pathlib import Path

from amaranth import ClockDomain, ClockSignal, Module, ResetSignal
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["PORTS", "TOP_NAME", "StockSuperSpeedSimTop", "generate_verilog"]

TOP_NAME = "usb3_stock"
SS_CLOCK_HZ = 125_000_000

#: The PIPE port contract, seen from the device (MAC): name -> (direction, width). The names
#: are LUNA's ``PIPEInterface`` attributes; ``link_trained`` is the LTSSM's U0 (``link_ready``).
PORTS = {
    "clk": ("input", 1), "rst": ("input", 1),
    "tx_data": ("output", 32), "tx_datak": ("output", 4),
    "rx_data": ("input", 32), "rx_datak": ("input", 4),
    "rx_valid": ("input", 1), "rx_status": ("input", 3), "phy_status": ("input", 1),
    "rx_elec_idle": ("input", 1), "power_present": ("input", 1),
    "phy_reset": ("output", 1), "power_down": ("output", 2), "tx_elec_idle": ("output", 1),
    "tx_detrx_lpbk": ("output", 1), "rx_polarity": ("output", 1), "rx_termination": ("output", 1),
    "link_trained": ("output", 1),
}


def _descriptors():
    from usb_protocol.emitters import DeviceDescriptorCollection

    descriptors = DeviceDescriptorCollection()
    with descriptors.DeviceDescriptor() as d:
        d.bcdUSB = 3.0
        d.idVendor, d.idProduct = 0x1209, 0x0001
        d.iManufacturer, d.iProduct, d.iSerialNumber = "LUNA", "stock SuperSpeed", "scratch"
        d.bMaxPacketSize0 = 9  # 2^9 = 512, the only SuperSpeed EP0 size (USB 3.2 §9.6.1)
        d.bNumConfigurations = 1
    with descriptors.ConfigurationDescriptor() as c:
        c.bMaxPower = 50
        with c.InterfaceDescriptor() as i:
            i.bInterfaceNumber = 0
            with i.EndpointDescriptor(add_default_superspeed=True) as e:
                e.bEndpointAddress = 0x81
                e.wMaxPacketSize = 1024
    return descriptors


class StockSuperSpeedSimTop(wiring.Component):
    """LUNA's ``USBSuperSpeedDevice`` with a stock control endpoint, its PIPE bus as ports.

    Attributes
    ----------
    clk, rst: Signal(), input
        The 125 MHz PIPE clock (``ss`` and ``sync`` domains) and its synchronous reset.
    tx_data, tx_datak, rx_data, rx_datak ...
        The PIPE signals of :data:`PORTS`, directions as seen by the device.
    link_trained: Signal(), output
        High in U0.
    """

    clk: In(1)
    rst: In(1)
    tx_data: Out(32)
    tx_datak: Out(4)
    rx_data: In(32)
    rx_datak: In(4)
    rx_valid: In(1)
    rx_status: In(3)
    phy_status: In(1)
    rx_elec_idle: In(1)
    power_present: In(1)
    phy_reset: Out(1)
    power_down: Out(2)
    tx_elec_idle: Out(1)
    tx_detrx_lpbk: Out(1)
    rx_polarity: Out(1)
    rx_termination: Out(1)
    link_trained: Out(1)

    def elaborate(self, platform):
        from luna.gateware.interface.pipe import PIPEInterface
        from luna.usb3 import USBSuperSpeedDevice

        m = Module()
        # One clock for both of LUNA's domains: the sim has no SerDes clock crossing to model.
        for name in ("ss", "sync"):
            m.domains += ClockDomain(name, local=True)
            m.d.comb += [ClockSignal(name).eq(self.clk), ResetSignal(name).eq(self.rst)]
        pipe = PIPEInterface(width=4)
        pipe._MustUse__silence = True  # only its signals are used: the PHY is the partner model
        m.d.comb += [
            self.tx_data.eq(pipe.tx_data), self.tx_datak.eq(pipe.tx_datak),
            pipe.rx_data.eq(self.rx_data), pipe.rx_datak.eq(self.rx_datak),
            pipe.rx_valid.eq(self.rx_valid), pipe.rx_status.eq(self.rx_status),
            pipe.phy_status.eq(self.phy_status), pipe.rx_elec_idle.eq(self.rx_elec_idle),
            pipe.power_present.eq(self.power_present),
            self.phy_reset.eq(pipe.reset), self.power_down.eq(pipe.power_down),
            self.tx_elec_idle.eq(pipe.tx_elec_idle), self.tx_detrx_lpbk.eq(pipe.tx_detrx_lpbk),
            self.rx_polarity.eq(pipe.rx_polarity), self.rx_termination.eq(pipe.rx_termination),
        ]
        m.submodules.usb = usb = USBSuperSpeedDevice(phy=pipe, sync_frequency=SS_CLOCK_HZ)
        usb.add_standard_control_endpoint(_descriptors())
        m.d.comb += self.link_trained.eq(usb.link_trained)
        return m


def _hash() -> str:
    digest = hashlib.sha256(Path(__file__).read_bytes())
    for name in ("amaranth", "luna-usb", "usb-protocol"):
        digest.update(f"{name}={importlib.metadata.version(name)};".encode())
    return digest.hexdigest()[:12]


def generate_verilog(out_dir: Path) -> Path:
    """Write the stock top's Verilog into ``out_dir`` (cached by source hash); return its path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{TOP_NAME}-{_hash()}.v"
    if path.exists():
        return path
    from busprobe.bitstream.toolchain import use_yosys

    use_yosys()
    text = verilog.convert(StockSuperSpeedSimTop(), name=TOP_NAME, emit_src=False,
                           strip_internal_attrs=True)
    with tempfile.NamedTemporaryFile("w", dir=out_dir, suffix=".tmp", delete=False) as tmp:
        tmp.write(text)
    os.replace(tmp.name, path)
    return path
