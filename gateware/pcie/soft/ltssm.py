"""The link training and status state machine of an upstream (endpoint) x1 Gen1 port (§4.2.6)."""

import dataclasses

from amaranth import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.pcie_ltssm import LINK_STATUS_FIELDS, LinkSpeed, LtssmState
from busprobe.protocol.pcie_symbols import RATE_2_5GT, TrainingControl

from .symbol_stream import LANES
from .word_transmitter import TxMode
from .word_ts_receiver import TRAINING_SET

__all__ = ["Ltssm", "LtssmTiming", "LINK_STATUS", "GEN1_WORD_CLOCK_HZ"]

LINK_STATUS = data.StructLayout(dict(LINK_STATUS_FIELDS))
#: The link's clock at 2.5 GT/s: a word of four symbols every clock.
GEN1_WORD_CLOCK_HZ = 2.5e9 / 10 / LANES


@dataclasses.dataclass(frozen=True)
class LtssmTiming:
    """The LTSSM's timeouts in clock cycles, and the TS1 count Polling.Active needs.

    :meth:`spec` gives §4.2.6's values at a clock rate (by default the link's word clock at
    Gen1, :data:`GEN1_WORD_CLOCK_HZ`); simulation uses shorter ones (the state machine is the
    same, only the counts differ), which the tests and design notes state.
    """

    detect_quiet: int  # 12 ms
    polling_active: int  # 24 ms
    polling_configuration: int  # 48 ms
    configuration: int  # 24 ms (Configuration.Linkwidth.Start)
    short: int  # 2 ms (the other Configuration, Recovery.Idle substates)
    recovery_lock: int  # 24 ms
    recovery_configuration: int  # 48 ms
    polling_ts1_min: int = 1024

    @classmethod
    def spec(cls, clock_hz: float | None = None) -> "LtssmTiming":
        clock_hz = GEN1_WORD_CLOCK_HZ if clock_hz is None else clock_hz

        def ms(value: float) -> int:
            return round(value * clock_hz / 1000)

        return cls(ms(12), ms(24), ms(48), ms(24), ms(2), ms(24), ms(48))

    def longest(self) -> int:
        return max(dataclasses.astuple(self))


class Ltssm(wiring.Component):
    """Trains the link: Detect, Polling (with Compliance), Configuration, L0 and Recovery.

    An upstream port takes its link and lane numbers from the root port's TS1s (it never
    proposes them), sends what it is told through the
    :class:`~.word_transmitter.WordTransmitter` (``tx_mode``, ``tx_ts``) and counts what it
    sent from that block's strobes. Polling.Active
    goes to Polling.Compliance when its timeout expires and the receiver never left electrical
    idle (left when the receiver leaves electrical idle), or after 8 consecutive TS1s with
    Compliance Receive (left when the partner sends an EIOS: it keeps transmitting, so leaving
    electrical idle says nothing). L0 goes to Recovery when a TS1/TS2 arrives, the receiver
    goes to electrical idle, or ``retrain`` (the data link layer's REPLAY_NUM rollover).

    Attributes
    ----------
    rx_ts: Signal(TRAINING_SET), input; rx_ts_valid, rx_idle, rx_not_idle, rx_eios: input
        From the :class:`~.word_ts_receiver.WordTsReceiver` (``rx_idle``: a word of four idle
        symbols).
    rx_electrical_idle: Signal(), input
        The SerDes' receiver sees electrical idle.
    receiver_detected: Signal(), input
        The SerDes' receiver detection found a termination (sampled in Detect.Active).
    retrain: Signal(), input
        Strobe: go to Recovery from L0.
    ts_sent, ts_sent_kind, idle_sent: input
        From the transmitter (``idle_sent``: a word of four idle symbols).
    tx_mode: Signal(TxMode), output; tx_ts: Signal(TRAINING_SET), output
        To the transmitter.
    skp_enable: Signal(), output
        SKP ordered sets are scheduled (not in Detect or Compliance).
    status: Signal(LINK_STATUS), output
        State, link up (L0), width and speed trained, link and lane numbers.
    recoveries: Signal(16), output
        Times L0 went to Recovery (wraps).
    invert_polarity: Signal(), output
        Polling.Active received a TS with inverted identifiers: the SerDes must invert the
        receive polarity (§4.2.4.4); kept until Detect.
    physical_link_up: Signal(), output
        The physical layer's LinkUp (§3.2.1): from the first L0 until the link falls back to
        Detect; it stays up through Recovery, so the data link layer keeps its state.

    Parameters
    ----------
    timing: LtssmTiming
    n_fts: int
        FTS ordered sets this receiver needs to leave L0s (sent in every TS).
    """

    rx_ts: In(TRAINING_SET)
    rx_ts_valid: In(1)
    rx_idle: In(1)
    rx_not_idle: In(1)
    rx_eios: In(1)
    rx_ts_inverted: In(1)
    rx_electrical_idle: In(1)
    receiver_detected: In(1)
    retrain: In(1)
    ts_sent: In(1)
    ts_sent_kind: In(2)
    idle_sent: In(1)
    tx_mode: Out(TxMode)
    tx_ts: Out(TRAINING_SET)
    skp_enable: Out(1)
    status: Out(LINK_STATUS)
    recoveries: Out(16)
    physical_link_up: Out(1)
    invert_polarity: Out(1)

    def __init__(self, *, timing: LtssmTiming | None = None, n_fts: int = 255):
        self._timing = timing or LtssmTiming.spec()
        self._n_fts = n_fts
        # Configuration.Idle / Recovery.Idle: 8 consecutive idle symbols received, 16 sent
        # after the first one heard (§4.2.6.3.6), in strobes of ``rx_idle`` / ``idle_sent``,
        # a word of four symbols each.
        self._idle_rx = 8 // LANES
        self._idle_tx = 16 // LANES
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        t = self._timing
        timer = Signal(range(t.longest() + 1))
        rx_count = Signal(4)  # consecutive TSs matching what this state waits for (saturates)
        tx_limit = max(t.polling_ts1_min, 16)
        tx_count = Signal(range(tx_limit + 1))  # TSs (or idles) sent, saturating
        heard = Signal()  # one matching TS (or idle) has been received in this state
        left_idle = Signal()  # the receiver left electrical idle during this state
        asked = Signal(4)  # consecutive TS1s with Compliance Receive (Polling.Active)
        by_request = Signal()  # Polling.Compliance was entered on the partner's request
        link, lane = Signal(8), Signal(5)
        trained = Signal()
        state = Signal(LtssmState)
        rx, ts = self.rx_ts, self.tx_ts
        m.d.comb += [ts.n_fts.eq(self._n_fts), ts.rate.eq(RATE_2_5GT), self.status.state.eq(state),
                     self.status.link_number.eq(link), self.status.lane_number.eq(lane)]
        with m.If(trained):
            m.d.comb += [self.status.width.eq(1), self.status.speed.eq(LinkSpeed.GEN1),
                         self.physical_link_up.eq(1)]
        m.d.sync += timer.eq(timer + 1)
        with m.If(~self.rx_electrical_idle):
            m.d.sync += left_idle.eq(1)

        def goto(new: LtssmState):
            m.d.sync += [state.eq(new), timer.eq(0), rx_count.eq(0), tx_count.eq(0),
                         heard.eq(0), left_idle.eq(0), asked.eq(0)]

        def count_ts(match):
            """Count consecutive received TSs that ``match``; another TS starts over, until 8
            have been counted (then the condition is met: the partner may move on first)."""
            with m.If(self.rx_ts_valid):
                with m.If(match):
                    m.d.sync += heard.eq(1)
                    with m.If(rx_count != 15):
                        m.d.sync += rx_count.eq(rx_count + 1)
                with m.Elif(rx_count < 8):
                    m.d.sync += rx_count.eq(0)

        def count_sent(kind: int, *, after_heard: bool):
            counting = self.ts_sent & (self.ts_sent_kind == kind)
            if after_heard:
                counting &= heard
            with m.If(counting & (tx_count != tx_limit)):
                m.d.sync += tx_count.eq(tx_count + 1)

        def send(kind: int, *, numbered: bool, lane_numbered: bool | None = None):
            lane_numbered = numbered if lane_numbered is None else lane_numbered
            m.d.comb += [self.tx_mode.eq(TxMode.TRAINING), ts.kind.eq(kind),
                         ts.link.eq(link), ts.link_pad.eq(not numbered),
                         ts.lane.eq(lane), ts.lane_pad.eq(not lane_numbered)]

        def count_idle():
            """Consecutive idle symbols received (``rx_count``), idles sent after the first."""
            with m.If(self.rx_idle):
                m.d.sync += heard.eq(1)
                with m.If(rx_count != 15):
                    m.d.sync += rx_count.eq(rx_count + 1)
            with m.Elif(self.rx_not_idle & (rx_count < self._idle_rx)):
                m.d.sync += rx_count.eq(0)
            with m.If(self.idle_sent & heard & (tx_count != self._idle_tx)):
                m.d.sync += tx_count.eq(tx_count + 1)

        pads = rx.link_pad & rx.lane_pad
        ours = ~rx.link_pad & ~rx.lane_pad & (rx.link == link) & (rx.lane == lane)
        compliance_receive = (rx.control & TrainingControl.COMPLIANCE_RECEIVE).any()

        with m.Switch(state):
            with m.Case(LtssmState.DETECT_QUIET):
                m.d.sync += [trained.eq(0), self.invert_polarity.eq(0)]
                m.d.comb += self.tx_mode.eq(TxMode.ELECTRICAL_IDLE)
                with m.If((timer >= t.detect_quiet) | ~self.rx_electrical_idle):
                    goto(LtssmState.DETECT_ACTIVE)
            with m.Case(LtssmState.DETECT_ACTIVE):
                m.d.comb += self.tx_mode.eq(TxMode.ELECTRICAL_IDLE)
                with m.If(self.receiver_detected):
                    goto(LtssmState.POLLING_ACTIVE)
                with m.Else():
                    goto(LtssmState.DETECT_QUIET)
            with m.Case(LtssmState.POLLING_ACTIVE):
                send(1, numbered=False)
                m.d.comb += self.skp_enable.eq(1)
                count_ts(pads & ~compliance_receive)
                count_sent(1, after_heard=False)
                with m.If(self.rx_ts_inverted):
                    m.d.sync += self.invert_polarity.eq(1)
                with m.If(self.rx_ts_valid):  # 8 TS1s in a row asking for compliance
                    with m.If((rx.kind == 1) & compliance_receive):
                        with m.If(asked != 8):
                            m.d.sync += asked.eq(asked + 1)
                    with m.Else():
                        m.d.sync += asked.eq(0)
                with m.If((rx_count >= 8) & (tx_count >= t.polling_ts1_min)):
                    goto(LtssmState.POLLING_CONFIGURATION)
                with m.Elif(asked == 8):
                    goto(LtssmState.POLLING_COMPLIANCE)
                    m.d.sync += by_request.eq(1)
                with m.Elif((timer >= t.polling_active) & ~left_idle):
                    goto(LtssmState.POLLING_COMPLIANCE)  # a receiver, but never out of idle
                    m.d.sync += by_request.eq(0)
                with m.Elif(timer >= t.polling_active):
                    goto(LtssmState.DETECT_QUIET)
            with m.Case(LtssmState.POLLING_COMPLIANCE):
                # Entered for a silent receiver: leave when it leaves electrical idle. Entered
                # because the partner asked (it keeps transmitting): leave when it sends EIOS.
                m.d.comb += self.tx_mode.eq(TxMode.COMPLIANCE)
                with m.If(Mux(by_request, self.rx_eios, ~self.rx_electrical_idle)):
                    goto(LtssmState.POLLING_ACTIVE)
            with m.Case(LtssmState.POLLING_CONFIGURATION):
                send(2, numbered=False)
                m.d.comb += self.skp_enable.eq(1)
                count_ts(pads & (rx.kind == 2))
                count_sent(2, after_heard=True)
                with m.If((rx_count >= 8) & (tx_count >= 16)):
                    goto(LtssmState.CONFIG_LINKWIDTH_START)
                with m.Elif(timer >= t.polling_configuration):
                    goto(LtssmState.DETECT_QUIET)
            with m.Case(LtssmState.CONFIG_LINKWIDTH_START):
                send(1, numbered=False)
                m.d.comb += self.skp_enable.eq(1)
                count_ts((rx.kind == 1) & ~rx.link_pad & rx.lane_pad)
                with m.If(self.rx_ts_valid):
                    m.d.sync += link.eq(rx.link)
                with m.If(rx_count >= 2):
                    goto(LtssmState.CONFIG_LINKWIDTH_ACCEPT)
                with m.Elif(timer >= t.configuration):
                    goto(LtssmState.DETECT_QUIET)
            with m.Case(LtssmState.CONFIG_LINKWIDTH_ACCEPT):
                send(1, numbered=True, lane_numbered=False)
                m.d.comb += self.skp_enable.eq(1)
                count_ts((rx.kind == 1) & ~rx.link_pad & (rx.link == link) & ~rx.lane_pad)
                with m.If(self.rx_ts_valid):
                    m.d.sync += lane.eq(rx.lane)
                with m.If(rx_count >= 2):
                    goto(LtssmState.CONFIG_LANENUM_WAIT)
                with m.Elif(timer >= t.short):
                    goto(LtssmState.DETECT_QUIET)
            with m.Case(LtssmState.CONFIG_LANENUM_WAIT):
                send(1, numbered=True)
                m.d.comb += self.skp_enable.eq(1)
                count_ts((rx.kind == 2) & ours)
                with m.If(rx_count >= 2):
                    goto(LtssmState.CONFIG_COMPLETE)
                with m.Elif(timer >= t.short):
                    goto(LtssmState.DETECT_QUIET)
            with m.Case(LtssmState.CONFIG_COMPLETE):
                send(2, numbered=True)
                m.d.comb += self.skp_enable.eq(1)
                count_ts((rx.kind == 2) & ours)
                count_sent(2, after_heard=True)
                with m.If((rx_count >= 8) & (tx_count >= 16)):
                    goto(LtssmState.CONFIG_IDLE)
                with m.Elif(timer >= t.short):
                    goto(LtssmState.DETECT_QUIET)
            with m.Case(LtssmState.CONFIG_IDLE, LtssmState.RECOVERY_IDLE):
                m.d.comb += [self.tx_mode.eq(TxMode.IDLE), self.skp_enable.eq(1)]
                count_idle()
                with m.If((rx_count >= self._idle_rx) & (tx_count >= self._idle_tx)):
                    goto(LtssmState.L0)
                    m.d.sync += trained.eq(1)
                with m.Elif(timer >= t.short):
                    goto(LtssmState.DETECT_QUIET)
            with m.Case(LtssmState.L0):
                m.d.comb += [self.tx_mode.eq(TxMode.DATA), self.skp_enable.eq(1),
                             self.status.link_up.eq(1)]
                with m.If(self.rx_ts_valid | self.retrain | self.rx_electrical_idle):
                    goto(LtssmState.RECOVERY_RCVRLOCK)
                    m.d.sync += self.recoveries.eq(self.recoveries + 1)
            with m.Case(LtssmState.RECOVERY_RCVRLOCK):
                send(1, numbered=True)
                m.d.comb += self.skp_enable.eq(1)
                count_ts(ours)
                with m.If(rx_count >= 8):
                    goto(LtssmState.RECOVERY_RCVRCFG)
                with m.Elif(timer >= t.recovery_lock):
                    goto(LtssmState.DETECT_QUIET)
            with m.Case(LtssmState.RECOVERY_RCVRCFG):
                send(2, numbered=True)
                m.d.comb += self.skp_enable.eq(1)
                count_ts((rx.kind == 2) & ours)
                count_sent(2, after_heard=True)
                with m.If((rx_count >= 8) & (tx_count >= 16)):
                    goto(LtssmState.RECOVERY_IDLE)
                with m.Elif(timer >= t.recovery_configuration):
                    goto(LtssmState.DETECT_QUIET)
        return m
