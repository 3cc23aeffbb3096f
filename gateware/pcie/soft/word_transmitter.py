"""What the endpoint transmits, four symbols a word: training sets, compliance pattern, idle, or
the framed packets."""

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

from .symbol_stream import LANES, tx_word_stream
from .word_ts_receiver import TRAINING_SET

__all__ = ["WordTransmitter", "TxMode"]

#: Words of a TS1/TS2.
TS_WORDS = TS_LENGTH // LANES


class TxMode(enum.IntEnum):
    ELECTRICAL_IDLE = 0
    TRAINING = 1  # TS1/TS2 as ``ts`` says
    COMPLIANCE = 2
    IDLE = 3  # logical idle
    DATA = 4  # the framer's packets, logical idle between them (L0)


class WordTransmitter(wiring.Component):
    """Sends what the LTSSM asks for, four symbols a word, switching only between ordered sets
    and packets.

    Every structure is whole words from lane 0: a TS1/TS2 is four words, the compliance pattern
    one, logical idle whole words of D0.0 (each marked ``end``, so a SKP set may follow), and
    the framer's packets already are. The mode is taken at a word boundary outside a TS and a
    packet; ``idle_sent`` is four idle symbols, so the LTSSM's count of idle sent moves by
    four.

    Attributes
    ----------
    mode: Signal(TxMode), input
    ts: Signal(TRAINING_SET), input
        The TS to send in TRAINING mode (taken at each TS's first word; ``n_fts`` and ``rate``
        are sent as given).
    packets: tx_word_stream(), input
        The framer's words, sent in DATA mode.
    source: tx_word_stream(), output
        To the SKP inserter; valid every clock, a word taken each clock ``ready`` is high.
    electrical_idle: Signal(), output
        The transmitter is in electrical idle (ELECTRICAL_IDLE mode).
    ts_sent: Signal(), output
        Strobe: the last word of a TS went out; ``ts_sent_kind`` says which.
    ts_sent_kind: Signal(2), output
    idle_sent: Signal(), output
        Strobe: a logical idle word (four idle symbols) went out.
    """

    mode: In(TxMode)
    ts: In(TRAINING_SET)
    packets: In(tx_word_stream())
    source: Out(tx_word_stream())
    electrical_idle: Out(1)
    ts_sent: Out(1)
    ts_sent_kind: Out(2)
    idle_sent: Out(1)

    def elaborate(self, platform):
        m = Module()
        out, ready = self.source.p, self.source.ready
        current = Signal(TxMode)  # the mode of the ordered set or packet in progress
        index = Signal(range(TS_WORDS))  # the word of a TS; 0: at a boundary
        in_packet = Signal()
        ts = Signal(TRAINING_SET)
        mode = Mux((index == 0) & ~in_packet, self.mode, current)
        m.d.sync += current.eq(mode)
        m.d.comb += self.source.valid.eq(1)

        def word(symbols):
            m.d.comb += [out.symbols[lane].eq(symbol) for lane, symbol in enumerate(symbols)]

        def idle():
            word([LOGICAL_IDLE] * LANES)
            m.d.comb += [out.end.eq(1), self.idle_sent.eq(ready)]

        with m.Switch(mode):
            with m.Case(TxMode.ELECTRICAL_IDLE):
                m.d.comb += [self.electrical_idle.eq(1), out.end.eq(1)]
            with m.Case(TxMode.TRAINING):
                # The TS is held from its first word so that it goes out as one TS.
                fields = data.View(TRAINING_SET, Mux(index == 0, self.ts, ts))
                with m.If(index == 0):
                    m.d.sync += ts.eq(self.ts)
                ident = Mux(fields.kind == 2, TS2_ID, TS1_ID)
                with m.Switch(index):
                    with m.Case(0):
                        word([KCode.COM,
                              Mux(fields.link_pad, Const(KCode.PAD, 9), fields.link),
                              Mux(fields.lane_pad, Const(KCode.PAD, 9), fields.lane),
                              fields.n_fts])
                    with m.Case(1):
                        word([fields.rate, fields.control, ident, ident])
                    with m.Default():
                        word([ident] * LANES)
                with m.If(ready):
                    m.d.sync += index.eq(Mux(index == TS_WORDS - 1, 0, index + 1))
                with m.If(index == TS_WORDS - 1):
                    m.d.comb += [out.end.eq(1), self.ts_sent.eq(ready),
                                 self.ts_sent_kind.eq(fields.kind)]
            with m.Case(TxMode.COMPLIANCE):
                # The whole pattern is one word: every word is a boundary.
                word(COMPLIANCE_PATTERN)
                m.d.comb += out.end.eq(1)
            with m.Case(TxMode.IDLE):
                idle()
            with m.Case(TxMode.DATA):
                with m.If(self.packets.valid):
                    m.d.comb += [out.eq(self.packets.p), self.packets.ready.eq(ready)]
                    with m.If(ready):
                        m.d.sync += in_packet.eq(~self.packets.p.end)
                with m.Else():
                    idle()
        return m
