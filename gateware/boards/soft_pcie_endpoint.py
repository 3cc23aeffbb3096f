"""The soft PCIe endpoint as a board design: data link layer, configuration space, router, merge.

What ``busprobe build --design pcie-endpoint`` puts on a board with an ECP5 DCU PCIe lane
(:mod:`.versa_pcie`): :class:`~busprobe.gateware.pcie.soft.data_link.SoftDataLink` on the
board's :class:`~busprobe.gateware.pcie.soft.ecp5_pcie_phy.Ecp5PciePhy`, with
:class:`~busprobe.gateware.pcie.soft.config_space.ConfigSpace` and
:class:`~busprobe.gateware.pcie.soft.tlp_router.TlpRouter` on the received TLPs and their
transmit streams through :class:`~busprobe.gateware.pcie.soft.tlp_merge.TlpMerge`, connected as
the Verilator model (``sim/pcie/symbol/endpoint_model.py``) connects them. The application
behind BAR0 is the router's own store: the TLPs it passes on are taken every clock and folded
into two LEDs (a toggle per TLP, the parity of its bytes), so that synthesis keeps the store and
its read side, as an application reading it would. The link moves four symbols a 62.5 MHz clock
and TLPs as DWs (DESIGN §3.10, "Four symbols a clock, and Gen2").
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from ..pcie.soft.config_space import ConfigSpace
from ..pcie.soft.data_link import SoftDataLink
from ..pcie.soft.ecp5_pcie_phy import WORD_LINK_CLOCK_HZ
from ..pcie.soft.ltssm import LtssmTiming
from ..pcie.soft.tlp_merge import TlpMerge
from ..pcie.soft.tlp_router import TlpRouter
from ..pcie.soft.transaction_layer import connect_transaction_layer
from ..pcie.soft.word_deframer import RX_TLP_DW
from ..pcie.soft.word_framer import TLP_DW

__all__ = ["SoftPcieEndpoint", "STATUS_LEDS"]

#: What each bit of ``leds`` shows, LED 0 first.
STATUS_LEDS = ("physical link up (L0)", "DL_Active", "DCU receiver locked",
               "receiver detected", "memory space enabled", "TLP for BAR0 (toggles)",
               "parity of the BAR0 TLPs' bytes", "unsupported request answered (toggles)")


class SoftPcieEndpoint(wiring.Component):
    """The soft endpoint on an :class:`~busprobe.gateware.pcie.soft.ecp5_pcie_phy.Ecp5PciePhy`.

    Runs in ``sync``, which the board top makes the PHY's link domain: the link at four symbols
    a clock, a word every clock of 62.5 MHz at Gen1; the LTSSM's timeouts are
    the specification's at that clock.

    Attributes
    ----------
    leds: Signal(8), output
        Link status and activity, :data:`STATUS_LEDS`.

    Parameters
    ----------
    phy: Ecp5PciePhy
        The board's PHY, its link side in this design's domain.
    """

    leds: Out(8)

    def __init__(self, *, phy):
        self._phy = phy
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        phy = self._phy
        m.submodules.link = link = SoftDataLink(timing=LtssmTiming.spec(WORD_LINK_CLOCK_HZ))
        m.submodules.config = config = ConfigSpace(unit=RX_TLP_DW)
        m.submodules.router = router = TlpRouter(unit=RX_TLP_DW)
        m.submodules.merge = merge = TlpMerge(2, unit=TLP_DW)

        phy.connect_link(m, link)

        # Received TLPs to configuration space and the router; their answers merged, the
        # configuration completions first.
        connect_transaction_layer(m, link, config, router)
        wiring.connect(m, config.tlp, merge.sink_0)
        wiring.connect(m, router.ur_tlp, merge.sink_1)
        wiring.connect(m, merge.source, link.tlp)
        m.d.comb += router.source.ready.eq(1)

        # The application: every routed byte taken, folded into two LEDs.
        app_toggle, app_parity, ur_toggle = Signal(), Signal(), Signal()
        taken = router.source.valid & router.source.ready
        with m.If(taken):
            m.d.sync += app_parity.eq(app_parity ^ router.source.payload.data.xor())
            with m.If(router.source.payload.last):
                m.d.sync += app_toggle.eq(~app_toggle)
        ur_last = router.ur_tlp.valid & router.ur_tlp.ready & router.ur_tlp.payload.last
        with m.If(ur_last):
            m.d.sync += ur_toggle.eq(~ur_toggle)

        m.d.comb += self.leds.eq(Cat(link.status.link_up, link.dl_active, phy.rx_ready,
                                     phy.receiver_detected, config.memory_space, app_toggle,
                                     app_parity, ur_toggle))
        return m

