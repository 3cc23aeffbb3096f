"""Training ordered sets, logical idle and EIOS recognised in the received symbols (§4.2.4.1)."""

from amaranth import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_symbols import (
    LOGICAL_IDLE,
    TS1_ID,
    TS1_ID_INVERTED,
    TS2_ID,
    TS2_ID_INVERTED,
    TS_LENGTH,
    KCode,
)

from .symbol_stream import rx_symbol_stream

__all__ = ["TrainingSetReceiver", "TRAINING_SET"]

#: A TS1/TS2 as the LTSSM sees it; ``kind`` 1 or 2, ``*_pad`` when the field was PAD.
TRAINING_SET = data.StructLayout({
    "kind": 2, "link": 8, "link_pad": 1, "lane": 8, "lane_pad": 1, "n_fts": 8, "rate": 8,
    "control": 8,
})


class TrainingSetReceiver(wiring.Component):
    """Decodes TS1/TS2 ordered sets; flags idle symbols and EIOS.

    A TS counts only if all 16 symbols are as §4.2.4.1 says (COM, PAD or data in the link and
    lane fields, data in 3..5, ten equal identifiers) with no symbol error; a COM inside one
    starts over.

    Attributes
    ----------
    sink: rx_symbol_stream(), input
        Received symbols, SKP ordered sets removed.
    ts: Signal(TRAINING_SET), output
        The last TS received (valid with ``ts_valid``).
    ts_valid: Signal(), output
        Strobe: a well-formed TS1/TS2 has just ended.
    idle: Signal(), output
        Strobe: a logical idle symbol (D0.0) outside an ordered set.
    not_idle: Signal(), output
        Strobe: any other symbol (so the LTSSM can count *consecutive* idle symbols).
    eios: Signal(), output
        Strobe: an electrical idle ordered set (COM IDL IDL IDL).
    inverted_ts: Signal(), output
        Strobe: a TS whose identifiers are all D21.5 or all D26.5 — a TS1/TS2 received on a
        lane with inverted polarity (its other fields are not looked at: they decode to
        anything, or to errors).
    """

    sink: In(rx_symbol_stream())
    ts: Out(TRAINING_SET)
    ts_valid: Out(1)
    idle: Out(1)
    not_idle: Out(1)
    eios: Out(1)
    inverted_ts: Out(1)

    def elaborate(self, platform):
        m = Module()
        symbol, error = self.sink.p.symbol, self.sink.p.error
        is_k, byte = symbol[8], symbol[:8]
        index = Signal(range(TS_LENGTH))  # 0: not inside an ordered set
        good = Signal()
        eios = Signal()
        inverted = Signal()  # the identifiers so far are inverted ones
        ident = Signal(8)
        fields = Signal(TRAINING_SET)
        m.d.comb += self.ts.eq(fields)

        with m.If(self.sink.valid):
            m.d.comb += self.not_idle.eq(1)
            with m.If(~error & (symbol == KCode.COM)):
                m.d.sync += [index.eq(1), good.eq(1), eios.eq(1), inverted.eq(1)]
            with m.Elif(index == 0):
                with m.If(~error & (symbol == LOGICAL_IDLE)):
                    m.d.comb += [self.idle.eq(1), self.not_idle.eq(0)]
            with m.Else():
                m.d.sync += index.eq(index + 1)
                ok = Signal()
                with m.Switch(index):
                    with m.Case(1):
                        m.d.comb += ok.eq(~is_k | (symbol == KCode.PAD))
                        m.d.sync += [fields.link.eq(byte), fields.link_pad.eq(is_k)]
                    with m.Case(2):
                        m.d.comb += ok.eq(~is_k | (symbol == KCode.PAD))
                        m.d.sync += [fields.lane.eq(byte), fields.lane_pad.eq(is_k)]
                    with m.Case(3):
                        m.d.comb += ok.eq(~is_k)
                        m.d.sync += fields.n_fts.eq(byte)
                    with m.Case(4):
                        m.d.comb += ok.eq(~is_k)
                        m.d.sync += fields.rate.eq(byte)
                    with m.Case(5):
                        m.d.comb += ok.eq(~is_k)
                        m.d.sync += fields.control.eq(byte)
                    with m.Case(6):
                        m.d.comb += ok.eq(~is_k & ((byte == TS1_ID) | (byte == TS2_ID)))
                        m.d.sync += [ident.eq(byte),  # (an inverted identifier too)
                                     fields.kind.eq((byte == TS2_ID) + 1)]
                    with m.Default():
                        m.d.comb += ok.eq(~is_k & (byte == ident))
                # EIOS: COM then three IDL; it ends the ordered set at symbol 3.
                with m.If((index <= 3) & (symbol == KCode.IDL) & ~error & eios):
                    with m.If(index == 3):
                        m.d.comb += self.eios.eq(1)
                        m.d.sync += index.eq(0)
                with m.Else():
                    m.d.sync += eios.eq(0)
                with m.If(error | ~ok):
                    m.d.sync += good.eq(0)
                inverted_id = (byte == TS1_ID_INVERTED) | (byte == TS2_ID_INVERTED)
                with m.If((index >= 6) & (is_k | error | ~inverted_id |
                                          ((index > 6) & (byte != ident)))):
                    m.d.sync += inverted.eq(0)
                with m.If(index == TS_LENGTH - 1):
                    m.d.sync += index.eq(0)
                    m.d.comb += [self.ts_valid.eq(good & ok & ~error),
                                 self.inverted_ts.eq(inverted & ~is_k & ~error & inverted_id &
                                                     (byte == ident))]
        return m
