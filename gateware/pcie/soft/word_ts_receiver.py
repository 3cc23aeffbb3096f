"""Training ordered sets, logical idle and EIOS recognised in aligned four-symbol words
(§4.2.4.1)."""

from amaranth import Cat, Module, Signal
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

from .symbol_stream import LANES, rx_word_stream

__all__ = ["WordTsReceiver", "TRAINING_SET"]

#: A TS1/TS2 as the LTSSM sees it; ``kind`` 1 or 2, ``*_pad`` when the field was PAD.
TRAINING_SET = data.StructLayout({
    "kind": 2, "link": 8, "link_pad": 1, "lane": 8, "lane_pad": 1, "n_fts": 8, "rate": 8,
    "control": 8,
})

_TS_WORDS = TS_LENGTH // LANES


class WordTsReceiver(wiring.Component):
    """Decodes TS1/TS2 ordered sets; flags idle words and EIOS.

    Behind :class:`~.receive_aligner.ReceiveAligner` an ordered set starts in lane 0, so a TS
    is four words: ``[COM, link, lane, N_FTS] [rate, control, ID, ID] [ID x4] [ID x4]`` and
    an EIOS one, ``[COM, IDL, IDL, IDL]``. A TS counts only if all 16 symbols are as
    §4.2.4.1 says (PAD or data in the link and lane fields, data in N_FTS, rate and control,
    ten equal identifiers) with no symbol error; a COM in lane 0 inside one starts over.

    Attributes
    ----------
    sink: rx_word_stream(), input
    ts: Signal(TRAINING_SET), output
        The last TS received (valid with ``ts_valid``).
    ts_valid: Signal(), output
        Strobe: a well-formed TS1/TS2 has just ended.
    idle: Signal(), output
        Strobe: a word of four logical idle symbols outside an ordered set (so the LTSSM
        counts idle symbols four at a time).
    not_idle: Signal(), output
        Strobe: any other word.
    eios: Signal(), output
        Strobe: an electrical idle ordered set (COM IDL IDL IDL).
    inverted_ts: Signal(), output
        Strobe: a TS whose identifiers are all D21.5 or all D26.5 — a TS1/TS2 received on a
        lane with inverted polarity (its other fields are not looked at: they decode to
        anything, or to errors).
    """

    sink: In(rx_word_stream())
    ts: Out(TRAINING_SET)
    ts_valid: Out(1)
    idle: Out(1)
    not_idle: Out(1)
    eios: Out(1)
    inverted_ts: Out(1)

    def elaborate(self, platform):
        m = Module()
        symbols = [self.sink.p[lane].symbol for lane in range(LANES)]
        errors = [self.sink.p[lane].error for lane in range(LANES)]
        is_k = [symbol[8] for symbol in symbols]
        data_bytes = [symbol[:8] for symbol in symbols]
        any_error = Cat(*errors).any()
        index = Signal(range(_TS_WORDS))  # words of the TS seen; 0: not inside one
        good = Signal()
        inverted = Signal()
        ident = Signal(8)
        fields = Signal(TRAINING_SET)
        m.d.comb += self.ts.eq(fields)

        def pad_or_data(lane):
            return ~is_k[lane] | (symbols[lane] == KCode.PAD)

        def ids_are(value, lanes):
            return Cat((data_bytes[lane] == value) & ~is_k[lane] & ~errors[lane]
                       for lane in lanes).all()

        def inverted_ids(lanes):
            return ids_are(TS1_ID_INVERTED, lanes) | ids_are(TS2_ID_INVERTED, lanes)

        com = (symbols[0] == KCode.COM) & ~errors[0]
        with m.If(self.sink.valid):
            m.d.comb += self.not_idle.eq(1)
            with m.If(com):
                is_eios = Cat((symbols[lane] == KCode.IDL) & ~errors[lane]
                              for lane in range(1, LANES)).all()
                with m.If(is_eios):
                    m.d.comb += self.eios.eq(1)
                    m.d.sync += index.eq(0)
                with m.Else():
                    m.d.sync += [
                        index.eq(1), inverted.eq(1),
                        good.eq(~any_error & pad_or_data(1) & pad_or_data(2) & ~is_k[3]),
                        fields.link.eq(data_bytes[1]), fields.link_pad.eq(is_k[1]),
                        fields.lane.eq(data_bytes[2]), fields.lane_pad.eq(is_k[2]),
                        fields.n_fts.eq(data_bytes[3]),
                    ]
            with m.Elif(index == 0):
                with m.If(~any_error & Cat(symbol == LOGICAL_IDLE for symbol in symbols).all()):
                    m.d.comb += [self.idle.eq(1), self.not_idle.eq(0)]
            with m.Elif(index == 1):
                first_id = data_bytes[2]
                known = (first_id == TS1_ID) | (first_id == TS2_ID)
                m.d.sync += [
                    index.eq(2), ident.eq(first_id),
                    fields.rate.eq(data_bytes[0]), fields.control.eq(data_bytes[1]),
                    fields.kind.eq((first_id == TS2_ID) + 1),
                    good.eq(good & ~any_error & ~Cat(*is_k).any() & known
                            & (data_bytes[3] == first_id)),
                    inverted.eq(inverted_ids((2, 3))),
                ]
            with m.Else():
                m.d.sync += [good.eq(good & ~any_error & ids_are(ident, range(LANES))),
                             inverted.eq(inverted & inverted_ids(range(LANES))
                                         & ids_are(ident, range(LANES))),
                             index.eq(index + 1)]
                with m.If(index == _TS_WORDS - 1):
                    m.d.sync += index.eq(0)
                    m.d.comb += [
                        self.ts_valid.eq(good & ~any_error & ids_are(ident, range(LANES))),
                        self.inverted_ts.eq(inverted & inverted_ids(range(LANES))
                                            & ids_are(ident, range(LANES))),
                    ]
        return m
