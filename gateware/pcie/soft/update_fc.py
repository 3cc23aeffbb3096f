"""Flow control after DL_Active, receive side: the credits of consumed TLPs given back with
UpdateFC DLLPs (PCIe Base 3.0 §2.6.1)."""

from amaranth import Cat, Const, Module, Mux, ResetInserter, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_dll import DllpType

from .fc_init import ADVERTISED
from .word_deframer import RX_TLP_BYTE
from .word_framer import unit_size

__all__ = ["UpdateFc", "DEFAULT_UPDATE_INTERVAL"]

#: Symbol times between unprompted UpdateFCs: 30 µs at 2.5 GT/s (§2.6.1.2's guideline for
#: a link in L0). DLLPs are never replayed, so a lost UpdateFC is repaired only by the next.
DEFAULT_UPDATE_INTERVAL = 7500

_TYPE_MESSAGE = 0b10  # Type[4:3] of every message (posted)
_TYPE_COMPLETION = 0b0101  # Type[4:1] of Cpl/CplD (0101 0) and CplLk/CplDLk (0101 1)


class UpdateFc(wiring.Component):
    """Counts CREDITS_ALLOCATED for posted and non-posted TLPs and sends them in UpdateFC.

    A TLP the data link layer keeps (``rx_accept``) has its data consumed at once by the
    transaction layer above, so its data credits are allocated again then: Length / 4 rounded
    up (Length 0 is 1024 DW). Its header credit too, unless it is a non-posted request the
    transaction layer holds until its completion has left (``np_held`` at ``rx_accept``; then
    ``np_released`` gives it back): so no more requests wait for an answer than the non-posted
    header credits advertised. A posted TLP the transaction layer holds (``p_held``: it waits in
    the router's store for the application) keeps its header and data credits until
    ``p_released`` says it has gone, oldest first. Credits are added to the type's counters
    (8-bit header, 12-bit data, modulo as §2.6.1 counts). A type whose
    counters moved has an UpdateFC owed; every ``interval`` symbol times both are owed
    anyway. Completions are advertised infinite (``ADVERTISED``) and need none.

    Attributes
    ----------
    rx_tlp: stream of ``unit``, input (never stalled)
        Received TLP bytes or DWs (``SoftDataLink``'s); only bytes 0, 2 and 3 are looked at.
    rx_accept: Signal(), input
        Strobe: the TLP whose bytes came is kept.
    np_held: Signal(), input
        With ``rx_accept``: the kept non-posted request's header credit waits for a release.
    np_released: Signal(2), input
        Held header credits released this clock (completions that have left).
    p_held: Signal(), input
        With ``rx_accept``: the kept posted TLP's credits wait for a release.
    p_released: Signal(), input
        The oldest held posted TLP has left: its header and data credits come back.
    dl_active: Signal(), input
        Low: counters back to the advertised credits, nothing sent (DL_Inactive, FC_INIT).
    tx_dllp: stream of Signal(32), output
        UpdateFC-P / UpdateFC-NP DLLPs, byte 0 in bits 7:0.
    posted, non_posted: Signal(20), output
        CREDITS_ALLOCATED: header in bits 19:12, data in bits 11:0.

    Parameters
    ----------
    interval: int
        Symbol times between unprompted UpdateFCs.
    advertised: the (header, data) credits InitFC advertised for P, NP (and Cpl, infinite).
    unit: StructLayout
        :data:`~.word_deframer.RX_TLP_BYTE` (the default) or :data:`~.word_deframer.RX_TLP_DW`.
    symbols_per_clock: int
        Symbol times a clock stands for (4 on the link at Gen1, a word every 62.5 MHz clock).
    """

    def __init__(self, *, interval: int = DEFAULT_UPDATE_INTERVAL,
                 advertised: tuple = ADVERTISED, unit: data.StructLayout = RX_TLP_BYTE,
                 symbols_per_clock: int = 1):
        self._interval = interval
        self._advertised = advertised
        self._unit_bytes = unit_size(unit)
        self._ticks = max(1, interval // symbols_per_clock)
        super().__init__({
            "rx_tlp": In(stream.Signature(unit, always_ready=True)),
            "rx_accept": In(1),
            "np_held": In(1),
            "np_released": In(2),
            "p_held": In(1),
            "p_released": In(1),
            "dl_active": In(1),
            "tx_dllp": Out(stream.Signature(32)),
            "posted": Out(20),
            "non_posted": Out(20),
        })

    def elaborate(self, platform):
        m = Module()

        # Byte 0 (Fmt/Type) and the 10-bit Length of the TLP being received.
        fmt_type, length = Signal(8), Signal(10)
        index = Signal(range(5))  # bytes so far, saturating at 4
        byte = self.rx_tlp.payload.data
        if self._unit_bytes == 4:  # all of them in DW 0
            with m.If(self.rx_tlp.valid & self.rx_tlp.payload.first):
                m.d.sync += [fmt_type.eq(byte[:8]), length.eq(Cat(byte[24:32], byte[16:18]))]
        with m.If(self.rx_tlp.valid & (self._unit_bytes == 1)):
            with m.If(self.rx_tlp.payload.first):
                m.d.sync += [fmt_type.eq(byte), index.eq(1)]
            with m.Else():
                with m.If(index != 4):
                    m.d.sync += index.eq(index + 1)
                with m.If(index == 2):
                    m.d.sync += length[8:].eq(byte[:2])
                with m.If(index == 3):
                    m.d.sync += length[:8].eq(byte)

        kind = fmt_type[:5]
        with_data = fmt_type[6]
        is_posted = ((kind == 0) & with_data) | (kind[3:5] == _TYPE_MESSAGE)
        is_completion = kind[1:5] == _TYPE_COMPLETION
        data_credits = Signal(9)  # 1..256 (a 1024-DW TLP)
        m.d.comb += data_credits.eq(Mux(with_data, Mux(length == 0, 256, (length + 3) >> 2), 0))

        counters = []
        for name, (header, data_init) in (("posted", self._advertised[0]),
                                          ("non_posted", self._advertised[1])):
            hdr = Signal(8, init=header, name=f"{name}_header")
            dat = Signal(12, init=data_init, name=f"{name}_data")
            owed = Signal(name=f"{name}_owed")
            m.d.comb += getattr(self, name).eq(Cat(dat, hdr))
            counters.append((hdr, dat, owed))
        (p_hdr, p_dat, p_owed), (np_hdr, np_dat, np_owed) = counters

        # One DLLP on offer: UpdateFC-P if owed, else UpdateFC-NP. The word is the DLLP's four
        # bytes, byte 0 in bits 7:0 (the big-endian fields of fc_init's InitFC, live here).
        send_posted = p_owed
        hdr, dat = Mux(send_posted, p_hdr, np_hdr), Mux(send_posted, p_dat, np_dat)
        dllp_type = Signal(8)
        m.d.comb += [
            dllp_type.eq(Mux(send_posted, DllpType.UPDATE_FC_P, DllpType.UPDATE_FC_NP)),
            self.tx_dllp.valid.eq(self.dl_active & (p_owed | np_owed)),
            self.tx_dllp.payload.eq(Cat(dllp_type, hdr[2:8], Const(0, 2),
                                        dat[8:12], Const(0, 2), hdr[:2], dat[:8])),
        ]
        with m.If(self.tx_dllp.valid & self.tx_dllp.ready):
            with m.If(send_posted):
                m.d.sync += p_owed.eq(0)
            with m.Else():
                m.d.sync += np_owed.eq(0)

        # After the clearing above, so that credits consumed in the clock an UpdateFC is taken
        # (it carries the old count) leave another owed: later assignments win.
        kept_np = self.rx_accept & ~is_completion & ~is_posted
        kept_p = self.rx_accept & ~is_completion & is_posted
        # The held posted TLPs' data credits, in order; no more can be held than advertised.
        # Emptied at DL_Inactive, when the counters start again from the advertised credits.
        inactive = Signal()
        m.d.comb += inactive.eq(~self.dl_active)
        m.submodules.held = held = ResetInserter(inactive)(
            fifo.SyncFIFO(width=len(data_credits), depth=self._advertised[0][0]))
        # The releases are taken a clock late, from registers: they are made where a TLP's
        # last unit leaves, at the end of the transmit side's ready chain.
        p_released, np_released = Signal(), Signal(2)
        m.d.sync += [p_released.eq(self.p_released), np_released.eq(self.np_released)]
        returned_now, released = kept_p & ~self.p_held, p_released & held.r_rdy
        m.d.comb += [held.w_en.eq(kept_p & self.p_held), held.w_data.eq(data_credits),
                     held.r_en.eq(p_released)]
        with m.If(returned_now | released):
            m.d.sync += [p_hdr.eq(p_hdr + returned_now + released),
                         p_dat.eq(p_dat + Mux(returned_now, data_credits, 0)
                                  + Mux(released, held.r_data, 0)),
                         p_owed.eq(1)]
        np_headers = Mux(kept_np & ~self.np_held, 1, 0) + np_released
        np_data = Mux(kept_np, data_credits, 0)
        with m.If((np_headers != 0) | (np_data != 0)):  # a held read alone changes nothing
            m.d.sync += [np_hdr.eq(np_hdr + np_headers), np_dat.eq(np_dat + np_data),
                         np_owed.eq(1)]

        ticks = self._ticks
        timer = Signal(range(ticks))
        m.d.sync += timer.eq(Mux(timer == ticks - 1, 0, timer + 1))
        with m.If(timer == ticks - 1):
            m.d.sync += [p_owed.eq(1), np_owed.eq(1)]

        with m.If(~self.dl_active):
            m.d.sync += [p_hdr.eq(p_hdr.init), p_dat.eq(p_dat.init),
                         np_hdr.eq(np_hdr.init), np_dat.eq(np_dat.init),
                         p_owed.eq(0), np_owed.eq(0)]
        return m
