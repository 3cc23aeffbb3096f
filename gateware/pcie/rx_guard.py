"""Every TLP the link delivers is checked, whole, before the core sees it (Migen).

LitePCIe's depacketizer trusts the link: it ignores the EP (poisoned) bit and the completion
status, files a completion under whatever tag it carries, and a packet shorter than its header
makes it read the next packet's first beat as the rest of this one. A hard IP drops some of this
(LCRC errors, most malformed TLPs), not all of it, and not in simulation. :class:`RxTlpGuard`
sits between the PHY's receive stream and LitePCIe's depacketizer: it stores each TLP, checks it
as it arrives, and at its last beat either passes it on unchanged or drops all of it. So the core
only ever sees well-formed TLPs, and only the completions its reads are owed.

What is dropped, in this order of precedence (one class per TLP; PCIe Base Spec 3.0 §2.3 names):

``malformed``
    The beats do not match the header: fewer or more DWs than Fmt/Length/TD say, a TLP prefix,
    a payload above Max Payload Size, a last beat with a byte enable other than 0x0F/0xFF, or a
    packet too short to hold a header. A completion with an intact header for a read in flight
    fails that read.
``unexpected`` (completions only)
    No read in flight matches: another Requester ID, a tag the core does not use or is not
    waiting on, or a completion for a locked read. The reads in flight are not affected.
``discarded`` (completions only)
    Another completion of a read that has already failed.
``poisoned``
    EP set. A completion fails its read; a poisoned request is dropped.
``status``
    A completion with status UR, CRS, CA or reserved (not SC): fails its read.
``mismatch``
    A completion whose Byte Count is not what its read still expects, whose Lower Address is not
    where its data must start, whose Length is more than that or ends a partial completion off a
    64-byte boundary (the smallest Read Completion Boundary), or a Cpl without data with SC
    status: fails its read.

A read that fails (by one of those, or by completion timeout in :class:`ReadRequestTracker`)
raises :attr:`failed` until :attr:`flush`: the rest of that read will not come, so the DMA
reader is stalled for good and the read path must be reset (:mod:`.read_reset`).
"""

from __future__ import annotations

from litepcie.common import phy_layout
from litex.soc.interconnect import stream
from migen import If, Module, Mux, Signal
from migen.fhdl.decorators import ResetInserter

from .read_tracker import ReadRequestTracker
from .tlp_beats import CPL_LOCKED_TYPE, CPL_TYPE, FMT_DATA, FMT_PREFIX

__all__ = ["RxTlpGuard", "EVENTS", "MAX_TLP_BEATS"]

#: The one-cycle event strobes of :class:`RxTlpGuard`, one per class of dropped TLP.
EVENTS = ("malformed", "unexpected", "discarded", "poisoned", "status", "mismatch", "timeout")
#: Largest legal TLP: 4-DW header + 512-byte payload (the core's MPS cap) + ECRC, in 64-bit beats.
MAX_TLP_BEATS = (4 + 512 // 4 + 1 + 1) // 2
#: Beats stored: two of the largest TLPs, so one can leave while the next arrives.
FIFO_BEATS = 256
#: Smallest Read Completion Boundary: a partial completion ends on a multiple of it.
_RCB = 64


class RxTlpGuard(Module):
    """Store-and-forward check of the receive stream.

    Attributes
    ----------
    sink : stream.Endpoint(phy_layout(64)), input
        TLP beats from the PHY (link to core).
    source : stream.Endpoint(phy_layout(64)), output
        The TLPs that passed, beat for beat as received, to LitePCIe's depacketizer.
    requester_id : Signal(16), input
        This function's ID (completions must carry it).
    max_payload_size : Signal(16), input
        Max Payload Size in force, bytes.
    timeout_cycles : Signal(32), input
        Completion timeout (see :class:`ReadRequestTracker`).
    flush : Signal(), input
        Abandon every read in flight: forget them, clear :attr:`failed`, and drop completions
        already accepted but not yet passed on (they belong to the abandoned reads).
    failed : Signal(), output
        A read failed since the last :attr:`flush`.
    malformed, unexpected, discarded, poisoned, status, mismatch, timeout : Signal(), output
        One-cycle strobe per TLP dropped for that reason (see the module docstring).

    Parameters
    ----------
    tx : stream.Endpoint(phy_layout(64))
        The PHY's transmit stream, observed for the read requests.
    tag_bits : int
        Width of the tags the core uses.
    """

    def __init__(self, tx, tag_bits=3):
        self.sink = sink = stream.Endpoint(phy_layout(64))
        self.source = stream.Endpoint(phy_layout(64))
        self.requester_id = Signal(16)
        self.max_payload_size = Signal(16)
        self.timeout_cycles = Signal(32)
        self.flush = Signal()
        self.failed = Signal()
        for name in EVENTS:
            setattr(self, name, Signal(name=f"rx_guard_{name}"))

        # A flush forgets every read in flight at once.
        self.submodules.reads = reads = ResetInserter()(ReadRequestTracker(tx, tag_bits))
        self.comb += [
            reads.reset.eq(self.flush),
            reads.timeout_cycles.eq(self.timeout_cycles),
            self.timeout.eq(reads.timeout),
        ]
        self.submodules.data = data = stream.SyncFIFO(phy_layout(64), FIFO_BEATS, buffered=True)
        verdict_layout = [("good", 1), ("completion", 1), ("epoch", 1)]
        self.submodules.verdicts = verdicts = stream.SyncFIFO(verdict_layout, 16)

        # Input: store beats, keep the header, count DWs. ------------------------------------------
        beat = Signal(7)  # index of the beat in its packet (saturates)
        dws = Signal(11)  # DWs received before this beat
        dw0, dw1, dw2 = Signal(32), Signal(32), Signal(32)
        be_bad = Signal()  # a byte enable that no well-formed TLP has, before this beat
        discarding = Signal()  # an overlong packet was cut: drop its beats until its last
        fire = Signal()
        self.comb += [
            sink.ready.eq(discarding | (data.sink.ready & verdicts.sink.ready)),
            fire.eq(sink.valid & sink.ready),
            data.sink.valid.eq(sink.valid & ~discarding & verdicts.sink.ready),
            data.sink.dat.eq(sink.dat),
            data.sink.be.eq(sink.be),
            data.sink.first.eq(sink.first),
        ]
        cut = Signal()  # this beat is the last one a legal TLP could have, and it is not last
        end = Signal()  # this beat ends the stored packet: the verdict is due
        self.comb += [
            cut.eq(~sink.last & (beat == MAX_TLP_BEATS - 1)),
            end.eq(fire & ~discarding & (sink.last | cut)),
            data.sink.last.eq(sink.last | cut),
        ]
        self.sync += If(fire,
            If(sink.last, beat.eq(0), dws.eq(0), be_bad.eq(0), discarding.eq(0)).Else(
                If(beat != 127, beat.eq(beat + 1)),
                dws.eq(dws + 2),
                If(sink.be != 0xFF, be_bad.eq(1)),
                If(cut, discarding.eq(1)),
            ),
            If(beat == 0, dw0.eq(sink.dat[0:32]), dw1.eq(sink.dat[32:64])),
            If(beat == 1, dw2.eq(sink.dat[0:32])),
        )

        # The header as of this beat (a 2-beat TLP ends on the beat that brings DW2). -------------
        h0, h1, h2 = Signal(32), Signal(32), Signal(32)
        self.comb += [
            h0.eq(Mux(beat == 0, sink.dat[0:32], dw0)),
            h1.eq(Mux(beat == 0, sink.dat[32:64], dw1)),
            h2.eq(Mux(beat == 1, sink.dat[0:32], dw2)),
        ]
        fmt, kind, td, ep, length = h0[29:32], h0[24:29], h0[15], h0[14], h0[0:10]
        status, byte_count = h1[13:16], h1[0:12]
        requester, tag, lower = h2[16:32], h2[8:16], h2[0:7]
        self.comb += reads.tag.eq(tag)

        # Framing. --------------------------------------------------------------------------------
        data_dws = Signal(11)
        expected_dws = Signal(11)
        received_dws = Signal(11)
        framing_bad = Signal()
        self.comb += [
            data_dws.eq(Mux(fmt[1], Mux(length == 0, 1024, length), 0)),
            expected_dws.eq(3 + fmt[0] + data_dws + td),
            received_dws.eq(dws + (sink.be[0:4] != 0) + (sink.be[4:8] != 0)),
            framing_bad.eq((beat == 0) | cut | be_bad
                           | ((sink.be != 0xFF) & (sink.be != 0x0F))
                           | ((fmt & FMT_PREFIX) != 0)
                           | (received_dws != expected_dws)
                           | ((data_dws << 2) > self.max_payload_size)),
        ]

        # Completions against the read they answer. ----------------------------------------------
        completion = Signal()
        ours = Signal()
        payload = Signal(13)
        expected_bytes = Signal(13)
        mismatch = Signal()
        self.comb += [
            completion.eq((kind == CPL_TYPE) | (kind == CPL_LOCKED_TYPE)),
            ours.eq((kind == CPL_TYPE) & (beat != 0) & (requester == self.requester_id)
                    & reads.busy),
            payload.eq(data_dws << 2),
            expected_bytes.eq(Mux(byte_count == 0, 4096, byte_count)),
            mismatch.eq(((fmt & FMT_DATA) == 0)
                        | (expected_bytes != reads.remaining)
                        | (lower != reads.next_lower_address)
                        | (payload > reads.remaining)
                        | ((payload != reads.remaining)
                           & (((lower + payload) & (_RCB - 1)) != 0))),
        ]

        # Verdict, once per packet, in the precedence of the module docstring. --------------------
        good = Signal()
        fail = Signal()
        live = Signal()  # ours and not failed yet: a fault here fails the read
        self.comb += [
            live.eq(ours & ~reads.failed),
            If(end,
                If(framing_bad,
                    self.malformed.eq(1), fail.eq(live),
                ).Elif(completion,
                    If(~ours, self.unexpected.eq(1)
                    ).Elif(reads.failed, self.discarded.eq(1)
                    ).Elif(ep, self.poisoned.eq(1), fail.eq(1)
                    ).Elif(status != 0, self.status.eq(1), fail.eq(1)
                    ).Elif(mismatch, self.mismatch.eq(1), fail.eq(1)
                    ).Else(good.eq(1), reads.advance.eq(1)),
                ).Elif(ep, self.poisoned.eq(1)
                ).Else(good.eq(1)),
            ),
            reads.fail.eq(fail),
            reads.advance_bytes.eq(payload),
        ]
        epoch = Signal()
        self.comb += [
            verdicts.sink.valid.eq(end),
            verdicts.sink.good.eq(good),
            verdicts.sink.completion.eq(completion),
            verdicts.sink.epoch.eq(epoch),
        ]
        self.sync += [
            If(fail | reads.timeout, self.failed.eq(1)),
            If(self.flush, self.failed.eq(0), epoch.eq(~epoch)),
        ]

        # Output: pass or drop each stored packet as its verdict says. ----------------------------
        verdict = verdicts.source
        keep = Signal()
        self.comb += [
            keep.eq(verdict.good & ~(verdict.completion & (verdict.epoch != epoch))),
            data.source.connect(self.source, omit={"valid", "ready"}),
            self.source.valid.eq(verdict.valid & keep & data.source.valid),
            data.source.ready.eq(verdict.valid & (~keep | self.source.ready)),
            verdict.ready.eq(data.source.valid & data.source.ready & data.source.last),
        ]
