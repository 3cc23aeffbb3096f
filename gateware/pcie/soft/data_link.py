"""The soft endpoint's link with the data link layer's receive side and DL_Init on top."""

from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .ack_nak import AckNakScheduler
from .fc_init import CREDITS, FlowControlInit
from .ltssm import LINK_STATUS, LtssmTiming
from .replay_buffer import ReplayBuffer
from .soft_link import SoftLink
from .symbol_stream import LANES, rx_word_stream, tx_word_stream
from .tx_credits import TxCredits
from .update_fc import DEFAULT_UPDATE_INTERVAL, UpdateFc
from .word_deframer import RX_TLP_DW, TlpStatus
from .word_framer import TLP_DW

__all__ = ["SoftDataLink"]


class SoftDataLink(wiring.Component):
    """:class:`~.soft_link.SoftLink` plus the data link layer: flow-control initialisation,
    the replay buffer (sequence numbers, ACK/NAK received, replay, REPLAY_NUM rollover into
    Recovery), the ACK/NAK receive side, UpdateFC for the credits of kept TLPs
    (:class:`~.update_fc.UpdateFc`) and the partner's credits counted down before a TLP is sent
    (:class:`~.tx_credits.TxCredits`): what a transaction layer needs to send and receive TLPs.


    Attributes
    ----------
    rx, rx_electrical_idle, receiver_detected, tx, tx_electrical_idle: as SoftLink's.
    tlp: stream of TLP_DW, input
        TLPs to send, valid from first DW to last once started; each starts only within the
        partner's credits and gets the next sequence number.
    rx_tlp: stream of RX_TLP_DW, output; rx_accept, rx_discard: Signal(), output
        Received TLP DWs, then keep-or-drop (see :class:`~.ack_nak.AckNakScheduler`).
    max_payload_size: Signal(16), input
        The negotiated Max_Payload_Size in bytes: the AckNak latency and the REPLAY_TIMER
        follow it (unless fixed by ``ack_latency``/``replay_timeout``).
    np_held: Signal(), input; np_released: Signal(2), input
        From the transaction layer: a kept request's header credit held until its completion
        has left, and held credits released (see :class:`~.update_fc.UpdateFc`).
    p_held: Signal(), input; p_released: Signal(), input
        Likewise for a posted TLP held until the application has taken it.
    dl_active: Signal(), output
    partner_posted, partner_non_posted, partner_completion: Signal(CREDITS), output
    next_transmit_seq, acked_seq, next_rcv_seq: Signal(12), output
    naks, duplicates: Signal(16), output
        NAKs sent, duplicate TLPs dropped.
    credit_blocked: Signal(16), output
        Clocks a TLP waited for the partner's credits.
    replays, replay_timeouts, protocol_errors: Signal(16), output
        See :class:`~.replay_buffer.ReplayBuffer`.
    status: Signal(LINK_STATUS), output; recoveries: Signal(16), output
    invert_polarity: Signal(), output
        The LTSSM's, for the PHY's receiver (see :class:`~.ltssm.Ltssm`).

    Parameters
    ----------
    symbols_per_clock: int
        Symbol times a clock stands for in the data link layer's timers (ACK latency,
        REPLAY_TIMER, the UpdateFC interval): 4 at Gen1, a word every 62.5 MHz clock.
    """

    def __init__(self, *, timing: LtssmTiming | None = None,
                 ack_latency: int | None = None, replay_timeout: int | None = None,
                 update_interval: int = DEFAULT_UPDATE_INTERVAL,
                 symbols_per_clock: int = LANES, **link_options):
        self._timing = timing
        self._update_interval = update_interval
        self._ack_latency = ack_latency
        self._replay_timeout = replay_timeout
        self._symbols_per_clock = symbols_per_clock
        self._link_options = link_options
        super().__init__({
            "rx": In(rx_word_stream()),
            "rx_electrical_idle": In(1),
            "receiver_detected": In(1),
            "tx": Out(tx_word_stream()),
            "tx_electrical_idle": Out(1),
            "tlp": In(stream.Signature(TLP_DW)),
            "rx_tlp": Out(stream.Signature(RX_TLP_DW, always_ready=True)),
            "rx_accept": Out(1),
            "rx_discard": Out(1),
            "np_held": In(1),
            "np_released": In(2),
            "p_held": In(1),
            "p_released": In(1),
            "max_payload_size": In(16),
            "dl_active": Out(1),
            "partner_posted": Out(CREDITS),
            "partner_non_posted": Out(CREDITS),
            "partner_completion": Out(CREDITS),
            "next_transmit_seq": Out(12),
            "acked_seq": Out(12),
            "replays": Out(16),
            "replay_timeouts": Out(16),
            "protocol_errors": Out(16),
            "next_rcv_seq": Out(12),
            "naks": Out(16),
            "duplicates": Out(16),
            "credit_blocked": Out(16),
            "status": Out(LINK_STATUS),
            "recoveries": Out(16),
            "invert_polarity": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        per_clock = self._symbols_per_clock
        m.submodules.link = link = SoftLink(timing=self._timing, **self._link_options)
        m.submodules.fc_init = fc = FlowControlInit()
        m.submodules.ack_nak = ack_nak = AckNakScheduler(ack_latency=self._ack_latency,
                                                         symbols_per_clock=per_clock)
        m.submodules.replay = replay = ReplayBuffer(
            replay_timeout=self._replay_timeout, unit=TLP_DW,
            symbols_per_clock=per_clock)
        m.submodules.update_fc = update = UpdateFc(
            interval=self._update_interval, unit=RX_TLP_DW,
            symbols_per_clock=per_clock)
        m.submodules.credits = credits = TxCredits(unit=TLP_DW)
        # DL_Inactive only when the physical layer's LinkUp falls, not for a Recovery.
        link_up = link.physical_link_up

        wiring.connect(m, wiring.flipped(self.rx), link.rx)
        wiring.connect(m, link.tx, wiring.flipped(self.tx))
        wiring.connect(m, link.rx_tlp, wiring.flipped(self.rx_tlp))
        m.d.comb += [
            link.rx_electrical_idle.eq(self.rx_electrical_idle),
            link.receiver_detected.eq(self.receiver_detected),
            self.tx_electrical_idle.eq(link.tx_electrical_idle),
            self.status.eq(link.status),
            self.recoveries.eq(link.recoveries),
            self.invert_polarity.eq(link.invert_polarity),
            fc.link_up.eq(link_up),
            fc.rx_dllp.valid.eq(link.rx_dllp.valid),
            fc.rx_dllp.payload.eq(link.rx_dllp.payload),
            fc.rx_tlp_good.eq(link.rx_tlp_end & (link.rx_tlp_status == TlpStatus.GOOD)),
            self.dl_active.eq(fc.dl_active),
            self.partner_posted.eq(fc.partner_posted),
            self.partner_non_posted.eq(fc.partner_non_posted),
            self.partner_completion.eq(fc.partner_completion),
            ack_nak.link_up.eq(link_up),
            ack_nak.max_payload_size.eq(self.max_payload_size),
            replay.max_payload_size.eq(self.max_payload_size),
            ack_nak.tlp_end.eq(link.rx_tlp_end),
            ack_nak.tlp_status.eq(link.rx_tlp_status),
            ack_nak.tlp_seq.eq(link.rx_tlp_seq),
            self.rx_accept.eq(ack_nak.accept),
            self.rx_discard.eq(ack_nak.discard),
            self.next_rcv_seq.eq(ack_nak.next_rcv_seq),
            self.naks.eq(ack_nak.naks),
            self.duplicates.eq(ack_nak.duplicates),
        ]

        m.d.comb += [
            update.rx_tlp.valid.eq(link.rx_tlp.valid),
            update.rx_tlp.payload.eq(link.rx_tlp.payload),
            update.rx_accept.eq(ack_nak.accept),
            update.np_held.eq(self.np_held),
            update.np_released.eq(self.np_released),
            update.p_held.eq(self.p_held),
            update.p_released.eq(self.p_released),
            update.dl_active.eq(fc.dl_active),
        ]

        # DLLPs: an ACK/NAK goes first, then flow control (InitFC before DL_Active, UpdateFC
        # after it: never both on offer). The one chosen waits in a register for the framer,
        # so the framer's choice between a DLLP and a TLP (and with it the TLP side's ready)
        # does not hang on the ACK timer's compare or the credit counters. An ACK or UpdateFC
        # may so leave a few clocks after it was chosen: both carry cumulative counts.
        slot, slot_full = Signal(32), Signal()
        taken = link.dllp.ready & slot_full
        load = ~slot_full | taken
        chosen, chosen_valid = Signal(32), Signal()
        m.d.comb += [link.dllp.valid.eq(slot_full), link.dllp.payload.eq(slot)]
        with m.If(ack_nak.tx_dllp.valid):
            m.d.comb += [chosen_valid.eq(1), chosen.eq(ack_nak.tx_dllp.payload),
                         ack_nak.tx_dllp.ready.eq(load)]
        with m.Elif(fc.tx_dllp.valid):
            m.d.comb += [chosen_valid.eq(1), chosen.eq(fc.tx_dllp.payload),
                         fc.tx_dllp.ready.eq(load)]
        with m.Else():
            m.d.comb += [chosen_valid.eq(update.tx_dllp.valid),
                         chosen.eq(update.tx_dllp.payload),
                         update.tx_dllp.ready.eq(load)]
        with m.If(taken):
            m.d.sync += slot_full.eq(0)
        with m.If(chosen_valid & load):
            m.d.sync += [slot.eq(chosen), slot_full.eq(1)]
        with m.If(~link.physical_link_up):
            m.d.sync += slot_full.eq(0)

        # TLPs: within the partner's credits, numbered and kept by the replay buffer from
        # DL_Active on.
        wiring.connect(m, wiring.flipped(self.tlp), credits.sink)
        m.d.comb += [
            credits.dl_active.eq(fc.dl_active),
            credits.partner_posted.eq(fc.partner_posted),
            credits.partner_non_posted.eq(fc.partner_non_posted),
            credits.partner_completion.eq(fc.partner_completion),
            credits.rx_dllp.valid.eq(link.rx_dllp.valid),
            credits.rx_dllp.payload.eq(link.rx_dllp.payload),
            self.credit_blocked.eq(credits.blocked),
            replay.active.eq(fc.dl_active),
            replay.tlp.valid.eq(credits.source.valid & fc.dl_active),
            replay.tlp.payload.eq(credits.source.payload),
            credits.source.ready.eq(replay.tlp.ready & fc.dl_active),
            replay.rx_dllp.valid.eq(link.rx_dllp.valid),
            replay.rx_dllp.payload.eq(link.rx_dllp.payload),
            link.tlp.valid.eq(replay.source.valid),
            link.tlp.payload.eq(replay.source.payload),
            replay.source.ready.eq(link.tlp.ready),
            link.tlp_seq.eq(replay.source_seq),
            link.retrain.eq(replay.retrain),
            self.next_transmit_seq.eq(replay.next_transmit_seq),
            self.acked_seq.eq(replay.acked_seq),
            self.replays.eq(replay.replays),
            self.replay_timeouts.eq(replay.timeouts),
            self.protocol_errors.eq(replay.protocol_errors),
        ]
        return m
