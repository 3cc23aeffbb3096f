"""The soft endpoint's MSI: a request from the application sent as the memory write MSI is
(PCI Local Bus 3.0 §6.8; PCIe Base 3.0 §2.2.7)."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import pcie_config as cfg

from .word_framer import TLP_BYTE, tlp_units, unit_size

__all__ = ["MsiRequester"]

_MWR_3DW = cfg.FMT_WITH_DATA | 0x00  # MWr, 3 DW header
_MWR_4DW = cfg.FMT_WITH_DATA | cfg.FMT_4DW


class MsiRequester(wiring.Component):
    """Turns an MSI request into one MWr TLP: a 1 DW write of the Message Data (``msi_data``
    with the vector in its low bits, little-endian in the DW as memory holds it) to the
    Message Address, 3 DW header below 4 GiB, 4 DW above; Requester ID the endpoint's, tag 0,
    First DW BE ``0xF``.

    A request while MSI or Bus Master is off is taken and dropped (the function may not send
    it; counted in ``dropped``): the application never waits on a disabled interrupt.

    Attributes
    ----------
    request: stream of 8 bits (the vector), input
        LitePCIe's ``msi`` stream.
    msi_enable, bus_master: Signal(), input; msi_address: Signal(64), input;
    msi_data: Signal(16), input; requester_id: Signal(16), input
        From the configuration space.
    tlp: stream of ``unit``, output
        The MWr, valid from first unit to last.
    sent, dropped: Signal(16), output
        Counters (wrap).

    Parameters
    ----------
    unit: StructLayout
        What the TLP moves in: :data:`~.word_framer.TLP_BYTE` (the default) or
        :data:`~.word_framer.TLP_DW` (the four-symbol link's).
    """

    def __init__(self, *, unit: data.StructLayout = TLP_BYTE):
        self._unit_bytes = unit_size(unit)
        super().__init__({
            "request": In(stream.Signature(8)),
            "msi_enable": In(1),
            "bus_master": In(1),
            "msi_address": In(64),
            "msi_data": In(16),
            "requester_id": In(16),
            "tlp": Out(stream.Signature(unit)),
            "sent": Out(16),
            "dropped": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        busy = Signal()
        vector = Signal(8)
        address = Signal(64)
        data = Signal(16)
        four_dw = address[32:].any()
        with m.If(~busy):
            m.d.comb += self.request.ready.eq(1)
            with m.If(self.request.valid):
                with m.If(self.msi_enable & self.bus_master):
                    m.d.sync += [busy.eq(1), vector.eq(self.request.payload),
                                 address.eq(self.msi_address), data.eq(self.msi_data)]
                with m.Else():
                    m.d.sync += self.dropped.eq(self.dropped + 1)

        def be_bytes(value):
            return [value[24:32], value[16:24], value[8:16], value[:8]]
        # The Message Data's vector bits are the low ones (multiple messages: §6.8.1.6).
        payload = (data | vector)[:16]
        header = [
            Mux(four_dw, _MWR_4DW, _MWR_3DW), Const(0, 8), Const(0, 8), Const(1, 8),
            self.requester_id[8:], self.requester_id[:8], Const(0, 8), Const(0x0F, 8),
        ]
        upper = be_bytes(address[32:])
        lower = be_bytes(Cat(Const(0, 2), address[2:32]))
        message = [payload[:8], payload[8:], Const(0, 8), Const(0, 8)]
        # As units: the 3 DW header's TLP is the 4 DW one's without its upper address DW,
        # so the two differ from that DW on, at either unit.
        out_3dw = tlp_units(header + lower + message, self._unit_bytes)
        out_4dw = tlp_units(header + upper + lower + message, self._unit_bytes)
        index = Signal(range(len(out_4dw)))
        last = index == Mux(four_dw, len(out_4dw) - 1, len(out_3dw) - 1)
        with m.Switch(index):
            for i in range(len(out_4dw)):
                with m.Case(i):
                    value = out_4dw[i] if i >= len(out_3dw) else Mux(four_dw, out_4dw[i],
                                                                      out_3dw[i])
                    m.d.comb += self.tlp.payload.data.eq(value)
        m.d.comb += [self.tlp.valid.eq(busy), self.tlp.payload.last.eq(last)]
        with m.If(self.tlp.valid & self.tlp.ready):
            m.d.sync += index.eq(Mux(last, 0, index + 1))
            with m.If(last):
                m.d.sync += [busy.eq(0), self.sent.eq(self.sent + 1)]
        return m
