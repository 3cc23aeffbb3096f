"""The soft endpoint with LitePCIe's PHY-side streams: the Amaranth half of
:class:`~busprobe.gateware.pcie.soft.litepcie_phy.SoftPCIEPHY`, converted to Verilog and
instantiated by it.

Inside::

    rx_word ─> SoftDataLink ─┬─> ConfigSpace ──────────────> TlpMerge 0 ─┐
                             └─> TlpRouter ─ source ─> BytesToBeats ─> rx_* (to LitePCIe)
                                            └ ur_tlp ─────> TlpMerge 1 ─┤
    tx_* (from LitePCIe) ─> slice ─> BeatsToBytes ────────> TlpMerge 2 ─┤
    msi_* (from LitePCIe) ─> MsiRequester ────────────────> TlpMerge 3 ─┴─> SoftDataLink.tlp
    SoftDataLink ─> tx_word

Ports are flat (a Migen ``Instance`` connects them by name; widths in :data:`PORTS`): the
link's words (``rx_word``/``tx_word`` as the symbol-level Verilator model has them: four
symbols packed ``{k, byte}``, lane 0 in bits 8:0, the wire's state in bit 36), LitePCIe's two
beat streams and its MSI request, and the configuration space's values LitePCIe and its CSRs
need. One clock: the link's word clock (62.5 MHz at Gen1: a word each way every clock). TLPs
move a DW a clock inside, two a LitePCIe beat. LitePCIe's transmit beats come in through a
register slice (:class:`~busprobe.gateware.common.packet_stream.RegisteredPacketStream`): its
``tx_ready`` is a flip-flop, so the link's ready chain (transmitter, replay buffer, credits,
beats) and LitePCIe's (packetizer, DMA writer) are not one path, which on the Versa was the
worst of the SoC's link clock (63.42 MHz of 62.5 before the slice).
"""

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_ltssm import LINK_STATUS_FIELDS

from ...common.packet_stream import RegisteredPacketStream
from .config_space import ConfigSpace
from .data_link import SoftDataLink
from .litepcie_beats import BeatsToBytes, BytesToBeats
from .msi_request import MsiRequester
from .symbol_stream import LANES
from .tlp_merge import TlpMerge
from .tlp_router import APP_TLP_DW, TlpRouter
from .transaction_layer import connect_transaction_layer
from .word_deframer import RX_TLP_DW
from .word_framer import TLP_DW

__all__ = ["SoftLitePcieEndpoint", "PORTS", "STATUS_OUTPUTS", "SYMBOL_BITS", "WORD_BITS",
           "STORE_BYTES"]

#: A packed symbol's width in ``rx_word``/``tx_word``.
SYMBOL_BITS = 9
#: The four symbols of a word; the bit above them is the wire's state (``rx_word``: symbols
#: are present, else electrical idle; ``tx_word``: electrical idle).
WORD_BITS = LANES * SYMBOL_BITS
#: The router's store holds every completion the core can have outstanding (LitePCIe's 8
#: read tags x 512 bytes, their headers, BAR0 requests beside them): completions are
#: advertised infinite, so a completion that does not fit is lost. 32 TLPs: 8 reads answered
#: in 128-byte completions (MPS 128, or a root that splits at its 128-byte RCB).
STORE_BYTES, STORE_TLPS = 8192, 40
#: Counters and state the simulation reads (name -> width): not LitePCIe's business.
STATUS_OUTPUTS = {
    "dl_active": 1, "status": sum(width for _, width in LINK_STATUS_FIELDS),
    "recoveries": 16, "replays": 16, "replay_timeouts": 16, "naks": 16, "duplicates": 16,
    "protocol_errors": 16, "credit_blocked": 16, "overflows": 16, "unsupported_requests": 16,
    "msi_sent": 16, "msi_dropped": 16,
}
#: Every port: name -> (direction seen from the endpoint, width).
PORTS = {
    "rx_word": ("i", WORD_BITS + 1), "receiver_detected": ("i", 1),
    "tx_word": ("o", WORD_BITS + 1),
    # Received TLPs to LitePCIe (its PHY's ``source``).
    "rx_valid": ("o", 1), "rx_ready": ("i", 1), "rx_first": ("o", 1), "rx_last": ("o", 1),
    "rx_dat": ("o", 64), "rx_be": ("o", 8),
    # TLPs from LitePCIe (its PHY's ``sink``).
    "tx_valid": ("i", 1), "tx_ready": ("o", 1), "tx_last": ("i", 1), "tx_dat": ("i", 64),
    "tx_be": ("i", 8),
    "msi_valid": ("i", 1), "msi_ready": ("o", 1), "msi_dat": ("i", 8),
    "req_id": ("o", 16), "max_payload_size": ("o", 16), "max_request_size": ("o", 16),
    "bus_master": ("o", 1), "msi_enable": ("o", 1),
    **{name: ("o", width) for name, width in STATUS_OUTPUTS.items()},
}


class SoftLitePcieEndpoint(wiring.Component):
    """``SoftDataLink`` + ``ConfigSpace`` + ``TlpRouter`` + ``MsiRequester`` with the router's
    application side as LitePCIe PHY beats (see the module docstring).

    Attributes
    ----------
    The ports of :data:`PORTS`. ``rx_*``/``tx_*`` carry beats as
    :mod:`.litepcie_beats` packs them, ``rx_first`` on a TLP's first beat; ``req_id`` is the
    completer ID the configuration space captured; sizes in bytes (not clamped: the Migen
    wrapper clamps them as LitePCIe wants).

    Parameters
    ----------
    timing: LtssmTiming or None
        The LTSSM's timeouts in clocks of the word clock (None: the spec's at 62.5 MHz).
    link_options
        For :class:`~.data_link.SoftDataLink` (``ack_latency``, ``replay_timeout``, ...).
    """

    def __init__(self, *, timing=None, **link_options):
        self._timing = timing
        self._link_options = link_options
        super().__init__({name: (In if direction == "i" else Out)(width)
                          for name, (direction, width) in PORTS.items()})

    def elaborate(self, platform):
        m = Module()
        m.submodules.link = link = SoftDataLink(timing=self._timing, **self._link_options)
        m.submodules.config = config = ConfigSpace(unit=RX_TLP_DW)
        m.submodules.router = router = TlpRouter(store_bytes=STORE_BYTES, max_tlps=STORE_TLPS,
                                                 unit=RX_TLP_DW)
        m.submodules.to_beats = to_beats = BytesToBeats(unit=APP_TLP_DW)
        m.submodules.to_bytes = to_bytes = BeatsToBytes(unit=TLP_DW)
        m.submodules.tx_slice = tx_slice = RegisteredPacketStream(width=8)
        m.submodules.msi = msi = MsiRequester(unit=TLP_DW)
        m.submodules.merge = merge = TlpMerge(4, unit=TLP_DW)

        # Received: configuration space and the router on the same DWs.
        connect_transaction_layer(m, link, config, router)
        wiring.connect(m, router.source, to_beats.sink)

        # To LitePCIe, with ``first``.
        first = Signal(init=1)
        beat = to_beats.source
        m.d.comb += [self.rx_valid.eq(beat.valid), beat.ready.eq(self.rx_ready),
                     self.rx_first.eq(first), self.rx_last.eq(beat.payload.last),
                     self.rx_dat.eq(beat.payload.dat), self.rx_be.eq(beat.payload.be)]
        with m.If(beat.valid & beat.ready):
            m.d.sync += first.eq(beat.payload.last)

        # From LitePCIe and the MSI request: the third and fourth sources of the merge.
        m.d.comb += [tx_slice.sink.valid.eq(self.tx_valid), self.tx_ready.eq(tx_slice.sink.ready),
                     tx_slice.sink.payload.data.eq(self.tx_dat),
                     tx_slice.sink.payload.keep.eq(self.tx_be),
                     tx_slice.sink.payload.last.eq(self.tx_last),
                     to_bytes.sink.valid.eq(tx_slice.source.valid),
                     tx_slice.source.ready.eq(to_bytes.sink.ready),
                     to_bytes.sink.payload.dat.eq(tx_slice.source.payload.data),
                     to_bytes.sink.payload.be.eq(tx_slice.source.payload.keep),
                     to_bytes.sink.payload.last.eq(tx_slice.source.payload.last),
                     msi.request.valid.eq(self.msi_valid), self.msi_ready.eq(msi.request.ready),
                     msi.request.payload.eq(self.msi_dat),
                     msi.msi_enable.eq(config.msi_enable), msi.bus_master.eq(config.bus_master),
                     msi.msi_address.eq(config.msi_address), msi.msi_data.eq(config.msi_data),
                     msi.requester_id.eq(config.completer_id)]
        for i, source in enumerate((config.tlp, router.ur_tlp, to_bytes.source, msi.tlp)):
            wiring.connect(m, source, getattr(merge, f"sink_{i}"))
        wiring.connect(m, merge.source, link.tlp)

        # The wire: a word each way every clock.
        m.d.comb += [
            link.rx.valid.eq(self.rx_word[WORD_BITS]),
            link.rx_electrical_idle.eq(~self.rx_word[WORD_BITS]),
            link.receiver_detected.eq(self.receiver_detected),
            link.tx.ready.eq(1),
            self.tx_word.eq(Cat(link.tx.payload.symbols.as_value(), link.tx_electrical_idle)),
        ]
        for lane in range(LANES):
            m.d.comb += link.rx.payload[lane].symbol.eq(
                self.rx_word[lane * SYMBOL_BITS:(lane + 1) * SYMBOL_BITS])

        # Configuration and state.
        m.d.comb += [self.req_id.eq(config.completer_id),
                     self.max_payload_size.eq(config.max_payload_size),
                     self.max_request_size.eq(config.max_request_size),
                     self.bus_master.eq(config.bus_master), self.msi_enable.eq(config.msi_enable),
                     self.msi_sent.eq(msi.sent), self.msi_dropped.eq(msi.dropped)]
        for name in STATUS_OUTPUTS:
            owner = next((part for part in (link, router) if hasattr(part, name)), None)
            if owner is not None:
                m.d.comb += getattr(self, name).eq(getattr(owner, name))
        return m
