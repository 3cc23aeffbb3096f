"""The soft PCIe endpoint's physical layer on an ECP5-5G DCU channel at 2.5 GT/s.

The DCU does the 8b/10b code, the 10-bit alignment on K28.5 and clock compensation (SKPs in and
out of SKP ordered sets); this wrapper adds what PCIe needs around it: receiver detection,
electrical idle towards the LTSSM, the receive polarity the LTSSM decides, the scrambler, and
the gearbox and crossing from the DCU's two symbols per 125 MHz clock to the link's words of
four at half that clock (:class:`~.word_gearbox.WordGearbox`). The DCU is LUNA's
``ECP5SerDes``, as busprobe's SuperSpeed PHY uses it, retuned for PCIe Gen1
(:data:`GEN1_PARAMETERS`).
"""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out
from luna.gateware.interface.serdes_phy.ecp5 import ECP5SerDes, ECP5SerDesPLLConfiguration

from ...common.ecp5_dcu import add_dcu
from .ltssm import GEN1_WORD_CLOCK_HZ
from .receiver_detect import ReceiverDetector
from .symbol_stream import rx_word_stream, tx_word_stream
from .word_gearbox import WordGearbox

__all__ = ["Ecp5PciePhy", "GEN1_PARAMETERS", "LINE_RATE", "SERDES_CLOCK_HZ", "WORD_LINK_CLOCK_HZ"]

LINE_RATE = 2.5e9
#: The DCU's fabric clock with 1:2 gearing: two symbols a clock.
SERDES_CLOCK_HZ = 125e6
#: The link's clock, a word of four symbols every clock at Gen1: half the DCU's (a board makes it
#: from the DCU's with a PLL). Gen2 would need twice this (DESIGN §3.10).
WORD_LINK_CLOCK_HZ = GEN1_WORD_CLOCK_HZ
assert WORD_LINK_CLOCK_HZ == SERDES_CLOCK_HZ / 2

#: DCU parameters LUNA sets for USB 3.0 at 5 Gb/s that PCIe Gen1 needs otherwise (``CHX`` is the
#: channel). The rates are the TX PLL's and the CDR's maximum line rate (TN1261). DCOFTNRG is
#: undocumented: "0b010" is what Lattice's PCIe sample code uses at 2.5 GT/s (as carried by
#: Yumewatari's and ECP5-PCIe's DCU wrappers), LUNA's "0b001" its 5 Gb/s value; the other
#: undocumented DCO and CMU values are the same in both. Clock compensation matches PCIe's SKP
#: (K28.0, 11Ch) where USB 3.0's is K28.1: LUNA's two-character match then adds or removes a
#: pair of SKPs inside a SKP ordered set, leaving 1 to 5, which the link's SKP remover takes.
GEN1_PARAMETERS = {
    "D_TX_MAX_RATE": "2.5",
    "CHX_CDR_MAX_RATE": "2.5",
    "CHX_DCOFTNRG": "0b010",
    "CHX_CC_MATCH_1": "0x11c",
    "CHX_CC_MATCH_2": "0x11c",
    "CHX_CC_MATCH_3": "0x11c",
    "CHX_CC_MATCH_4": "0x11c",
}


class _Gen1SerDes(ECP5SerDes):
    """LUNA's DCU channel with :data:`GEN1_PARAMETERS`, the receiver-detection port and the
    loss-of-signal output.

    LUNA builds the DCUA instance inside ``elaborate``; this takes its result and changes only
    the named parameters (each of which LUNA must already set, so a LUNA that changes them is
    noticed here) and adds the four detection ports LUNA leaves unconnected.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pcie_det_en, self.pcie_ct = Signal(), Signal()
        self.pcie_done, self.pcie_con = Signal(), Signal()
        self.rx_los = Signal()

    def elaborate(self, platform):
        m = super().elaborate(platform)
        dcu = m.submodules.serdes
        channel = f"CH{self._channel}"
        for name, value in GEN1_PARAMETERS.items():
            name = name.replace("CHX", channel)
            if name not in dcu.parameters:
                raise KeyError(f"LUNA's DCU no longer sets {name}: retune it again")
            dcu.parameters[name] = value
        ports = {"FFC_PCIE_DET_EN": (self.pcie_det_en, "i"), "FFC_PCIE_CT": (self.pcie_ct, "i"),
                 "FFS_PCIE_DONE": (self.pcie_done, "o"), "FFS_PCIE_CON": (self.pcie_con, "o")}
        for name, port in ports.items():
            assert f"{channel}_{name}" not in dcu.ports
            dcu.ports[f"{channel}_{name}"] = port
        m.d.comb += self.rx_los.eq(dcu.ports[f"{channel}_FFS_RLOS"][0])
        return m


class Ecp5PciePhy(wiring.Component):
    """A PCIe Gen1 x1 PHY on one ECP5-5G DCU channel, for :class:`~.soft_link.SoftLink`.

    Connect it to a ``SoftLink`` (or ``SoftDataLink``) ``link`` with ``wiring.connect(m,
    link.tx, phy.tx)``, ``wiring.connect(m, phy.rx, link.rx)`` and ``tx_electrical_idle``,
    ``rx_electrical_idle``, ``receiver_detected`` and ``invert_polarity`` assigned between
    them. Those are all in the link's domain (62.5 MHz: a word of four symbols a clock at
    line rate), whose clock must be made from ``serdes_clk`` (a PLL halving it): the FIFOs
    between the two have no elasticity. The DCU's side runs in a local ``pclk`` domain (its
    125 MHz fabric clock, constrained); LUNA's reset sequencer and SerDes Client Interface run in
    ``control_domain``, a clock that runs before the DCU's PLL locks.

    - Electrical idle: the DCU's loss-of-signal detector, synchronised (LUNA's values for its
      level and equaliser, from Lattice's 5 Gb/s PCIe configuration).
    - Receiver detection: :class:`~.receiver_detect.ReceiverDetector` on the DCU's detection
      port while the transmitter is in electrical idle. (ECP5-PCIe, which trained against real
      root ports, hard-wired its result to "found": its author could not get ``pcie_con`` to
      work. Untried here: no board.)
    - Polarity: ``invert_polarity`` goes to LUNA's SCI register write (CH_01 bit 0), which LUNA
      repeats in a loop, so a change takes effect within a few dozen control clocks.
    - The reset sequencer is LUNA's: the receive path is valid once its CDR and PCS are locked,
      and it resets the receive PCS on loss of signal and on any decode error (see the design
      notes: a single bit error costs a few thousand symbol times).

    Attributes
    ----------
    refclk: Signal(), input
        The DCU's reference clock (the EXTREFB output on a board).
    serdes_clk: Signal(), output
        The DCU's 125 MHz fabric clock, for the board's PLL that makes the link's.
    tx: tx_word_stream(), input; tx_electrical_idle: Signal(), input
    rx: rx_word_stream(), output
    rx_electrical_idle, receiver_detected: Signal(), output
    invert_polarity: Signal(), input
    rx_ready: Signal(), output
        The DCU's receiver is locked (link domain).
    gearbox: WordGearbox; detector: ReceiverDetector
        Their counters (``pclk`` domain; the gearbox's ``tx_underflows`` in the link's).

    Parameters
    ----------
    tx_pads, rx_pads:
        The channel's differential pads (``.p``, ``.n``).
    dual, channel: int
    refclk_frequency: float
        100 MHz (a PCIe slot's), or any LUNA's PLL configuration multiplies to 2.5 GHz
        (by 8, 10, 16, 20 or 25).
    domain, control_domain: str
    """

    def __init__(self, *, tx_pads, rx_pads, dual: int = 0, channel: int = 0,
                 refclk_frequency: float = 100e6, domain: str = "sync",
                 control_domain: str = "sync"):
        self._pads = tx_pads, rx_pads
        self._dual, self._channel = dual, channel
        self._refclk_frequency = refclk_frequency
        self._domain, self._control_domain = domain, control_domain
        super().__init__({
            "refclk": In(1),
            "serdes_clk": Out(1),
            "tx": In(tx_word_stream()),
            "tx_electrical_idle": In(1),
            "rx": Out(rx_word_stream()),
            "rx_electrical_idle": Out(1),
            "receiver_detected": Out(1),
            "invert_polarity": In(1),
            "rx_ready": Out(1),
        })
        self.gearbox = WordGearbox(domain=domain, serdes_domain="pclk")
        self.detector = ReceiverDetector(clock_hz=SERDES_CLOCK_HZ, domain="pclk")

    def connect_link(self, m: Module, link) -> None:
        """Connect ``link`` (a :class:`~.data_link.SoftDataLink` or :class:`~.soft_link.SoftLink`)
        to this PHY in ``m``: both symbol streams and the four level signals, by name."""
        wiring.connect(m, link.tx, self.tx)
        wiring.connect(m, self.rx, link.rx)
        m.d.comb += [self.tx_electrical_idle.eq(link.tx_electrical_idle),
                     link.rx_electrical_idle.eq(self.rx_electrical_idle),
                     link.receiver_detected.eq(self.receiver_detected),
                     self.invert_polarity.eq(link.invert_polarity)]

    def elaborate(self, platform):
        m = Module()
        link, control = self._domain, self._control_domain
        pll = ECP5SerDesPLLConfiguration(self.refclk, self._refclk_frequency, LINE_RATE)
        serdes = _Gen1SerDes(pll, *self._pads, dual=self._dual, channel=self._channel)
        add_dcu(m, platform, serdes, control_domain=control, clock_hz=SERDES_CLOCK_HZ)
        m.d.comb += self.serdes_clk.eq(serdes.pclk)
        m.submodules.detector = detector = self.detector

        # Symbols: the DCU's halves through the gearbox, the link's words at its end.
        rx_ready, los = Signal(), Signal(init=1)
        m.submodules.rx_ready_sync = FFSynchronizer(serdes.rx_ready, rx_ready, o_domain="pclk")
        m.submodules.los_sync = FFSynchronizer(serdes.rx_los, los, o_domain="pclk", init=1)
        m.submodules.gearbox = crossing = self.gearbox
        m.d.comb += [crossing.tx.valid.eq(self.tx.valid),
                     crossing.tx.p.symbols.eq(self.tx.p.symbols),
                     crossing.tx.p.extra.eq(self.tx_electrical_idle),
                     self.tx.ready.eq(crossing.tx.ready)]
        wiring.connect(m, crossing.rx, wiring.flipped(self.rx))
        m.d.comb += [
            crossing.serdes_rx_data.eq(serdes.rx_data),
            crossing.serdes_rx_datak.eq(serdes.rx_datak),
            crossing.serdes_rx_valid.eq(rx_ready & ~los),
            serdes.tx_data.eq(crossing.serdes_tx_data),
            serdes.tx_datak.eq(crossing.serdes_tx_datak),
            serdes.tx_elec_idle.eq(crossing.serdes_tx_idle),
        ]

        # Detection, on the words the DCU is actually sending.
        m.d.comb += [
            detector.tx_electrical_idle.eq(crossing.serdes_tx_idle),
            serdes.pcie_det_en.eq(detector.pcie_det_en),
            serdes.pcie_ct.eq(detector.pcie_ct),
            detector.pcie_done.eq(serdes.pcie_done),
            detector.pcie_con.eq(serdes.pcie_con),
        ]
        m.submodules.detected_sync = FFSynchronizer(detector.detected, self.receiver_detected,
                                                    o_domain=link)

        # Levels the LTSSM reads and writes, each through two registers of its new domain.
        m.submodules.idle_sync = FFSynchronizer(serdes.rx_los, self.rx_electrical_idle,
                                                o_domain=link, init=1)
        m.submodules.ready_sync = FFSynchronizer(serdes.rx_ready, self.rx_ready, o_domain=link)
        m.submodules.polarity_sync = FFSynchronizer(self.invert_polarity, serdes.rx_polarity,
                                                    o_domain=control)
        # PCIe terminates its receiver whenever it is powered (the partner's detection finds
        # it); no LFPS, no loopback, no transmit inversion.
        m.d.comb += [serdes.rx_termination.eq(1), serdes.reset.eq(0)]
        return m
