"""The soft endpoint (``SoftDataLink`` + ``ConfigSpace`` + ``TlpRouter``) as a Verilator model
for cocotb.

The Amaranth design is turned into Verilog once per source hash
(:func:`~busprobe.gateware.verilog_cache.cached_verilog`) and built once per Verilog hash
(:func:`~busprobe.sim.verilator_build.build_verilator_model`), as the other models are. The
link moves four symbols a clock, run as at Gen1 on the board: a 62.5 MHz clock, a word each
way every clock (DESIGN §3.10). The top's ports are flat so that the bench touches a few
words a clock::

    rx_word[35:0]  four symbols from the root port, lane 0 (first on the wire) in bits 8:0,
                   each packed {k, byte}                      rx_word[36]  present (else
                                                                           electrical idle)
    rx_error[3:0]  their 8b/10b decode errors (a hostile link's)
    tx_word[35:0]  four symbols to the root port              tx_word[36]  electrical idle
    app_word[31:0] a DW of a TLP routed to the application    app_word[32] last, [33] valid
                   (taken every clock: the bench records what the router passes on)

plus the endpoint's state as outputs (``dl_active``, ``status``, ``max_payload_size``, ...).
The LTSSM runs :data:`~.amaranth_bench.SIM_TIMING` (its timeouts scaled to thousands of
clocks, as every symbol-level test runs it); the data link layer its defaults.
"""

from __future__ import annotations

from pathlib import Path

from busprobe.protocol.pcie_ltssm import LINK_STATUS_FIELDS

__all__ = ["TOPLEVEL", "OUTPUTS", "SYMBOL_BITS", "WORD_SYMBOLS", "APP_DATA_BITS",
           "build_soft_endpoint_simulator"]

TOPLEVEL = "soft_endpoint_words"
#: Symbols a word.
WORD_SYMBOLS = 4
#: A packed symbol's width in ``rx_word``/``tx_word``; the bit above the word is the wire's
#: state.
SYMBOL_BITS = 9
#: ``app_word``'s data: a DW; ``last`` and ``valid`` above it.
APP_DATA_BITS = 32
#: The outputs the bench reads: name -> width.
OUTPUTS = {
    "dl_active": 1, "status": sum(width for _, width in LINK_STATUS_FIELDS),
    "recoveries": 16, "naks": 16, "duplicates": 16,
    "replays": 16, "replay_timeouts": 16, "protocol_errors": 16, "next_transmit_seq": 12,
    "acked_seq": 12, "next_rcv_seq": 12, "completer_id": 16, "memory_space": 1,
    "bus_master": 1, "bar0_base": 32, "msi_enable": 1, "msi_address": 64, "msi_data": 16,
    "max_payload_size": 16, "max_request_size": 16, "dropped": 16, "malformed": 16,
    "unsupported_requests": 16, "unsupported_posted": 16, "unexpected_completions": 16,
    "overflows": 16, "credit_blocked": 16,
}


def _top():
    from amaranth import Cat, Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out
    from busprobe.gateware.pcie.soft.config_space import ConfigSpace
    from busprobe.gateware.pcie.soft.data_link import SoftDataLink
    from busprobe.gateware.pcie.soft.tlp_merge import TlpMerge
    from busprobe.gateware.pcie.soft.tlp_router import TlpRouter
    from busprobe.gateware.pcie.soft.transaction_layer import connect_transaction_layer
    from busprobe.gateware.pcie.soft.word_deframer import RX_TLP_DW
    from busprobe.gateware.pcie.soft.word_framer import TLP_DW

    from .amaranth_bench import SIM_TIMING

    symbols = WORD_SYMBOLS * SYMBOL_BITS

    class SoftEndpointTop(wiring.Component):
        """``SoftDataLink``, ``ConfigSpace`` and ``TlpRouter`` connected as an endpoint is
        (the router's UR completions merged after configuration space's), flat ports."""

        def __init__(self) -> None:
            super().__init__({"rx_word": In(symbols + 1), "rx_error": In(WORD_SYMBOLS),
                              "receiver_detected": In(1),
                              "tx_word": Out(symbols + 1), "app_word": Out(APP_DATA_BITS + 2),
                              **{name: Out(width) for name, width in OUTPUTS.items()}})

        def elaborate(self, platform):
            m = Module()
            m.submodules.link = link = SoftDataLink(timing=SIM_TIMING)
            m.submodules.config = config = ConfigSpace(unit=RX_TLP_DW)
            m.submodules.router = router = TlpRouter(unit=RX_TLP_DW)
            m.submodules.merge = merge = TlpMerge(2, unit=TLP_DW)
            connect_transaction_layer(m, link, config, router)
            wiring.connect(m, config.tlp, merge.sink_0)
            wiring.connect(m, router.ur_tlp, merge.sink_1)
            wiring.connect(m, merge.source, link.tlp)
            present = self.rx_word[symbols]
            m.d.comb += [
                router.source.ready.eq(1),
                self.app_word.eq(Cat(router.source.payload.data, router.source.payload.last,
                                     router.source.valid)),
                # A word each way every clock (Gen1 at 62.5 MHz).
                link.rx.valid.eq(present),
                link.rx_electrical_idle.eq(~present),
                link.receiver_detected.eq(self.receiver_detected),
                link.tx.ready.eq(1),
                self.tx_word.eq(Cat(link.tx.payload.as_value()[:symbols],
                                    link.tx_electrical_idle)),
            ]
            for lane in range(WORD_SYMBOLS):
                m.d.comb += [link.rx.payload[lane].symbol.eq(
                                 self.rx_word[lane * SYMBOL_BITS:(lane + 1) * SYMBOL_BITS]),
                             link.rx.payload[lane].error.eq(self.rx_error[lane])]
            for name in OUTPUTS:
                owner = next(part for part in (config, router, link) if hasattr(part, name))
                m.d.comb += getattr(self, name).eq(getattr(owner, name))
            return m

    return SoftEndpointTop()


def build_soft_endpoint_simulator() -> Path:
    """The endpoint's Verilog (cached) built by Verilator (cached); the model's folder."""
    from busprobe.gateware.verilog_cache import cached_verilog
    from busprobe.sim.verilator_build import build_root, build_verilator_model

    from . import amaranth_bench

    verilog = cached_verilog(build_root() / "gateware" / "pcie", TOPLEVEL, _top,
                             packages=["busprobe.gateware.pcie.soft", "busprobe.protocol"],
                             files=[Path(__file__), Path(amaranth_bench.__file__)])
    return build_verilator_model("pcie-soft-endpoint-words", [verilog], TOPLEVEL,
                                 public_ports_only=True)
