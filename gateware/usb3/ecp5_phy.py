"""The ECP5 SerDes as a 4-symbol, 125 MHz PIPE: LUNA's DCU block, our crossing, LFPS at 125 MHz.

LUNA's ``ECP5SerDesPIPE`` + ``AsyncPIPEInterface`` put the SerDes' register interface, its coding
error flag, the LFPS generator and detector, the PIPE control synchronisers and an asynchronous
FIFO with its full/empty logic on the SerDes' 250 MHz clock. Here only
:class:`~.serdes_crossing.SerdesCrossing` runs at 250 MHz; the rest is LUNA's, run at 125 MHz.
"""

from math import ceil

from amaranth import ClockSignal, DomainRenamer, Elaboratable, Module
from luna.gateware.interface.pipe import PIPEInterface
from luna.gateware.interface.serdes_phy.ecp5 import ECP5SerDes, ECP5SerDesPLLConfiguration
from luna.gateware.interface.serdes_phy.lfps import (
    LFPSSquareWaveDetector,
    LFPSSquareWaveGenerator,
)

from ..common.ecp5_dcu import add_dcu
from .serdes_crossing import SerdesCrossing

__all__ = ["ECP5Usb3Phy", "SERDES_CLOCK_HZ", "LINK_CLOCK_HZ"]

#: The DCU's fabric clock at 5 Gb/s with its 1:2 gearing (two symbols a clock).
SERDES_CLOCK_HZ = 250e6
#: The ``ss`` clock this PHY's PIPE side and its control logic run on (four symbols a clock).
LINK_CLOCK_HZ = 125e6
#: LFPS square wave asked of LUNA's generator: 3 + 3 cycles at 125 MHz, a 48 ns period
#: (USB 3.0 allows 20-100 ns).
LFPS_HZ = 25e6
#: The longest LFPS half period USB 3.0 allows (tPeriod at most 100 ns), with LUNA's 20 % margin.
_LFPS_HALF_PERIOD_MAX_S = 50e-9 * 1.2


class _LFPSDetector(LFPSSquareWaveDetector):
    """LUNA's LFPS detector, on a 125 MHz clock.

    LUNA's constructor refuses clocks below ~126 MHz: its shortest accepted half period, 10 ns
    less 20 %, rounds down to zero cycles there. Every level the synchroniser sees lasts at
    least one cycle, so one cycle is that bound here (as it is at 250 MHz); the longest is
    LUNA's formula at this clock.
    """

    def __init__(self, *, clock_frequency: float):
        super().__init__()
        self._half_cycle_min = 1
        self._half_cycle_max = ceil(clock_frequency * _LFPS_HALF_PERIOD_MAX_S) + 1


class ECP5Usb3Phy(PIPEInterface, Elaboratable):
    """A PIPE (four symbols, ``ss`` domain at 125 MHz) on one channel of an ECP5 DCU.

    The SerDes' 250 MHz fabric clock is the crossing's ``pclk`` domain; the PHY constrains it
    on platforms that take clock constraints. LUNA's ``ECP5SerDes`` is the DCU: its parameters,
    reset sequencer and SerDes Client Interface (SCI), renamed from LUNA's 250 MHz ``pipe``
    domain to ``ss``. The SCI is asynchronous and slow, so it loses nothing. LUNA's
    coding-error flag (a decoded 0xEE K symbol on either lane) shares that domain, so it becomes
    a 125 MHz register of the 250 MHz receive bus: it samples every other word, on a path
    nextpnr does not time, and both its readers tolerate that (the reset sequencer synchronises
    it and waits for 1024 clean cycles; the DCU's comma aligner takes it as an asynchronous
    edge, and re-aligning finds the same comma). LFPS is generated and detected at 125 MHz
    (LUNA's blocks, ``_LFPSDetector``). The symbols cross to ``ss`` in
    :class:`~.serdes_crossing.SerdesCrossing`, the only 250 MHz logic.

    As LUNA's ECP5 PHY: power state P0 only, no receiver detection (``power_present`` is left
    for the board to drive), ``tx_compliance``, ``tx_ones_zeroes``, ``rx_eq_training`` and the
    de-emphasis and margin inputs ignored. ``rx_status`` carries the crossing's elastic-buffer
    events.

    Attributes
    ----------
    crossing: SerdesCrossing
        The gearbox and elastic FIFOs (their SKP and recentring strobes, ``ss``).
    Others as :class:`luna.gateware.interface.pipe.PIPEInterface`, all in the ``ss`` domain.

    Parameters
    ----------
    tx_pads, rx_pads:
        The channel's differential pads (``.p``, ``.n``).
    dual, channel: int
        The DCU and its channel.
    refclk_frequency: float
        Frequency of the reference on ``clk`` (LUNA's ECP5 SerDes takes 250, 200 or 312.5 MHz).
    """

    def __init__(self, *, tx_pads, rx_pads, dual: int, channel: int, refclk_frequency: float):
        super().__init__(width=4)
        self._tx_pads, self._rx_pads = tx_pads, rx_pads
        self._dual, self._channel = dual, channel
        self._refclk_frequency = refclk_frequency
        self.crossing = SerdesCrossing()

    def elaborate(self, platform):
        m = Module()
        pll = ECP5SerDesPLLConfiguration(self.clk, self._refclk_frequency, 5e9)
        serdes = ECP5SerDes(pll, self._tx_pads, self._rx_pads, dual=self._dual,
                            channel=self._channel)
        # LUNA's register interface and reset sequencer in ss; its 250 MHz clock as ``pclk``.
        add_dcu(m, platform, serdes, control_domain="ss", clock_hz=SERDES_CLOCK_HZ)

        m.submodules.crossing = crossing = self.crossing
        m.d.comb += [
            crossing.serdes_rx_data.eq(serdes.rx_data),
            crossing.serdes_rx_datak.eq(serdes.rx_datak),
            serdes.tx_data.eq(crossing.serdes_tx_data),
            serdes.tx_datak.eq(crossing.serdes_tx_datak),
            crossing.tx_data.eq(self.tx_data),
            crossing.tx_datak.eq(self.tx_datak),
            self.rx_data.eq(crossing.rx_data),
            self.rx_datak.eq(crossing.rx_datak),
            self.rx_status.eq(crossing.rx_status),
        ]

        generator = LFPSSquareWaveGenerator(LFPS_HZ, LINK_CLOCK_HZ)
        detector = _LFPSDetector(clock_frequency=LINK_CLOCK_HZ)
        m.submodules.lfps_generator = DomainRenamer({"pipe": "ss"})(generator)
        m.submodules.lfps_detector = DomainRenamer({"pipe": "ss"})(detector)
        m.d.comb += [
            serdes.tx_gpio_en.eq(generator.tx_gpio_en),
            serdes.tx_gpio.eq(generator.tx_gpio),
            detector.rx_gpio.eq(serdes.rx_gpio),
            generator.generate.eq(self.tx_detrx_lpbk & self.tx_elec_idle),
            self.rx_elec_idle.eq(~detector.present),
        ]

        m.d.comb += [
            self.pclk.eq(ClockSignal("ss")),
            serdes.reset.eq(self.reset),
            serdes.tx_elec_idle.eq(self.tx_elec_idle),
            serdes.rx_polarity.eq(self.rx_polarity),
            serdes.rx_termination.eq(self.rx_termination),
            self.phy_status.eq(~serdes.tx_ready),
            self.rx_valid.eq(serdes.rx_ready & crossing.rx_valid),
        ]
        return m
