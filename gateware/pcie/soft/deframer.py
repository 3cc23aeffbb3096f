"""Data link layer framing, receive side: TLPs and DLLPs off the symbol stream, checked."""

import enum

from amaranth import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_dll import DLLP_CRC_POLY, LCRC_POLY
from busprobe.protocol.pcie_symbols import K_FLAG, KCode

from .crc import ByteCrc, residue
from .symbol_stream import rx_symbol_stream

__all__ = ["DataLinkDeframer", "TlpStatus", "RX_TLP_BYTE", "RX_TLP_DW", "MIN_TLP_BODY"]

#: Sequence field + the smallest TLP header (3 DW) + LCRC.
MIN_TLP_BODY = 2 + 12 + 4
#: A received TLP byte; ``first`` on its byte 0.
RX_TLP_BYTE = data.StructLayout({"data": 8, "first": 1})
#: The same a DW at a time (the four-symbol link's), byte 0 in bits 7:0; ``first`` on DW 0.
RX_TLP_DW = data.StructLayout({"data": 32, "first": 1})


class TlpStatus(enum.IntEnum):
    """How a received TLP ended (``tlp_status`` with the ``tlp_end`` strobe)."""

    GOOD = 0
    BAD_LCRC = 1  # END with a wrong LCRC, or EDB without the inverted one: NAK it (§3.5.3.1)
    NULLIFIED = 2  # EDB with the inverted LCRC: discard silently
    MALFORMED = 3  # cut by a K-code or a symbol error, or a length framing cannot have


class DataLinkDeframer(wiring.Component):
    """Finds TLPs and DLLPs in the received symbols and checks their LCRC and CRC-16.

    TLP bytes come out as they arrive, four symbols late (so the LCRC never comes out as data),
    without the sequence field; whether they were good is known only at ``tlp_end``, so the
    receiver above stores them and keeps or drops them then. DLLPs come out only when good.

    Attributes
    ----------
    sink: rx_symbol_stream(), input
        Symbols from the SerDes with SKP ordered sets taken out.
    tlp: stream of RX_TLP_BYTE, output (never stalled)
    tlp_end: Signal(), output
        Strobe: the TLP whose bytes came out ended; ``tlp_status`` and ``tlp_seq`` say how.
    tlp_status: Signal(TlpStatus), output
    tlp_seq: Signal(12), output
    dllp: stream of Signal(32), output (never stalled)
        A good DLLP, byte 0 in bits 7:0.
    bad_dllp: Signal(), output
        Strobe: a DLLP with a wrong CRC-16, a wrong length or cut short.
    bad_symbol: Signal(), output
        Strobe: a symbol error, a K-code inside a packet other than END/EDB, or END/EDB
        outside one.

    Parameters
    ----------
    max_payload: int
        Largest payload accepted (bytes); a longer TLP is malformed.
    """

    sink: In(rx_symbol_stream())
    tlp: Out(stream.Signature(RX_TLP_BYTE, always_ready=True))
    tlp_end: Out(1)
    tlp_status: Out(TlpStatus)
    tlp_seq: Out(12)
    dllp: Out(stream.Signature(32, always_ready=True))
    bad_dllp: Out(1)
    bad_symbol: Out(1)

    def __init__(self, *, max_payload: int = 512):
        self._max_body = 2 + 16 + max_payload + 4 + 4  # seq, 4-DW header, payload, ECRC, LCRC
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.lcrc = lcrc = ByteCrc(width=32, poly=LCRC_POLY)
        m.submodules.dllp_crc = dllp_crc = ByteCrc(width=16, poly=DLLP_CRC_POLY)
        good_lcrc = residue(width=32, poly=LCRC_POLY, seed=0xFFFF_FFFF)
        nullified_lcrc = residue(width=32, poly=LCRC_POLY, seed=0xFFFF_FFFF, inverted=True)
        good_dllp_crc = residue(width=16, poly=DLLP_CRC_POLY, seed=0xFFFF)

        symbol, valid = self.sink.p.symbol, self.sink.valid
        is_data = ~symbol[K_FLAG.bit_length() - 1]
        byte = symbol[:8]
        in_tlp, in_dllp = Signal(), Signal()
        count = Signal(range(self._max_body + 2))  # body bytes so far, saturating
        delay = Signal(32)  # the last four body bytes, newest in bits 7:0
        seq = Signal(12)
        dllp = Signal(32)
        m.d.comb += [self.tlp_seq.eq(seq), self.dllp.payload.eq(dllp)]

        def start_if_start():
            with m.If(symbol == KCode.STP):
                m.d.sync += [in_tlp.eq(1), count.eq(0)]
                m.d.comb += lcrc.restart.eq(1)
            with m.Elif(symbol == KCode.SDP):
                m.d.sync += [in_dllp.eq(1), count.eq(0)]
                m.d.comb += dllp_crc.restart.eq(1)

        def cut_short():
            m.d.sync += [in_tlp.eq(0), in_dllp.eq(0)]
            with m.If(in_tlp):
                m.d.comb += [self.tlp_end.eq(1), self.tlp_status.eq(TlpStatus.MALFORMED)]
            with m.If(in_dllp):
                m.d.comb += self.bad_dllp.eq(1)

        with m.If(valid & self.sink.p.error):
            m.d.comb += self.bad_symbol.eq(1)
            cut_short()
        with m.Elif(valid & is_data & (in_tlp | in_dllp)):
            with m.If(count <= self._max_body):
                m.d.sync += count.eq(count + 1)
            with m.If(in_tlp):
                m.d.comb += [lcrc.byte.eq(byte), lcrc.enable.eq(1)]
                m.d.sync += delay.eq((delay << 8) | byte)
                with m.If(count == 0):
                    m.d.sync += seq[8:].eq(byte[:4])
                with m.If(count == 1):
                    m.d.sync += seq[:8].eq(byte)
                with m.If((count >= 6) & (count <= self._max_body)):
                    m.d.comb += [self.tlp.valid.eq(1), self.tlp.p.data.eq(delay[24:]),
                                 self.tlp.p.first.eq(count == 6)]
            with m.Else():
                m.d.comb += [dllp_crc.byte.eq(byte), dllp_crc.enable.eq(1)]
                with m.If(count < 4):
                    m.d.sync += dllp.word_select(count[:2], 8).eq(byte)
        with m.Elif(valid & (symbol == KCode.END) & in_tlp):
            m.d.sync += in_tlp.eq(0)
            m.d.comb += self.tlp_end.eq(1)
            with m.If((count < MIN_TLP_BODY) | (count > self._max_body)):
                m.d.comb += self.tlp_status.eq(TlpStatus.MALFORMED)
            with m.Elif(lcrc.register == good_lcrc):
                m.d.comb += self.tlp_status.eq(TlpStatus.GOOD)
            with m.Else():
                m.d.comb += self.tlp_status.eq(TlpStatus.BAD_LCRC)
        with m.Elif(valid & (symbol == KCode.EDB) & in_tlp):
            m.d.sync += in_tlp.eq(0)
            m.d.comb += self.tlp_end.eq(1)
            with m.If((count < MIN_TLP_BODY) | (count > self._max_body)):
                m.d.comb += self.tlp_status.eq(TlpStatus.MALFORMED)
            with m.Elif(lcrc.register == nullified_lcrc):
                m.d.comb += self.tlp_status.eq(TlpStatus.NULLIFIED)
            with m.Else():
                m.d.comb += self.tlp_status.eq(TlpStatus.BAD_LCRC)
        with m.Elif(valid & (symbol == KCode.END) & in_dllp):
            m.d.sync += in_dllp.eq(0)
            with m.If((count == 6) & (dllp_crc.register == good_dllp_crc)):
                m.d.comb += self.dllp.valid.eq(1)
            with m.Else():
                m.d.comb += self.bad_dllp.eq(1)
        with m.Elif(valid & ~is_data & (in_tlp | in_dllp)):  # any other K-code cuts the packet
            m.d.comb += self.bad_symbol.eq(1)
            cut_short()
            start_if_start()
        with m.Elif(valid & ((symbol == KCode.END) | (symbol == KCode.EDB))):
            m.d.comb += self.bad_symbol.eq(1)
        with m.Elif(valid):
            start_if_start()
        return m
