"""Flow-control initialisation of virtual channel 0: DL_Init to DL_Active (§2.6.1, §3.4.2)."""

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_dll import DllpType

__all__ = ["FlowControlInit", "CREDITS", "ADVERTISED", "NON_POSTED_HEADERS",
           "POSTED_HEADERS", "POSTED_DATA"]

#: Credits of one kind: 8-bit header credits, 12-bit data credits (0 and 0: infinite).
CREDITS = data.StructLayout({"header": 8, "data": 12})
#: The (header, data) credits the endpoint's receiver advertises for P, NP and Cpl; an endpoint
#: advertises infinite completion credits (0, 0) (§2.6.1). ``UpdateFc`` counts on from these.
#: Non-posted header credits: the requests the transaction layer can hold at once. Each
#: configuration request or request answered with UR keeps its header credit until its
#: completion has left (:class:`~.update_fc.UpdateFc`'s ``np_held``), so the completion queues
#: of :class:`~.config_space.ConfigSpace` and :class:`~.tlp_router.TlpRouter` (at least this
#: deep) can never overflow, whatever the root port has outstanding.
NON_POSTED_HEADERS = 4
#: Posted credits: header and data (16-byte units) for TLPs the transaction layer holds until the
#: application has taken them (the router's store, ``p_held``): eight writes and 1 KiB of data,
#: at least the 512-byte Max_Payload_Size supported (§2.6.1's minimum) and well inside the
#: smallest store. A host writes the endpoint's CSRs a dword at a time.
POSTED_HEADERS, POSTED_DATA = 8, 64
ADVERTISED = ((POSTED_HEADERS, POSTED_DATA), (NON_POSTED_HEADERS, 8), (0, 0))
_KINDS = ("posted", "non_posted", "completion")
_INIT_FC1 = (DllpType.INIT_FC1_P, DllpType.INIT_FC1_NP, DllpType.INIT_FC1_CPL)
_INIT_FC2 = (DllpType.INIT_FC2_P, DllpType.INIT_FC2_NP, DllpType.INIT_FC2_CPL)
_UPDATE_FC = (DllpType.UPDATE_FC_P, DllpType.UPDATE_FC_NP, DllpType.UPDATE_FC_CPL)


def _fc_word(kind: int, credits) -> int:
    """A flow-control DLLP as the framer takes it: byte 0 (the type) in bits 7:0."""
    header, data_credits = credits
    word = kind << 24 | (header & 0xFF) << 14 | (data_credits & 0xFFF)
    return int.from_bytes(word.to_bytes(4, "big"), "little")


class FlowControlInit(wiring.Component):
    """Sends InitFC1 then InitFC2 for P, NP and Cpl until the link partner's arrive.

    FC_INIT1: InitFC1-P, -NP, -Cpl over and over; the partner's InitFC1 (or InitFC2) of each
    type records its credits. With all three, FC_INIT2: InitFC2-P, -NP, -Cpl over and over
    until an InitFC2 or UpdateFC DLLP or a good TLP arrives: DL_Active. The link leaving L0
    (``link_up`` low) starts over (DL_Inactive).

    Attributes
    ----------
    link_up: Signal(), input
        The LTSSM is in L0.
    rx_dllp: stream of Signal(32), input (never stalled)
        Good DLLPs received, byte 0 in bits 7:0.
    rx_tlp_good: Signal(), input
        Strobe: a good TLP was received.
    tx_dllp: stream of Signal(32), output
        The InitFC DLLPs to send.
    dl_active: Signal(), output
    partner_posted, partner_non_posted, partner_completion: Signal(CREDITS), output
        The credits the partner advertised (0/0: infinite).

    Parameters
    ----------
    posted, non_posted, completion: (header, data) credits this receiver advertises. An
        endpoint advertises infinite completion credits (0, 0) (§2.6.1).
    """

    link_up: In(1)
    rx_dllp: In(stream.Signature(32, always_ready=True))
    rx_tlp_good: In(1)
    tx_dllp: Out(stream.Signature(32))
    dl_active: Out(1)
    partner_posted: Out(CREDITS)
    partner_non_posted: Out(CREDITS)
    partner_completion: Out(CREDITS)

    def __init__(self, *, posted=ADVERTISED[0], non_posted=ADVERTISED[1],
                 completion=ADVERTISED[2]):
        self._advertised = (posted, non_posted, completion)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        phase2 = Signal()  # FC_INIT2
        which = Signal(range(3))  # the next of P, NP, Cpl to send
        got = Signal(3)  # InitFC1/2 received per type
        kind = self.rx_dllp.payload[:8]
        partner = (self.partner_posted, self.partner_non_posted, self.partner_completion)

        with m.Switch(which):
            for i in range(3):
                with m.Case(i):
                    init1 = _fc_word(_INIT_FC1[i], self._advertised[i])
                    init2 = _fc_word(_INIT_FC2[i], self._advertised[i])
                    m.d.comb += self.tx_dllp.payload.eq(Mux(phase2, init2, init1))
        m.d.comb += [self.tx_dllp.valid.eq(self.link_up & ~self.dl_active)]
        with m.If(self.tx_dllp.valid & self.tx_dllp.ready):
            m.d.sync += which.eq(0)
            with m.If(which != 2):
                m.d.sync += which.eq(which + 1)

        # Bytes 1..3 of the DLLP (payload bits 8..31) are the big-endian word's bits 23..0:
        # HdrScale[1:0] HdrFC[7:0] DataScale[1:0] DataFC[11:0].
        word = self.rx_dllp.payload
        header = Cat(word[22:24], word[8:14])
        data_credits = Cat(word[24:32], word[16:20])
        for i in range(3):
            with m.If(self.rx_dllp.valid & (((kind & 0xF8) == _INIT_FC1[i]) |
                                            ((kind & 0xF8) == _INIT_FC2[i]))):
                m.d.sync += [got[i].eq(1), partner[i].header.eq(header),
                             partner[i].data.eq(data_credits)]
        with m.If(~phase2 & (got == 0b111)):
            m.d.sync += [phase2.eq(1), which.eq(0)]

        fc2_or_update = Signal()
        for i in range(3):
            with m.If(((kind & 0xF8) == _INIT_FC2[i]) | ((kind & 0xF8) == _UPDATE_FC[i])):
                m.d.comb += fc2_or_update.eq(1)
        with m.If(phase2 & ((self.rx_dllp.valid & fc2_or_update) | self.rx_tlp_good)):
            m.d.sync += self.dl_active.eq(1)

        with m.If(~self.link_up):
            m.d.sync += [phase2.eq(0), got.eq(0), which.eq(0), self.dl_active.eq(0)]
        return m
