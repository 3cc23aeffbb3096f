"""The soft endpoint (``SoftDataLink`` + ``ConfigSpace`` + ``TlpRouter``) as a Verilator model
for cocotb.

The Amaranth design is turned into Verilog once per source hash
(:func:`~busprobe.gateware.verilog_cache.cached_verilog`) and built once per Verilog hash
(:func:`~busprobe.sim.verilator_build.build_verilator_model`), as the other models are. The
top's ports are flat so that the bench touches two words a symbol time::

    rx_word[8:0]  symbol from the root port (packed {k, byte})   rx_word[9]  present (else
                                                                             electrical idle)
    rx_error      the symbol's 8b/10b decode error (a hostile link's)
    tx_word[8:0]  symbol to the root port                        tx_word[9]  electrical idle

    app_word[7:0] a byte of a TLP routed to the application  app_word[8] last, [9] valid
                  (taken every clock: the bench records what the router passes on)

plus the endpoint's state as outputs (``dl_active``, ``status``, ``max_payload_size``, ...).
The LTSSM runs :data:`~.amaranth_bench.SIM_TIMING` (its timeouts scaled to thousands of
symbol times, as every symbol-level test runs it); the data link layer its defaults.

With ``lanes`` 4 (:data:`WORD_TOPLEVEL`) the endpoint is the link at four symbols a clock,
run as at Gen1 on the board: a 125 MHz clock, a word each way every other clock, which the
top paces itself and shows on ``word_clock`` (the bench moves a word when it is high)::

    rx_word[35:0] four symbols, lane 0 in bits 8:0   rx_word[36] present (else electrical idle)
    rx_error[3:0] their decode errors
    tx_word[35:0] four symbols to the root port      tx_word[36] electrical idle
    app_word[31:0] a DW routed to the application    app_word[32] last, [33] valid
"""

from __future__ import annotations

from pathlib import Path

from busprobe.protocol.pcie_ltssm import LINK_STATUS_FIELDS

__all__ = ["TOPLEVEL", "WORD_TOPLEVEL", "OUTPUTS", "SYMBOL_BITS", "WORD_SYMBOLS",
           "build_soft_endpoint_simulator"]

TOPLEVEL = "soft_endpoint"
#: The top of the endpoint on the link at four symbols a clock.
WORD_TOPLEVEL = "soft_endpoint_words"
#: Symbols a word of the four-symbol top.
WORD_SYMBOLS = 4
#: A packed symbol's width in ``rx_word``/``tx_word``; the bit above it is the wire's state.
SYMBOL_BITS = 9
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
#: ``app_word``: a routed TLP byte, its ``last`` flag, ``valid``.
APP_LAST, APP_VALID = 1 << 8, 1 << 9


def _top(lanes: int = 1):
    from amaranth import Cat, Const, Module, Signal
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out
    from busprobe.gateware.pcie.soft.config_space import ConfigSpace
    from busprobe.gateware.pcie.soft.data_link import SoftDataLink
    from busprobe.gateware.pcie.soft.deframer import RX_TLP_DW
    from busprobe.gateware.pcie.soft.framer import TLP_DW
    from busprobe.gateware.pcie.soft.tlp_merge import TlpMerge
    from busprobe.gateware.pcie.soft.tlp_router import TlpRouter
    from busprobe.gateware.pcie.soft.transaction_layer import connect_transaction_layer

    from .amaranth_bench import SIM_TIMING

    words = lanes == WORD_SYMBOLS
    symbols = lanes * SYMBOL_BITS
    app_data = 32 if words else 8
    tl = {"unit": RX_TLP_DW} if words else {}

    class SoftEndpointTop(wiring.Component):
        """``SoftDataLink``, ``ConfigSpace`` and ``TlpRouter`` connected as an endpoint is
        (the router's UR completions merged after configuration space's), flat ports."""

        def __init__(self) -> None:
            super().__init__({"rx_word": In(symbols + 1), "rx_error": In(lanes),
                              "receiver_detected": In(1),
                              "tx_word": Out(symbols + 1), "app_word": Out(app_data + 2),
                              **({"word_clock": Out(1)} if words else {}),
                              **{name: Out(width) for name, width in OUTPUTS.items()}})

        def elaborate(self, platform):
            m = Module()
            m.submodules.link = link = SoftDataLink(timing=SIM_TIMING, lanes=lanes)
            m.submodules.config = config = ConfigSpace(**tl)
            m.submodules.router = router = TlpRouter(**tl)
            m.submodules.merge = merge = TlpMerge(2, **({"unit": TLP_DW} if words else {}))
            connect_transaction_layer(m, link, config, router)
            wiring.connect(m, config.tlp, merge.sink_0)
            wiring.connect(m, router.ur_tlp, merge.sink_1)
            wiring.connect(m, merge.source, link.tlp)
            present = self.rx_word[symbols]
            # Gen1 on a 125 MHz clock: a word each way every other clock, as the DCU's
            # gearbox paces the link on the board.
            word_clock = Signal(init=1) if words else Const(1)
            if words:
                m.d.sync += word_clock.eq(~word_clock)
                m.d.comb += self.word_clock.eq(word_clock)
            m.d.comb += [
                router.source.ready.eq(1),
                self.app_word.eq(Cat(router.source.payload.data, router.source.payload.last,
                                     router.source.valid)),
                link.rx.valid.eq(present & word_clock),
                link.rx_electrical_idle.eq(~present),
                link.receiver_detected.eq(self.receiver_detected),
                link.tx.ready.eq(word_clock),
                self.tx_word.eq(Cat(link.tx.payload.as_value()[:symbols],
                                    link.tx_electrical_idle)),
            ]
            for lane in range(lanes):
                target = link.rx.payload[lane] if words else link.rx.payload
                m.d.comb += [target.symbol.eq(self.rx_word[lane * SYMBOL_BITS:
                                                           (lane + 1) * SYMBOL_BITS]),
                             target.error.eq(self.rx_error[lane])]
            for name in OUTPUTS:
                owner = next(part for part in (config, router, link) if hasattr(part, name))
                source = getattr(owner, name)
                m.d.comb += getattr(self, name).eq(source)
            return m

    return SoftEndpointTop()


def build_soft_endpoint_simulator(lanes: int = 1) -> Path:
    """The endpoint's Verilog (cached) built by Verilator (cached); the model's folder.
    ``lanes`` 4: the endpoint on the link at four symbols a clock (:data:`WORD_TOPLEVEL`)."""
    from busprobe.gateware.verilog_cache import cached_verilog
    from busprobe.sim.verilator_build import build_root, build_verilator_model

    from . import amaranth_bench

    toplevel = WORD_TOPLEVEL if lanes == WORD_SYMBOLS else TOPLEVEL
    verilog = cached_verilog(build_root() / "gateware" / "pcie", toplevel,
                             lambda: _top(lanes),
                             packages=["busprobe.gateware.pcie.soft", "busprobe.protocol"],
                             files=[Path(__file__), Path(amaranth_bench.__file__)])
    name = "pcie-soft-endpoint-words" if lanes == WORD_SYMBOLS else "pcie-soft-endpoint"
    return build_verilator_model(name, [verilog], toplevel, public_ports_only=True)
