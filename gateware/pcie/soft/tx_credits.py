"""Flow control after DL_Active, transmit side: a TLP goes out only within the link partner's
credits (PCIe Base 3.0 §2.6.1.2, the gating function as remembered)."""

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import pcie_config as cfg
from busprobe.protocol.pcie_config import TlpType5
from busprobe.protocol.pcie_dll import DllpType

from .fc_init import CREDITS
from .word_framer import TLP_BYTE, unit_size

__all__ = ["TxCredits"]

_UPDATE_FC = (DllpType.UPDATE_FC_P, DllpType.UPDATE_FC_NP, DllpType.UPDATE_FC_CPL)
_HEADER_FIELD, _DATA_FIELD = 8, 12  # HdrFC and DataFC widths: the counters wrap at these


class TxCredits(wiring.Component):
    """Holds each TLP until the partner's receiver has room for it, then passes it whole.

    The first header dword (Fmt/Type and Length) says the TLP's kind (posted: MWr and messages;
    completion: Cpl*; non-posted: the rest) and its credits (1 header credit, Length / 4
    rounded up data credits when it carries data). It goes when CREDIT_LIMIT -
    (CREDITS_CONSUMED + needed), modulo the field, is at most half the field (§2.6.1.2), or
    when the partner advertised that kind infinite (0 at InitFC, header and data apart).
    CREDIT_LIMIT starts at InitFC's value and follows the partner's UpdateFCs; consumed
    counts start at 0 at every DL_Active. A TLP held for credits holds those behind it: one
    queue, in order, which is what the spec's ordering rules allow at worst (a posted TLP
    blocked may not be passed by a completion here; the endpoint never needs it to be).

    Attributes
    ----------
    sink: stream of ``unit``, input
        TLPs, valid from first unit to last once started (as the framer needs).
    source: stream of ``unit``, output
        The same TLPs, each started only with credits for it; valid from first unit to last.
    dl_active: Signal(), input
    partner_posted, partner_non_posted, partner_completion: Signal(CREDITS), input
        The credits of the partner's InitFC (``FlowControlInit``).
    rx_dllp: stream of Signal(32), input (never stalled)
        Good DLLPs received, byte 0 in bits 7:0.
    blocked: Signal(16), output
        Clocks a TLP waited for credits (wraps).

    Parameters
    ----------
    unit: StructLayout
        What a TLP moves in: :data:`~.word_framer.TLP_BYTE` (the default) or a DW layout with the
        same fields (the four-symbol link's): the first header dword is four units or one.
    """

    def __init__(self, *, unit: data.StructLayout = TLP_BYTE):
        unit_bytes = unit_size(unit)
        self._units = 4 // unit_bytes  # units in the first header dword
        super().__init__({
            "sink": In(stream.Signature(unit)),
            "source": Out(stream.Signature(unit)),
            "dl_active": In(1),
            "partner_posted": In(CREDITS),
            "partner_non_posted": In(CREDITS),
            "partner_completion": In(CREDITS),
            "rx_dllp": In(stream.Signature(32, always_ready=True)),
            "blocked": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        initial = (self.partner_posted, self.partner_non_posted, self.partner_completion)
        limits = [Signal(CREDITS, name=f"limit_{i}") for i in range(3)]
        consumed = [Signal(CREDITS, name=f"consumed_{i}") for i in range(3)]

        # CREDIT_LIMIT: InitFC's until DL_Active, then each UpdateFC of its type.
        word = self.rx_dllp.payload
        kind_byte = word[:8]
        for i in range(3):
            with m.If(~self.dl_active):
                m.d.sync += [limits[i].eq(initial[i]), consumed[i].eq(0)]
            with m.Elif(self.rx_dllp.valid & ((kind_byte & 0xF8) == _UPDATE_FC[i])):
                m.d.sync += [limits[i].header.eq(Cat(word[22:24], word[8:14])),
                             limits[i].data.eq(Cat(word[24:32], word[16:20]))]

        # The header's first dword, held while the TLP waits (byte 0 in bits 7:0 either way).
        units = self._units
        held = Array(Signal(32 // units, name=f"held_{i}") for i in range(units))
        count = Signal(range(units + 1))  # header units held
        first_dw = Cat(*held)
        kind = first_dw[:8]
        tlp_type = kind & cfg.TYPE_MASK
        with_data = (kind & cfg.FMT_WITH_DATA) != 0
        is_completion = (tlp_type == TlpType5.CPL) | (tlp_type == TlpType5.CPL_LOCKED)
        posted = (((tlp_type == TlpType5.MEM) & with_data)
                  | ((tlp_type & cfg.MSG_TYPE_MASK) == cfg.MSG_TYPE))
        which = Mux(posted, 0, Mux(is_completion, 2, 1))
        length = Cat(first_dw[24:32], first_dw[16:18])  # DW; 0 means 1024
        dwords = Mux(length == 0, 1024, length)
        data_needed = Mux(with_data, (dwords + 3) >> 2, 0)

        fits = Signal()
        for i in range(3):
            header_left = (limits[i].header - consumed[i].header - 1)[:_HEADER_FIELD]
            data_left = (limits[i].data - consumed[i].data - data_needed)[:_DATA_FIELD]
            header_ok = (initial[i].header == 0) | (header_left <= 1 << (_HEADER_FIELD - 1))
            data_ok = (initial[i].data == 0) | (data_left <= 1 << (_DATA_FIELD - 1))
            with m.If(which == i):
                m.d.comb += fits.eq(header_ok & data_ok)

        # With DWs (the four-symbol link) judged from registers a clock after the
        # header is held, so the credit compares' carry chains are not on one path with the
        # send: the counters do not move while a TLP waits, but for an UpdateFC, which only
        # ever adds room. With bytes at once: a clock there is a symbol on the wire, and one
        # a TLP cost 0.6 % of a 64 KiB write (the soft PHY's sweep test).
        if units == 1:
            fits_now, held_before = Signal(), Signal()
            m.d.sync += [fits_now.eq(fits), held_before.eq(count == units)]
        else:
            fits_now, held_before = fits, Const(1)
        sending = Signal()
        sent = Signal(range(units + 1))  # held units sent
        with m.If(~sending):
            # Take the first dword, then wait for credits. The first held unit goes out in
            # the clock the TLP is judged to fit (from registers), and the credits are
            # consumed when it is taken: with DWs the framer's two LCRC words are all the
            # time there is between one TLP's last DW and the next one's first, and a clock
            # more here is a word of idle on the wire between every two TLPs.
            m.d.comb += self.sink.ready.eq((count < units) & self.dl_active)
            with m.If(self.sink.valid & self.sink.ready):
                m.d.sync += [held[count].eq(self.sink.payload.data), count.eq(count + 1)]
            with m.If((count == units) & held_before & self.dl_active):
                with m.If(fits_now):
                    m.d.comb += [self.source.valid.eq(1), self.source.payload.data.eq(held[0])]
                    with m.If(self.source.ready):
                        m.d.sync += [sending.eq(1), sent.eq(1)]
                        for i in range(3):
                            with m.If(which == i):
                                m.d.sync += [
                                    consumed[i].header.eq(consumed[i].header + 1),
                                    consumed[i].data.eq(consumed[i].data + data_needed)]
                with m.Else():
                    m.d.sync += self.blocked.eq(self.blocked + 1)
        with m.Else():
            # The held units, then the rest straight through; a TLP is at least 3 DW, so
            # the last unit is never a held one.
            with m.If(sent < units):
                m.d.comb += [self.source.valid.eq(1), self.source.payload.data.eq(held[sent])]
                with m.If(self.source.ready):
                    m.d.sync += sent.eq(sent + 1)
            with m.Else():
                m.d.comb += [self.source.valid.eq(self.sink.valid),
                             self.source.payload.eq(self.sink.payload),
                             self.sink.ready.eq(self.source.ready)]
                with m.If(self.sink.valid & self.sink.ready & self.sink.payload.last):
                    m.d.sync += [sending.eq(0), count.eq(0)]
        return m
