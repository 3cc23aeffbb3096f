"""A stock LUNA SuperSpeed device with its PIPE bus as Verilog ports (the model's own test top).

The PIPE link partner is developed and tested against this top while busprobe's own design
(``gateware/usb3``) lands; both expose LUNA's :class:`~luna.gateware.interface.pipe.PIPEInterface`
at width 4 (32 bits a cycle, one 125 MHz ``ss`` clock), so the model is the same for both.

``generate_verilog(out_dir)`` writes ``usb3_stock.v`` (module ``usb3_stock``) with the ports of
:data:`PORTS`; only LUNA's stock control endpoint and descriptors are inside.
"""

# No ``from __future__ import annotations``: wiring reads the class annotations as objects.
from pathlib import Path

from amaranth import ClockDomain, ClockSignal, Module, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.gateware.verilog_cache import cached_verilog

__all__ = ["PORTS", "TOP_NAME", "StockSuperSpeedSimTop", "generate_verilog"]

TOP_NAME = "usb3_stock"
SS_CLOCK_HZ = 125_000_000

#: The PIPE port contract, seen from the device (MAC): name -> (direction, width). The names
#: are ``pipe_`` + LUNA's ``PIPEInterface`` attributes, as in busprobe's top; ``link_trained``
#: is the LTSSM's U0 (``link_ready``).
PORTS = {
    "clk": ("input", 1), "rst": ("input", 1),
    "pipe_tx_data": ("output", 32), "pipe_tx_datak": ("output", 4),
    "pipe_rx_data": ("input", 32), "pipe_rx_datak": ("input", 4),
    "pipe_rx_valid": ("input", 1), "pipe_rx_status": ("input", 3),
    "pipe_phy_status": ("input", 1), "pipe_rx_elec_idle": ("input", 1),
    "pipe_power_present": ("input", 1), "pipe_reset": ("output", 1),
    "pipe_power_down": ("output", 2), "pipe_tx_elec_idle": ("output", 1),
    "pipe_tx_detrx_lpbk": ("output", 1), "pipe_rx_polarity": ("output", 1),
    "pipe_rx_termination": ("output", 1),
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
    pipe_tx_data, pipe_tx_datak, pipe_rx_data ...
        The PIPE signals of :data:`PORTS`, directions as seen by the device, named as
        busprobe's own top (``gateware/usb3/sim_top.py``) names them.
    link_trained: Signal(), output
        High in U0.
    """

    clk: In(1)
    rst: In(1)
    pipe_tx_data: Out(32)
    pipe_tx_datak: Out(4)
    pipe_rx_data: In(32)
    pipe_rx_datak: In(4)
    pipe_rx_valid: In(1)
    pipe_rx_status: In(3)
    pipe_phy_status: In(1)
    pipe_rx_elec_idle: In(1)
    pipe_power_present: In(1)
    pipe_reset: Out(1)
    pipe_power_down: Out(2)
    pipe_tx_elec_idle: Out(1)
    pipe_tx_detrx_lpbk: Out(1)
    pipe_rx_polarity: Out(1)
    pipe_rx_termination: Out(1)
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
        for name, (direction, _) in PORTS.items():
            if name.startswith("pipe_"):
                port, signal = getattr(self, name), getattr(pipe, name[len("pipe_"):])
                m.d.comb += signal.eq(port) if direction == "input" else port.eq(signal)
        m.submodules.usb = usb = USBSuperSpeedDevice(phy=pipe, sync_frequency=SS_CLOCK_HZ)
        usb.add_standard_control_endpoint(_descriptors())
        m.d.comb += self.link_trained.eq(usb.link_trained)
        return m


def generate_verilog(out_dir: Path) -> Path:
    """Write the stock top's Verilog into ``out_dir`` (cached by source hash); return its path."""
    return cached_verilog(out_dir, TOP_NAME, StockSuperSpeedSimTop, files=[Path(__file__)])
