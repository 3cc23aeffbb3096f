"""TLP header fields as they sit in the 64-bit beats of a LitePCIe PHY stream (Migen).

Beat format (the 7-series 64-bit AXI-Stream convention every LitePCIe PHY uses, and
:class:`~busprobe.gateware.pcie.sim_phy.SimPCIEPHY`): the TLP's DWs in order, two per beat, the
first in ``dat[0:32]``, each the big-endian value of its four wire bytes; ``be`` has a bit per
byte (``0x0F`` on a last beat holding one DW). So header DW0 and DW1 are the first beat, DW2 is
``dat[0:32]`` of the second. ``first`` is not trusted (the 7-series 64-bit PHY never sets it on
RX): a packet starts on the beat after ``last``.

Field positions are those of the PCIe Base Specification 3.0, §2.2.1 (common header: Fmt, Type,
TD, EP, Length) and §2.2.9 (completion header: Status, Byte Count, Requester ID, Tag, Lower
Address).
"""

from __future__ import annotations

from migen import If, Module, Signal

__all__ = ["PacketTracker", "MRD32", "MRD64", "MWR32", "MWR64", "CPL", "CPLD", "CPL_TYPE",
           "CPL_LOCKED_TYPE", "FMT_4DW", "FMT_DATA", "FMT_PREFIX", "DW_BITS"]

# fmt[1:0] << 5 | type[4:0]: the first header byte without the prefix bit (spec table 2-3).
MRD32, MRD64, MWR32, MWR64 = 0x00, 0x20, 0x40, 0x60
CPL, CPLD = 0x0A, 0x4A
#: Type field (DW0[28:24]) of a completion, and of a completion for a locked read.
CPL_TYPE, CPL_LOCKED_TYPE = 0b01010, 0b01011
#: Fmt bits (DW0[31:29]): bit 0 = 4-DW header, bit 1 = with data, bit 2 = a TLP prefix.
FMT_4DW, FMT_DATA, FMT_PREFIX = 0b001, 0b010, 0b100
DW_BITS = 32


class PacketTracker(Module):
    """Where a beat of ``stream`` sits in its packet.

    Attributes
    ----------
    fire : Signal(), output
        A beat moves this cycle (valid & ready).
    start : Signal(), output
        ``fire`` on the first beat of a packet.
    second : Signal(), output
        ``fire`` on the second beat of a packet.
    """

    def __init__(self, stream):
        self.fire = Signal()
        self.start = Signal()
        self.second = Signal()
        in_packet = Signal()
        beat = Signal(2)
        self.comb += [
            self.fire.eq(stream.valid & stream.ready),
            self.start.eq(self.fire & ~in_packet),
            self.second.eq(self.fire & in_packet & (beat == 1)),
        ]
        self.sync += If(self.fire,
            in_packet.eq(~stream.last),
            If(stream.last, beat.eq(0)).Elif(beat != 3, beat.eq(beat + 1)),
        )
