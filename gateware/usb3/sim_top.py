# amaranth: UnusedElaboratable=no
"""Simulation top: the SuperSpeed board design with its PIPE interface as Verilog ports.

``generate_verilog(out_dir)`` writes ``busprobe_usb3-<hash>.v``, top module ``busprobe_usb3``
(``design="storage"``: ``busprobe_usb3_storage``, the null disk of :mod:`.storage`, same ports):
the board design minus the ECP5 SerDes, its PLL/DCU and the PHY's crossing
(:class:`~.ecp5_phy.ECP5Usb3Phy`, :class:`~.serdes_crossing.SerdesCrossing`). On the board the
crossing turns the SerDes' 2-symbol, 250 MHz side into the 4-symbol, 125 MHz PIPE below; the
simulation drives that MAC-side PIPE directly.

One clock, ``clk`` = 125 MHz, clocks both domains the design uses: ``ss`` (the whole SuperSpeed
stack and busprobe's endpoints) and ``sync`` (only LUNA's PHY reset controller). ``rst`` is a
synchronous active-high reset of both. Every PIPE port is synchronous to ``clk``. Directions are
the simulated top's (the PHY model drives the inputs); names and meanings are PIPE 3.0's, as in
LUNA's ``PIPEInterface``::

    input         clk, rst
    -- PHY -> MAC
    input  [31:0] pipe_rx_data       4 symbols per cycle, bits [7:0] first on the wire
    input  [3:0]  pipe_rx_datak      1 = that symbol is a K symbol
    input         pipe_rx_valid      symbol lock (LUNA does not read it; drive 1 once locked)
    input  [2:0]  pipe_rx_status     PIPE RxStatus (receiver detect result, decode errors)
    input         pipe_rx_elec_idle  1 = electrical idle; LFPS bursts are seen as 0 pulses
    input         pipe_phy_status    PIPE PhyStatus (high after reset until the PHY is ready)
    input         pipe_power_present VBUS present; LUNA starts training on it
    -- MAC -> PHY
    output [31:0] pipe_tx_data
    output [3:0]  pipe_tx_datak
    output        pipe_tx_elec_idle  1 = transmitter idle; with tx_detrx_lpbk: send LFPS
    output        pipe_tx_detrx_lpbk in P0 with tx_elec_idle: LFPS square wave requested
    output        pipe_tx_ones_zeroes, pipe_tx_compliance (unused by LUNA, 0)
    output [1:0]  pipe_power_down    P0..P3 (LUNA keeps P0)
    output        pipe_reset         PHY reset from LUNA's reset controller
    output        pipe_rx_termination, pipe_rx_polarity, pipe_rx_eq_training
    output [1:0]  pipe_phy_mode      (1 = USB), pipe_rate (1 = 5 GT/s), pipe_elas_buf_mode
    output [1:0]  pipe_tx_deemph; output [2:0] pipe_tx_margin; output pipe_tx_swing
    -- status, for the testbench
    output        link_trained       LUNA's link reached U0
    output        link_in_reset      a warm/hot reset is in progress
    output [7:0]  configuration      the configuration value in force (0: unconfigured)

Symbols are 8b/10b-decoded, unscrambled by the PHY (LUNA scrambles and descrambles itself); the
PHY model does 8b/10b in its head, and inserts/removes SKPs as the elastic buffer would.
Files are cached by a hash of the gateware sources and tool versions, like the USB2 sim top.
"""

from pathlib import Path

from amaranth import ClockDomain, ClockSignal, Module, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from luna.gateware.interface.pipe import PIPEInterface

from ..verilog_cache import cached_verilog

__all__ = ["Usb3SimTop", "generate_verilog", "TOP_NAME", "TOP_NAMES", "DESIGNS", "PORTS",
           "PIPE_WIDTH", "CLOCK_HZ"]


TOP_NAME = "busprobe_usb3"
#: The busprobe designs the top holds: the probe, the null disk (``usb3-storage``) and the probe
#: with bulk streams (:mod:`.streams_device`).
DESIGNS = ("busprobe", "storage", "streams")
TOP_NAMES = {"busprobe": TOP_NAME, "storage": "busprobe_usb3_storage",
             "streams": "busprobe_usb3_streams"}
#: Symbols per PIPE transfer and the clock they move at: 4 × 125 MHz = 500 M symbols/s.
PIPE_WIDTH = 4
CLOCK_HZ = 125_000_000

#: PIPE signal -> (direction seen from the simulated top, width). Port name = ``pipe_`` + key.
_PIPE_PORTS = {
    "rx_data": ("input", 8 * PIPE_WIDTH), "rx_datak": ("input", PIPE_WIDTH),
    "rx_valid": ("input", 1), "rx_status": ("input", 3), "rx_elec_idle": ("input", 1),
    "phy_status": ("input", 1), "power_present": ("input", 1),
    "tx_data": ("output", 8 * PIPE_WIDTH), "tx_datak": ("output", PIPE_WIDTH),
    "tx_elec_idle": ("output", 1), "tx_detrx_lpbk": ("output", 1),
    "tx_ones_zeroes": ("output", 1), "tx_compliance": ("output", 1),
    "power_down": ("output", 2), "reset": ("output", 1), "rx_termination": ("output", 1),
    "rx_polarity": ("output", 1), "rx_eq_training": ("output", 1), "phy_mode": ("output", 2),
    "rate": ("output", 1), "elas_buf_mode": ("output", 1), "tx_deemph": ("output", 2),
    "tx_margin": ("output", 3), "tx_swing": ("output", 1),
}
_STATUS_PORTS = {"link_trained": ("output", 1), "link_in_reset": ("output", 1),
                 "configuration": ("output", 8)}
#: The port contract: name -> (direction, width).
PORTS = {"clk": ("input", 1), "rst": ("input", 1),
         **{f"pipe_{name}": spec for name, spec in _PIPE_PORTS.items()}, **_STATUS_PORTS}


def _signature():
    members = {name: (In if direction == "input" else Out)(width)
               for name, (direction, width) in PORTS.items()}
    return wiring.Signature(members)


class Usb3SimTop(wiring.Component):
    """The SuperSpeed device with a 4-symbol PIPE interface and its clock as ports.

    Attributes
    ----------
    See the module docstring (:data:`PORTS`): ``clk``/``rst``, every PIPE signal as
    ``pipe_<name>``, and ``link_trained``/``link_in_reset``/``configuration``.

    Parameters
    ----------
    device_factory: callable, optional
        ``device_factory(phy=pipe)`` returns the device (default :class:`.device.Usb3ProbeDevice`).
    """

    def __init__(self, *, device_factory=None):
        super().__init__(_signature())
        self._device_factory = device_factory

    def elaborate(self, platform):
        m = Module()
        for domain in ("ss", "sync"):
            m.domains += ClockDomain(domain, local=True)
            m.d.comb += [ClockSignal(domain).eq(self.clk), ResetSignal(domain).eq(self.rst)]

        pipe = PIPEInterface(width=PIPE_WIDTH)
        for name, (direction, _) in _PIPE_PORTS.items():
            port, inner = getattr(self, f"pipe_{name}"), getattr(pipe, name)
            m.d.comb += inner.eq(port) if direction == "input" else port.eq(inner)

        if self._device_factory is None:
            from .device import Usb3ProbeDevice
            device = Usb3ProbeDevice(phy=pipe, sync_frequency=CLOCK_HZ)
        else:
            device = self._device_factory(phy=pipe)
        m.submodules.device = device
        m.d.comb += [
            self.link_trained.eq(device.core.link_trained),
            self.link_in_reset.eq(device.core.link_in_reset),
            self.configuration.eq(device.core.configuration),
        ]
        return m


#: Packages whose sources become the Verilog.
PACKAGES = ("busprobe.gateware.common", "busprobe.gateware.usb3", "busprobe.protocol")


def _storage_device(*, phy):
    from .storage import Usb3StorageDevice
    return Usb3StorageDevice(phy=phy, sync_frequency=CLOCK_HZ)


def _streams_device(*, phy):
    from .streams_device import Usb3StreamsDevice
    return Usb3StreamsDevice(phy=phy, sync_frequency=CLOCK_HZ)


#: The device factory of each design (None: the top's default, the probe).
_FACTORIES = {"busprobe": None, "storage": _storage_device, "streams": _streams_device}


def generate_verilog(out_dir: Path, *, design: str = "busprobe") -> Path:
    """Write the Verilog of the SuperSpeed sim top with ``design`` (:data:`DESIGNS`) into
    ``out_dir`` and return its path (``<top>-<hash>.v``, ``<top>`` from :data:`TOP_NAMES`;
    cached, see :mod:`busprobe.gateware.verilog_cache`)."""
    if design not in DESIGNS:
        raise ValueError(f"unknown USB3 design {design!r} (choose from {', '.join(DESIGNS)})")
    factory = _FACTORIES[design]
    return cached_verilog(out_dir, TOP_NAMES[design],
                          lambda: Usb3SimTop(device_factory=factory), packages=PACKAGES)
