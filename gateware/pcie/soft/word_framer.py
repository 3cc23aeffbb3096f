"""Data link layer framing, transmit side, four symbols a clock: TLPs from a DW stream and DLLPs
onto whole words (§3.5, §4.2.2); and the TLP streams' units the layers above move."""

from amaranth import Cat, Const, Module, Mux, Shape, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_dll import DLLP_CRC_POLY, LCRC_POLY
from busprobe.protocol.pcie_symbols import KCode

from .crc import WordCrc
from .symbol_stream import LANES, tx_word_stream

__all__ = ["WordFramer", "TLP_BYTE", "TLP_DW", "tlp_units", "unit_size"]

#: A TLP DW on its way to the framer, byte 0 (first on the wire) in bits 7:0; ``nullify``
#: (with ``last``) ends the TLP with EDB.
TLP_DW = data.StructLayout({"data": 32, "last": 1, "nullify": 1})
#: The same a byte at a time: what the transaction layer's blocks also take (``unit=``).
TLP_BYTE = data.StructLayout({"data": 8, "last": 1, "nullify": 1})


def unit_size(unit: data.StructLayout) -> int:
    """Bytes in a TLP unit (a layout with a ``data`` field): 1 or 4, anything else refused."""
    count = Shape.cast(unit.members["data"]).width // 8
    if count not in (1, 4):
        raise ValueError(f"a TLP unit is a byte or a DW, not {count} bytes")
    return count


def tlp_units(tlp_bytes, unit_bytes: int) -> list[Value]:
    """A TLP built byte by byte (byte 0 first) as units of ``unit_bytes``, byte 0 of each in
    its low bits. Each byte is made exactly 8 bits first, as assigning it to a byte does: a
    field such as ``tc << 4`` is 10 bits wide (Amaranth widens a shift by a constant as if by
    any 3-bit amount), a flag 1, and in a DW the bytes after either would slip."""
    def byte(value):
        value = Value.cast(value)[:8]
        return Cat(value, Const(0, 8 - len(value)))
    as_bytes = [byte(value) for value in tlp_bytes]
    return [Cat(*as_bytes[i:i + unit_bytes]) for i in range(0, len(as_bytes), unit_bytes)]


class WordFramer(wiring.Component):
    """Frames TLPs (STP, sequence, TLP, LCRC, END) and DLLPs (SDP, DLLP, CRC-16, END) into
    words of four symbols.

    Every packet starts in lane 0 and is a whole number of words (a TLP 4k + 8 symbols, a DLLP
    8), so none straddles a word edge: a TLP is ``[STP, seq, seq, b0] [b1 .. b4] ...
    [.., .., .., LCRC0] [LCRC1, LCRC2, LCRC3, END]``, a DLLP ``[SDP, d0, d1, d2] [d3, crc0,
    crc1, END]``. DW *i* of a TLP is lane 3 of word *i* and lanes 0-2 of word *i* + 1: the
    framer takes a DW a word and keeps its bytes 1-3 for the next. A DLLP waiting goes before
    a TLP waiting (ACKs and credits must not queue behind a long TLP; the choice is made again
    each clock until the packet's first word is taken), a packet once started is framed
    whole, a word a clock while ``source.ready``, and with nothing to send ``source.valid`` is
    low (the transmitter sends logical idle).

    Attributes
    ----------
    tlp: stream of TLP_DW, input
        The TLP, DW 0 first (taken with the packet's first word). Once its first DW is taken
        it must stay valid to its last: a TLP cannot pause on the wire.
    tlp_seq: Signal(12), input
        The sequence number of the TLP about to start (sampled with its first DW).
    dllp: stream of Signal(32), input
        A DLLP, byte 0 in bits 7:0 (as sent).
    source: tx_word_stream(), output
        The framed words; ``end`` on the word holding END/EDB.
    """

    tlp: In(stream.Signature(TLP_DW))
    tlp_seq: In(12)
    dllp: In(stream.Signature(32))
    source: Out(tx_word_stream())

    def elaborate(self, platform):
        m = Module()
        m.submodules.lcrc = lcrc = WordCrc(width=32, poly=LCRC_POLY, lanes=LANES)
        m.submodules.dllp_crc = dllp_crc = WordCrc(width=16, poly=DLLP_CRC_POLY, lanes=LANES)
        out, ready = self.source.p, self.source.ready
        dw = self.tlp.payload
        carry = Signal(24)  # bytes 1-3 of the last DW taken: lanes 0-2 of the next word
        dllp = Signal(32)
        nullify = Signal()
        absorbed = Signal()  # the LCRC already holds the last body bytes (see "LCRC0")
        invert = Mux(nullify, 0xFF, 0)

        def word(*symbols):
            m.d.comb += [self.source.valid.eq(1)]
            m.d.comb += [out.symbols[lane].eq(symbol) for lane, symbol in enumerate(symbols)]

        def take_dw(next_state_if_more: str):
            """This word's lane 3 is the DW's byte 0; the rest waits for the next word."""
            m.d.comb += self.tlp.ready.eq(ready)
            with m.If(ready):
                m.d.sync += carry.eq(dw.data[8:])
                with m.If(dw.last):
                    m.d.sync += [nullify.eq(dw.nullify), absorbed.eq(0)]
                    m.next = "LCRC0"
                with m.Else():
                    m.next = next_state_if_more

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.dllp.valid):
                    payload = self.dllp.payload
                    word(KCode.SDP, payload[:8], payload[8:16], payload[16:24])
                    m.d.comb += self.dllp.ready.eq(ready)
                    with m.If(ready):
                        m.d.sync += dllp.eq(payload)
                        m.next = "DLLP"
                with m.Elif(self.tlp.valid):
                    seq_hi, seq_lo = self.tlp_seq[8:], self.tlp_seq[:8]
                    word(KCode.STP, seq_hi, seq_lo, dw.data[:8])
                    # Restarting is harmless on a stalled clock: it restarts again on the next.
                    m.d.comb += [lcrc.restart.eq(1), lcrc.count.eq(3),
                                 lcrc.data.eq(Cat(seq_hi, Const(0, 4), seq_lo, dw.data[:8]))]
                    take_dw("DATA")

            with m.State("DATA"):
                word(carry[:8], carry[8:16], carry[16:], dw.data[:8])
                m.d.comb += [lcrc.data.eq(Cat(carry, dw.data[:8])),
                             lcrc.count.eq(Mux(ready, 4, 0))]
                take_dw("DATA")

            with m.State("LCRC0"):
                # The last DW's bytes 1-3, then LCRC byte 0, which needs the register after
                # them. WordCrc updates every clock, so it takes them on this state's first
                # clock only and, stalled, holds them (count 0): the word stays the same.
                m.d.comb += [lcrc.data.eq(carry), lcrc.count.eq(Mux(absorbed, 0, 3))]
                m.d.sync += absorbed.eq(1)
                crc0 = ~Mux(absorbed, lcrc.register, lcrc.next)[:8] ^ invert
                word(carry[:8], carry[8:16], carry[16:], crc0)
                with m.If(ready):
                    m.next = "LCRC1"

            with m.State("LCRC1"):  # complemented register, byte 0 first; inverted to nullify
                crc = ~lcrc.register
                word(crc[8:16] ^ invert, crc[16:24] ^ invert, crc[24:] ^ invert,
                     Mux(nullify, Const(KCode.EDB, 9), Const(KCode.END, 9)))
                m.d.comb += out.end.eq(1)
                with m.If(ready):
                    m.next = "IDLE"

            with m.State("DLLP"):
                # The CRC-16 of the four bytes at once, from the register holding them.
                m.d.comb += [dllp_crc.restart.eq(1), dllp_crc.count.eq(4),
                             dllp_crc.data.eq(dllp)]
                crc = ~dllp_crc.next
                word(dllp[24:], crc[:8], crc[8:], KCode.END)
                m.d.comb += out.end.eq(1)
                with m.If(ready):
                    m.next = "IDLE"
        return m
