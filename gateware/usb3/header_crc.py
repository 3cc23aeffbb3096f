"""LUNA's link-layer packet transmitter with its header CRC-16 fed from the header's words."""

from amaranth import Array, Signal
from luna.gateware.usb.usb3.link.header import HeaderPacket
from luna.gateware.usb.usb3.link.transmitter import PacketTransmitter, RawPacketTransmitter

__all__ = ["WordCrcPacketTransmitter"]


class _WordCrcRawTransmitter(RawPacketTransmitter):
    """LUNA's ``RawPacketTransmitter`` whose CRC-16 reads the latched header's words.

    Timing (ECPIX-5, issue 44 item 7): LUNA's transmitter (luna-usb 0.2.3,
    ``usb3/link/transmitter.py``) feeds its header CRC-16 with its output word, ``source.data``,
    a multiplexer over every state's word (the data payload's last word with CRC-32 bytes
    spliced in by the pipelined byte-valid mask among them); through it and the CRC's XOR
    network was the ``usb3-storage`` build's ``ss`` critical path (115.09 MHz, default seed).
    The CRC advances only in SEND_DW0..2, where that word is the latched header's DW0..2; here
    it reads those words from a copy of the header latched as LUNA latches it (``generate`` in
    IDLE, where the CRC is cleared), chosen by a count of the words it took. The CRC, and so
    every header packet, is the same.
    """

    def elaborate(self, platform):
        m = super().elaborate(platform)
        crc16 = m.submodules.crc16  # not elaborated yet: its data input is swapped
        header, taken = HeaderPacket(), Signal(2)
        with m.If(crc16.clear):  # IDLE
            m.d.ss += taken.eq(0)
            with m.If(self.generate):
                m.d.ss += header.eq(self.header)
        with m.Elif(crc16.advance_crc):
            m.d.ss += taken.eq(taken + 1)
        crc16.data_input = Signal(32, name="crc16_header_word")
        words = Array([header.dw0, header.dw1, header.dw2, header.dw2])
        m.d.comb += crc16.data_input.eq(words[taken])
        return m


class WordCrcPacketTransmitter(PacketTransmitter):
    """LUNA's ``PacketTransmitter`` with :class:`_WordCrcRawTransmitter` in place of its raw
    transmitter. :meth:`adopt` turns the link layer's transmitter (not elaborated yet) into one."""

    @classmethod
    def adopt(cls, transmitter):
        transmitter.__class__ = cls
        return transmitter

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.submodules.packet_tx.__class__ = _WordCrcRawTransmitter
        return m
