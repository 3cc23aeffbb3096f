"""Data link layer framing, transmit side: TLPs and DLLPs onto the symbol stream (§3.5, §4.2.2)."""

from amaranth import Cat, Const, Module, Mux, Shape, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_dll import DLLP_CRC_POLY, LCRC_POLY
from busprobe.protocol.pcie_symbols import KCode

from .crc import ByteCrc
from .symbol_stream import tx_symbol_stream

__all__ = ["DataLinkFramer", "TLP_BYTE", "TLP_DW", "tlp_units", "unit_size"]

#: A TLP byte from the replay buffer; ``nullify`` (with ``last``) ends the TLP with EDB.
TLP_BYTE = data.StructLayout({"data": 8, "last": 1, "nullify": 1})
#: The same a DW at a time, byte 0 (first on the wire) in bits 7:0: what the four-symbol link
#: moves TLPs in (DESIGN §3.10).
TLP_DW = data.StructLayout({"data": 32, "last": 1, "nullify": 1})


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


class DataLinkFramer(wiring.Component):
    """Frames TLPs (STP, sequence, TLP, LCRC, END) and DLLPs (SDP, DLLP, CRC-16, END).

    A DLLP waiting goes before a TLP waiting (ACKs and credits must not queue behind a long
    TLP); either is framed whole, one symbol a clock while ``source.ready``. With nothing to
    send ``source.valid`` is low and the transmitter sends logical idle.

    Attributes
    ----------
    tlp: stream of TLP_BYTE, input
        The TLP, byte 0 first. Once its first byte is taken it must stay valid to its last:
        a TLP cannot pause on the wire (a replay buffer read from RAM never does).
    tlp_seq: Signal(12), input
        The sequence number of the TLP about to start (sampled with its first byte).
    dllp: stream of Signal(32), input
        A DLLP, byte 0 in bits 7:0 (as sent).
    source: tx_symbol_stream(), output
        The framed symbols; ``end`` on END/EDB.
    """

    tlp: In(stream.Signature(TLP_BYTE))
    tlp_seq: In(12)
    dllp: In(stream.Signature(32))
    source: Out(tx_symbol_stream())

    def elaborate(self, platform):
        m = Module()
        m.submodules.lcrc = lcrc = ByteCrc(width=32, poly=LCRC_POLY)
        m.submodules.dllp_crc = dllp_crc = ByteCrc(width=16, poly=DLLP_CRC_POLY)
        out, ready = self.source.p, self.source.ready
        index = Signal(3)
        seq = Signal(12)
        dllp = Signal(32)
        nullify = Signal()

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.dllp.valid):
                    m.d.comb += [self.source.valid.eq(1), out.symbol.eq(KCode.SDP),
                                 self.dllp.ready.eq(ready), dllp_crc.restart.eq(1)]
                    with m.If(ready):
                        m.d.sync += [dllp.eq(self.dllp.payload), index.eq(0)]
                        m.next = "DLLP"
                with m.Elif(self.tlp.valid):
                    m.d.comb += [self.source.valid.eq(1), out.symbol.eq(KCode.STP),
                                 lcrc.restart.eq(1)]
                    with m.If(ready):
                        m.d.sync += [seq.eq(self.tlp_seq), index.eq(0)]
                        m.next = "SEQUENCE"

            with m.State("DLLP"):  # 4 DLLP bytes, 2 CRC bytes, END
                m.d.comb += self.source.valid.eq(1)
                byte = dllp.word_select(index[:2], 8)
                crc = dllp_crc.crc.word_select(index[0], 8)
                with m.If(index < 4):
                    m.d.comb += [out.symbol.eq(byte), dllp_crc.byte.eq(byte),
                                 dllp_crc.enable.eq(ready)]
                with m.Elif(index < 6):
                    m.d.comb += out.symbol.eq(crc)
                with m.Else():
                    m.d.comb += [out.symbol.eq(KCode.END), out.end.eq(1)]
                with m.If(ready):
                    m.d.sync += index.eq(index + 1)
                    with m.If(index == 6):
                        m.next = "IDLE"

            with m.State("SEQUENCE"):  # 4 reserved bits + seq[11:8], then seq[7:0]
                byte = Mux(index[0], seq[:8], seq[8:])
                m.d.comb += [self.source.valid.eq(1), out.symbol.eq(byte), lcrc.byte.eq(byte),
                             lcrc.enable.eq(ready)]
                with m.If(ready):
                    m.d.sync += index.eq(index + 1)
                    with m.If(index == 1):
                        m.next = "DATA"

            with m.State("DATA"):
                byte = self.tlp.payload.data
                m.d.comb += [self.source.valid.eq(1), out.symbol.eq(byte), lcrc.byte.eq(byte),
                             lcrc.enable.eq(ready & self.tlp.valid), self.tlp.ready.eq(ready)]
                with m.If(ready & self.tlp.valid & self.tlp.payload.last):
                    m.d.sync += [nullify.eq(self.tlp.payload.nullify), index.eq(0)]
                    m.next = "LCRC"

            with m.State("LCRC"):  # complemented register, byte 0 first; inverted to nullify
                crc = lcrc.crc.word_select(index[:2], 8) ^ Mux(nullify, 0xFF, 0)
                m.d.comb += [self.source.valid.eq(1), out.symbol.eq(crc)]
                with m.If(ready):
                    m.d.sync += index.eq(index + 1)
                    with m.If(index == 3):
                        m.next = "END"

            with m.State("END"):
                m.d.comb += [self.source.valid.eq(1), out.end.eq(1),
                             out.symbol.eq(Mux(nullify, Const(KCode.EDB, 9),
                                               Const(KCode.END, 9)))]
                with m.If(ready):
                    m.next = "IDLE"
        return m
