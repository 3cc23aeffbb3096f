"""Data link layer framing, receive side, four symbols a clock: TLPs as DWs and DLLPs off
aligned words, checked."""

import enum

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_dll import DLLP_CRC_POLY, LCRC_POLY
from busprobe.protocol.pcie_symbols import KCode

from .crc import WordCrc, residue
from .symbol_stream import LANES, rx_word_stream

__all__ = ["WordDeframer", "TlpStatus", "RX_TLP_DW", "RX_TLP_BYTE", "MIN_TLP_WORDS"]

#: A received TLP DW, byte 0 (first on the wire) in bits 7:0; ``first`` on DW 0.
RX_TLP_DW = data.StructLayout({"data": 32, "first": 1})
#: The same a byte at a time: what the transaction layer's blocks also take (``unit=``).
RX_TLP_BYTE = data.StructLayout({"data": 8, "first": 1})


class TlpStatus(enum.IntEnum):
    """How a received TLP ended (``tlp_status`` with the ``tlp_end`` strobe)."""

    GOOD = 0
    BAD_LCRC = 1  # END with a wrong LCRC, or EDB without the inverted one: NAK it (§3.5.3.1)
    NULLIFIED = 2  # EDB with the inverted LCRC: discard silently
    MALFORMED = 3  # cut by a K-code or a symbol error, or a length framing cannot have


#: STP + sequence + a 3 DW header + LCRC + END, in words.
MIN_TLP_WORDS = (1 + 2 + 12 + 4 + 1) // LANES


class WordDeframer(wiring.Component):
    """Finds TLPs and DLLPs in aligned words and checks their LCRC and CRC-16.

    Behind :class:`~.receive_aligner.ReceiveAligner` every packet starts in lane 0 and, being
    a whole number of words (a TLP 4k + 8 symbols, a DLLP 8), ends in lane 3: a TLP is
    ``[STP, seq, seq, b0] [b1 .. b4] ... [.., .., .., LCRC0] [LCRC1, LCRC2, LCRC3, END]``, a
    DLLP ``[SDP, d0, d1, d2] [d3, crc0, crc1, END]``. So a TLP's DW *i* is lane 3 of one word
    and lanes 0-2 of the next, a fixed rewiring. Each DW comes out a word after it is
    complete (until END arrives nobody can tell the LCRC from data); ``tlp_end`` comes two
    clocks after the TLP's last DW (its LCRC judged from the CRC's register), with how it ended
    and its sequence number, before the next TLP's first DW. An END or EDB off lane 3, a K-code or a
    symbol error inside a packet, or a TLP shorter than a 3 DW header or longer than
    ``max_payload`` allows, makes it MALFORMED; DLLPs come out only when good.

    Attributes
    ----------
    sink: rx_word_stream(), input (never stalled)
    tlp: stream of RX_TLP_DW, output (never stalled)
    tlp_end: Signal(), output
        Strobe: the TLP whose DWs came out ended; ``tlp_status`` and ``tlp_seq`` say how
        (whether it was good is known only then, so the receiver above stores its DWs and
        keeps or drops them).
    tlp_status: Signal(TlpStatus), output
    tlp_seq: Signal(12), output
    dllp: stream of Signal(32), output (never stalled)
        A good DLLP, byte 0 in bits 7:0, from registers the clock after its last word.
    bad_dllp: Signal(), output
        Strobe: a DLLP with a wrong CRC-16, a wrong length or cut short.
    bad_symbol: Signal(), output
        Strobe: a symbol error, a K-code inside a packet other than END/EDB, or END/EDB
        outside one.

    Parameters
    ----------
    max_payload: int
        Largest payload accepted (bytes).
    """

    sink: In(rx_word_stream())
    tlp: Out(stream.Signature(RX_TLP_DW, always_ready=True))
    tlp_end: Out(1)
    tlp_status: Out(TlpStatus)
    tlp_seq: Out(12)
    dllp: Out(stream.Signature(32, always_ready=True))
    bad_dllp: Out(1)
    bad_symbol: Out(1)

    def __init__(self, *, max_payload: int = 512):
        # Words of the longest TLP: STP, seq, 4 DW header, payload, ECRC, LCRC, END.
        self._max_words = (1 + 2 + 16 + max_payload + 4 + 4 + 1) // LANES
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.lcrc = lcrc = WordCrc(width=32, poly=LCRC_POLY, lanes=LANES)
        m.submodules.dllp_crc = dllp_crc = WordCrc(width=16, poly=DLLP_CRC_POLY, lanes=LANES)
        good_lcrc = residue(width=32, poly=LCRC_POLY, seed=0xFFFF_FFFF)
        nullified_lcrc = residue(width=32, poly=LCRC_POLY, seed=0xFFFF_FFFF, inverted=True)
        good_dllp_crc = residue(width=16, poly=DLLP_CRC_POLY, seed=0xFFFF)

        word, valid = self.sink.p, self.sink.valid
        symbols = [word[lane].symbol for lane in range(LANES)]
        data_bytes = [symbol[:8] for symbol in symbols]
        is_k = [symbol[8] for symbol in symbols]
        error = Cat(word[lane].error for lane in range(LANES)).any()
        all_data = ~Cat(*is_k).any()
        tail_data = ~Cat(*is_k[:3]).any()  # lanes 0-2: the END word's LCRC bytes
        lane0_is = {kcode: (symbols[0] == kcode) & ~error
                    for kcode in (KCode.STP, KCode.SDP)}
        ends_with = {kcode: tail_data & (symbols[3] == kcode) & ~error
                     for kcode in (KCode.END, KCode.EDB)}

        in_tlp, in_dllp = Signal(), Signal()
        words = Signal(range(self._max_words + 2))  # words of the packet so far, saturating
        carry = Signal(8)  # lane 3 of the last word: byte 0 of the next DW
        pending = Signal(32)  # the last complete DW, out when the next word shows it is data
        pending_first, pending_valid = Signal(), Signal()
        seq = Signal(12)
        dllp = Signal(32)
        end, status = Signal(), Signal(TlpStatus)
        checking, checking_edb, checking_length = Signal(), Signal(), Signal()
        m.d.sync += checking.eq(0)
        checking_seq = Signal(12)
        m.d.sync += [self.tlp_end.eq(end), self.tlp_status.eq(status),
                     self.tlp_seq.eq(Mux(checking, checking_seq, seq))]
        # A good DLLP leaves from registers, a clock after its last word: its CRC check is
        # not then on one path with what the replay buffer and the credits do with it.
        m.d.sync += self.dllp.valid.eq(0)
        # Lanes 1-3 into the CRCs in a packet's first word, all four in its middle words, 0-2
        # in its last.
        m.d.comb += [lcrc.data.eq(Cat(*data_bytes)), dllp_crc.data.eq(Cat(*data_bytes))]

        def emit_pending():
            m.d.comb += [self.tlp.valid.eq(pending_valid), self.tlp.p.data.eq(pending),
                         self.tlp.p.first.eq(pending_first)]

        def malformed():
            m.d.sync += [in_tlp.eq(0), in_dllp.eq(0), pending_valid.eq(0)]
            with m.If(in_tlp):
                m.d.comb += [end.eq(1), status.eq(TlpStatus.MALFORMED)]
            with m.If(in_dllp):
                m.d.comb += self.bad_dllp.eq(1)

        def start():
            with m.If(lane0_is[KCode.STP] & ~Cat(*is_k[1:]).any()):
                m.d.sync += [in_tlp.eq(1), words.eq(1), seq.eq(Cat(data_bytes[2],
                                                                   data_bytes[1][:4])),
                             carry.eq(data_bytes[3]), pending_valid.eq(0)]
                m.d.comb += [lcrc.restart.eq(1), lcrc.data.eq(Cat(*data_bytes[1:])),
                             lcrc.count.eq(3)]
            with m.Elif(lane0_is[KCode.SDP] & ~Cat(*is_k[1:]).any()):
                m.d.sync += [in_dllp.eq(1), dllp[:24].eq(Cat(*data_bytes[1:]))]
                m.d.comb += [dllp_crc.restart.eq(1), dllp_crc.data.eq(Cat(*data_bytes[1:])),
                             dllp_crc.count.eq(3)]
            with m.Elif(Cat(symbol == kcode for symbol in symbols
                            for kcode in (KCode.END, KCode.EDB)).any() | error):
                m.d.comb += self.bad_symbol.eq(1)

        with m.If(valid & in_tlp):
            with m.If(error | (~all_data & ~ends_with[KCode.END] & ~ends_with[KCode.EDB])):
                m.d.comb += self.bad_symbol.eq(1)
                malformed()
                start()
            with m.Elif(all_data):
                emit_pending()
                with m.If(words <= self._max_words):
                    m.d.sync += words.eq(words + 1)
                m.d.comb += lcrc.count.eq(LANES)
                m.d.sync += [pending.eq(Cat(carry, *data_bytes[:3])), carry.eq(data_bytes[3]),
                             pending_valid.eq(1), pending_first.eq(words == 1)]
            with m.Else():  # END or EDB in lane 3: the pending DW is the TLP's last
                m.d.comb += lcrc.count.eq(3)
                m.d.sync += [in_tlp.eq(0), pending_valid.eq(0), checking.eq(1),
                             checking_seq.eq(seq),
                             checking_edb.eq(ends_with[KCode.EDB]),
                             checking_length.eq((words + 1 < MIN_TLP_WORDS)
                                                | (words + 1 > self._max_words))]
                emit_pending()

        with m.Elif(valid & in_dllp):
            m.d.sync += in_dllp.eq(0)
            m.d.comb += dllp_crc.count.eq(3)
            # Three separate conditions, not one If/Elif chain: start() may restart the CRC,
            # and a chain's branches all hang on every condition in it, so one reading the
            # CRC's output would close a combinational loop through start()'s assignments.
            cut = error | ~tail_data
            good = ~cut & ends_with[KCode.END] & (dllp_crc.next == good_dllp_crc)
            with m.If(cut):
                m.d.comb += [self.bad_dllp.eq(1), self.bad_symbol.eq(1)]
                start()
            with m.If(good):
                m.d.sync += [self.dllp.valid.eq(1),
                             self.dllp.payload.eq(Cat(dllp[:24], data_bytes[0]))]
            with m.If(~cut & ~good):
                m.d.comb += self.bad_dllp.eq(1)
        with m.Elif(valid):
            start()

        # The LCRC is judged a clock after the END word, from the CRC's register: the check is
        # then not on one path with the word's decode and the CRC's byte-count select.
        with m.If(checking):
            m.d.comb += end.eq(1)
            with m.If(checking_length):
                m.d.comb += status.eq(TlpStatus.MALFORMED)
            with m.Elif(~checking_edb & (lcrc.register == good_lcrc)):
                m.d.comb += status.eq(TlpStatus.GOOD)
            with m.Elif(checking_edb & (lcrc.register == nullified_lcrc)):
                m.d.comb += status.eq(TlpStatus.NULLIFIED)
            with m.Else():
                m.d.comb += status.eq(TlpStatus.BAD_LCRC)
        return m
