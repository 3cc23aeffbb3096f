"""What the endpoint transmits: training sets, compliance pattern, idle, or the framed packets."""

import enum

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_symbols import (
    COMPLIANCE_PATTERN,
    LOGICAL_IDLE,
    TS1_ID,
    TS2_ID,
    TS_LENGTH,
    KCode,
)

from .symbol_stream import tx_symbol_stream
from .ts_receiver import TRAINING_SET

__all__ = ["LinkTransmitter", "TxMode"]


class TxMode(enum.IntEnum):
    ELECTRICAL_IDLE = 0
    TRAINING = 1  # TS1/TS2 as ``ts`` says
    COMPLIANCE = 2
    IDLE = 3  # logical idle
    DATA = 4  # the framer's packets, logical idle between them (L0)


class LinkTransmitter(wiring.Component):
    """Sends what the LTSSM asks for, switching only between ordered sets and packets.

    Attributes
    ----------
    mode: Signal(TxMode), input
    ts: Signal(TRAINING_SET), input
        The TS to send in TRAINING mode (taken at each TS's first symbol; ``n_fts`` and ``rate``
        are sent as given).
    packets: tx_symbol_stream(), input
        The framer's symbols, sent in DATA mode.
    source: tx_symbol_stream(), output
        To the SKP inserter; valid every clock.
    electrical_idle: Signal(), output
        The transmitter is in electrical idle (ELECTRICAL_IDLE mode).
    ts_sent: Signal(), output
        Strobe: the last symbol of a TS went out; ``ts_sent_kind`` says which.
    ts_sent_kind: Signal(2), output
    idle_sent: Signal(), output
        Strobe: a logical idle symbol went out.
    """

    mode: In(TxMode)
    ts: In(TRAINING_SET)
    packets: In(tx_symbol_stream())
    source: Out(tx_symbol_stream())
    electrical_idle: Out(1)
    ts_sent: Out(1)
    ts_sent_kind: Out(2)
    idle_sent: Out(1)

    def elaborate(self, platform):
        m = Module()
        out, ready = self.source.p, self.source.ready
        current = Signal(TxMode)  # the mode of the ordered set or packet in progress
        index = Signal(range(TS_LENGTH))  # 0: at a boundary
        in_packet = Signal()
        ts = Signal(TRAINING_SET)
        mode = Mux((index == 0) & ~in_packet, self.mode, current)
        kind = Mux(index == 0, self.ts.kind, ts.kind)
        m.d.sync += current.eq(mode)
        m.d.comb += self.source.valid.eq(1)

        with m.Switch(mode):
            with m.Case(TxMode.ELECTRICAL_IDLE):
                m.d.comb += [self.electrical_idle.eq(1), out.end.eq(1)]
            with m.Case(TxMode.TRAINING):
                fields = data.View(TRAINING_SET, Mux(index == 0, self.ts, ts))
                with m.If(index == 0):
                    m.d.sync += ts.eq(self.ts)
                with m.Switch(index):
                    with m.Case(0):
                        m.d.comb += out.symbol.eq(KCode.COM)
                    with m.Case(1):
                        m.d.comb += out.symbol.eq(Mux(fields.link_pad, Const(KCode.PAD, 9),
                                                      fields.link))
                    with m.Case(2):
                        m.d.comb += out.symbol.eq(Mux(fields.lane_pad, Const(KCode.PAD, 9),
                                                      fields.lane))
                    with m.Case(3):
                        m.d.comb += out.symbol.eq(fields.n_fts)
                    with m.Case(4):
                        m.d.comb += out.symbol.eq(fields.rate)
                    with m.Case(5):
                        m.d.comb += out.symbol.eq(fields.control)
                    with m.Default():
                        m.d.comb += out.symbol.eq(Mux(kind == 2, TS2_ID, TS1_ID))
                with m.If(ready):
                    m.d.sync += index.eq(Mux(index == TS_LENGTH - 1, 0, index + 1))
                with m.If(index == TS_LENGTH - 1):
                    m.d.comb += [out.end.eq(1), self.ts_sent.eq(ready),
                                 self.ts_sent_kind.eq(kind)]
            with m.Case(TxMode.COMPLIANCE):
                with m.Switch(index[:2]):
                    for i, symbol in enumerate(COMPLIANCE_PATTERN):
                        with m.Case(i):
                            m.d.comb += out.symbol.eq(symbol)
                with m.If(ready):
                    m.d.sync += index.eq(Mux(index == 3, 0, index + 1))
                m.d.comb += out.end.eq(index == 3)
            with m.Case(TxMode.IDLE):
                m.d.comb += [out.symbol.eq(LOGICAL_IDLE), out.end.eq(1),
                             self.idle_sent.eq(ready)]
            with m.Case(TxMode.DATA):
                with m.If(self.packets.valid):
                    m.d.comb += [out.eq(self.packets.p), self.packets.ready.eq(ready)]
                    with m.If(ready):
                        m.d.sync += in_packet.eq(~self.packets.p.end)
                with m.Else():
                    m.d.comb += [out.symbol.eq(LOGICAL_IDLE), out.end.eq(1),
                                 self.idle_sent.eq(ready)]
        return m
