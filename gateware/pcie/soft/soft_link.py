"""The soft endpoint's physical and data link framing layers, assembled for one SerDes lane."""

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .ltssm import LINK_STATUS, Ltssm, LtssmTiming
from .receive_aligner import ReceiveAligner
from .symbol_stream import LANES, rx_word_stream, tx_word_stream
from .word_deframer import RX_TLP_DW, TlpStatus, WordDeframer
from .word_framer import TLP_DW, WordFramer
from .word_skp_inserter import DEFAULT_SKP_INTERVAL, WordSkpInserter
from .word_transmitter import WordTransmitter
from .word_ts_receiver import WordTsReceiver

__all__ = ["SoftLink"]


class SoftLink(wiring.Component):
    """LTSSM, ordered sets, SKP handling and TLP/DLLP framing between a SerDes and the DLL,
    four symbols a clock (DESIGN §3.10, "The link at four symbols a clock").

    Transmit: framer -> transmitter (TSs, compliance, idle or packets, as the LTSSM says) ->
    SKP inserter -> ``tx``, every structure whole words from lane 0. Receive: ``rx`` ->
    :class:`~.receive_aligner.ReceiveAligner` (SKP sets out, every structure into lane 0) ->
    TS receiver (to the LTSSM) and deframer. TLPs move as DWs (``TLP_DW``, ``RX_TLP_DW``).
    Packets go out only in L0; the deframer looks at every word (outside L0 the ordered sets'
    COM/PAD are not packet symbols, and a TS1 arriving mid-packet cuts it).

    Attributes
    ----------
    rx: rx_word_stream(), input
        Decoded symbols from the SerDes, four a word, lane 0 first (8b/10b errors flagged).
    rx_electrical_idle, receiver_detected: Signal(), input
        From the SerDes (see :class:`~.ltssm.Ltssm`).
    tx: tx_word_stream(), output
        Words to the SerDes' encoder, one every clock it is ready.
    tx_electrical_idle: Signal(), output
        Hold the transmitter in electrical idle.
    retrain: Signal(), input
        Strobe: go to Recovery (the DLL's REPLAY_NUM rollover).
    tlp, tlp_seq, dllp: input
        What to send (see :class:`~.word_framer.WordFramer`).
    rx_tlp, rx_tlp_end, rx_tlp_status, rx_tlp_seq, rx_dllp, bad_dllp, bad_symbol: output
        What arrived (see :class:`~.word_deframer.WordDeframer`).
    skp_inserted, skp_removed: Signal(), output
        Strobes, one per SKP ordered set.
    status: Signal(LINK_STATUS), output; recoveries, physical_link_up, invert_polarity: output
        From the LTSSM (``invert_polarity`` goes to the SerDes).

    Parameters
    ----------
    timing: LtssmTiming
    skp_interval: int
    max_payload: int
    """

    def __init__(self, *, timing: LtssmTiming | None = None,
                 skp_interval: int = DEFAULT_SKP_INTERVAL, max_payload: int = 512):
        self._timing = timing
        self._skp_interval = skp_interval
        self._max_payload = max_payload
        super().__init__({
            "rx": In(rx_word_stream()),
            "rx_electrical_idle": In(1),
            "receiver_detected": In(1),
            "tx": Out(tx_word_stream()),
            "tx_electrical_idle": Out(1),
            "retrain": In(1),
            "tlp": In(stream.Signature(TLP_DW)),
            "tlp_seq": In(12),
            "dllp": In(stream.Signature(32)),
            "rx_tlp": Out(stream.Signature(RX_TLP_DW, always_ready=True)),
            "rx_tlp_end": Out(1),
            "rx_tlp_status": Out(TlpStatus),
            "rx_tlp_seq": Out(12),
            "rx_dllp": Out(stream.Signature(32, always_ready=True)),
            "bad_dllp": Out(1),
            "bad_symbol": Out(1),
            "skp_inserted": Out(1),
            "skp_removed": Out(1),
            "status": Out(LINK_STATUS),
            "recoveries": Out(16),
            "physical_link_up": Out(1),
            "invert_polarity": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.ltssm = ltssm = Ltssm(timing=self._timing)
        m.submodules.framer = framer = WordFramer()
        m.submodules.transmitter = transmitter = WordTransmitter()
        m.submodules.skp_inserter = inserter = WordSkpInserter(interval=self._skp_interval)
        m.submodules.skp_remover = remover = ReceiveAligner(width=LANES)
        m.submodules.ts_receiver = receiver = WordTsReceiver()
        m.submodules.deframer = deframer = WordDeframer(max_payload=self._max_payload)

        # Transmit.
        wiring.connect(m, wiring.flipped(self.tlp), framer.tlp)
        wiring.connect(m, wiring.flipped(self.dllp), framer.dllp)
        wiring.connect(m, framer.source, transmitter.packets)
        wiring.connect(m, transmitter.source, inserter.sink)
        wiring.connect(m, inserter.source, wiring.flipped(self.tx))
        m.d.comb += [
            framer.tlp_seq.eq(self.tlp_seq),
            transmitter.mode.eq(ltssm.tx_mode),
            transmitter.ts.eq(ltssm.tx_ts),
            inserter.enable.eq(ltssm.skp_enable),
            self.tx_electrical_idle.eq(transmitter.electrical_idle),
            self.skp_inserted.eq(inserter.inserted),
        ]

        # Receive.
        wiring.connect(m, wiring.flipped(self.rx), remover.sink)
        m.d.comb += [
            receiver.sink.valid.eq(remover.source.valid),
            receiver.sink.p.eq(remover.source.p),
            deframer.sink.valid.eq(remover.source.valid),
            deframer.sink.p.eq(remover.source.p),
            self.skp_removed.eq(remover.skp_removed),
        ]
        wiring.connect(m, deframer.tlp, wiring.flipped(self.rx_tlp))
        wiring.connect(m, deframer.dllp, wiring.flipped(self.rx_dllp))
        m.d.comb += [
            self.rx_tlp_end.eq(deframer.tlp_end),
            self.rx_tlp_status.eq(deframer.tlp_status),
            self.rx_tlp_seq.eq(deframer.tlp_seq),
            self.bad_dllp.eq(deframer.bad_dllp),
            self.bad_symbol.eq(deframer.bad_symbol),
        ]

        # The LTSSM.
        m.d.comb += [
            ltssm.rx_ts.eq(receiver.ts),
            ltssm.rx_ts_valid.eq(receiver.ts_valid),
            ltssm.rx_idle.eq(receiver.idle),
            ltssm.rx_not_idle.eq(receiver.not_idle),
            ltssm.rx_eios.eq(receiver.eios),
            ltssm.rx_ts_inverted.eq(receiver.inverted_ts),
            ltssm.rx_electrical_idle.eq(self.rx_electrical_idle),
            ltssm.receiver_detected.eq(self.receiver_detected),
            ltssm.retrain.eq(self.retrain),
            ltssm.ts_sent.eq(transmitter.ts_sent),
            ltssm.ts_sent_kind.eq(transmitter.ts_sent_kind),
            ltssm.idle_sent.eq(transmitter.idle_sent),
            self.status.eq(ltssm.status),
            self.recoveries.eq(ltssm.recoveries),
            self.physical_link_up.eq(ltssm.physical_link_up),
            self.invert_polarity.eq(ltssm.invert_polarity),
        ]
        return m
