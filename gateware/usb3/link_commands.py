"""Link commands queued whole and sent back to back: the work-around for LUNA's LGOOD starvation.

Upstream bug (luna-usb 0.2.3, ``usb3/link/receiver.py``, ``HeaderPacketReceiver``; no upstream
issue names it, the nearest is greatscottgadgets/luna#52, header packet flow control, open):
the receiver sends its LGOODs and LCRDs through a ``LinkCommandGenerator`` whose ``valid`` drops
for a cycle between two commands, and the link's transmit arbiter (a ``StreamArbiter``) hands the
lane to whichever stream is valid when the current one drops ``valid``. With data packets
waiting (an IN stream, or anything in both directions at once) the lane goes back to the packet
transmitter after every single command, so one link command leaves per data packet. Worse, the
receiver's command FSM stays in ``ISSUE_CREDITS`` while any credit is owed: when a new header is
received and consumed before the last LCRD left, as happens on a busy lane, it never returns to
``SEND_ACKS``; the LGOODs owed pile up in a 3-bit counter that wraps, and are lost. In a 1 MiB
IN + 1 MiB OUT run the host saw LGOODs for 91 of 1,079 headers (a real host's tPendingHP timer,
USB 3.2 §7.2.4.1.13, would have taken the link to Recovery at the first).

:class:`LinkCommandQueue` sits between that receiver and the arbiter (:func:`queue_link_commands`
swaps it in, in :class:`.core.BurstLinkLayer`, the one place). It always takes the generator's
words, so the generator never waits for the lane and its FSM gets back to its ACKs at once; a
word the lane takes in the same cycle passes straight through (an empty queue costs nothing: on
a free lane every LGOOD and LCRD leaves exactly when it would upstream), a word it does not take
is queued, and what is queued goes out back to back with ``valid`` held, so once the lane is
granted every queued command leaves before the next data packet.
"""

from amaranth import Cat, DomainRenamer, Elaboratable, Module, ResetInserter, Signal
from amaranth.lib.fifo import SyncFIFO
from luna.gateware.usb.stream import USBRawSuperSpeedStream
from luna.gateware.usb.usb3.link.receiver import HeaderPacketReceiver

__all__ = ["LinkCommandQueue", "queue_link_commands", "AdvertisingHeaderPacketReceiver",
           "advertise_after_every_recovery"]

#: A link command on a 4-symbol PIPE: its LCSTART word, then the command word and its copy.
_WORD_BITS = 32 + 4


class LinkCommandQueue(Elaboratable):
    """Link command words in, the same words out: straight through while the lane takes them,
    queued (and then sent back to back) while it does not.

    Attributes
    ----------
    sink: USBRawSuperSpeedStream(), input stream
        Link commands as LUNA's ``LinkCommandGenerator`` sends them: an LCSTART word, then the
        command word; ``ready`` is high while the queue has room.
    source: USBRawSuperSpeedStream(), output stream
        The same words: the oldest queued one, or with none queued the sink's own in the same
        cycle; ``valid`` stays high while anything is queued.
    flush: Signal(), input
        Drop what is queued (the link left U0: LUNA's receiver advertises afresh on return).

    Parameters
    ----------
    depth: int
        Words held. LUNA owes at most four LGOODs and four LCRDs (four header buffers) plus an
        LRTY, an LBAD and a keep-alive; sixteen words (eight commands) more than cover what
        piles up during one data packet, and a full queue only makes the generator wait, as
        upstream.
    """

    def __init__(self, *, depth=16):
        self._depth = depth
        self.sink = USBRawSuperSpeedStream()
        self.source = USBRawSuperSpeedStream()
        self.flush = Signal()

    def elaborate(self, platform):
        m = Module()
        fifo = SyncFIFO(width=_WORD_BITS, depth=self._depth)
        m.submodules.fifo = fifo = ResetInserter({"ss": self.flush})(DomainRenamer("ss")(fifo))
        sink, source = self.sink, self.source

        # Out: the oldest queued word, or with none queued the generator's word itself.
        with m.If(fifo.r_rdy):
            m.d.comb += [source.valid.eq(1), source.data.eq(fifo.r_data[:32]),
                         source.ctrl.eq(fifo.r_data[32:]), fifo.r_en.eq(source.ready)]
        with m.Else():
            m.d.comb += [source.valid.eq(sink.valid), source.data.eq(sink.data),
                         source.ctrl.eq(sink.ctrl)]

        # In: every word is taken while there is room; a word that did not pass is queued.
        # (Queued words always go first, so the order on the lane is the generator's.)
        passed = ~fifo.r_rdy & source.ready
        m.d.comb += [
            sink.ready.eq(fifo.w_rdy),
            fifo.w_data.eq(Cat(sink.data, sink.ctrl)),
            fifo.w_en.eq(sink.valid & ~passed),
        ]
        return m


def queue_link_commands(m, arbiter, commands, *, flush):
    """Put a :class:`LinkCommandQueue` between ``commands`` (the stream LUNA's
    ``HeaderPacketReceiver`` sends its link commands on) and ``arbiter`` (the link's transmit
    ``SuperSpeedStreamArbiter``, not elaborated yet), in the arbiter's slot for ``commands``.
    Returns the queue, added to ``m``."""
    m.submodules.link_command_queue = queue = LinkCommandQueue()
    position = next(i for i, stream in enumerate(arbiter._sinks) if stream is commands)
    arbiter._sinks[position] = queue.source
    m.d.comb += [queue.sink.stream_eq(commands), queue.flush.eq(flush)]
    return queue


class AdvertisingHeaderPacketReceiver(HeaderPacketReceiver):
    """LUNA's ``HeaderPacketReceiver`` that advertises afresh after every Recovery, whatever its
    command FSM was doing when the link left U0.

    Upstream bug (luna-usb 0.2.3, ``usb3/link/receiver.py``; no upstream issue names it): the
    receiver prepares its advertisement (one LGOOD, LCRD_A..D: USB 3.2 §7.2.4.1.1) on the one
    cycle after ``enable`` (the link in U0) falls, and only in its ``DISPATCH_COMMAND`` state.
    When the link leaves U0 while it is sending an LGOOD or LCRD (``SEND_ACKS``,
    ``ISSUE_CREDITS``: the device went to Recovery on a host LCRD out of order, or the host took
    it there, just after a header), the reset is missed: after Recovery the device sends no
    LGOOD and goes on with its old LCRD numbering (an LCRD_C where LCRD_A must come), and its
    ACK and credit counters keep what they held. The hostile link's bench run (seed 3333) met it
    after ~6,000 faults (docs/DESIGN.md §4.2).

    A second departure in the same receiver: its ``RawHeaderPacketReceiver`` takes header
    packets whatever the link state, so a header the host was sending when the device went to
    Recovery counts as received although the device was out of U0 (an extra LGOOD and LCRD
    after the advertisement: one credit more than the device has buffers), and a header cut
    short by the host's TS1 counts as bad (an LBAD after the advertisement). Found by the
    hostile link (seed 33, fault 1,929: an ITP on the lane as the device left U0). Here the raw
    receiver is held in reset while the link is out of U0: a port takes packets in U0 only.

    Here the FSM sees an ``enable`` that falls only where LUNA's reset is right: in
    ``DISPATCH_COMMAND`` with nothing left to send, i.e. the FSM was there the cycle before too
    (with something owed it would have left) and no header arrived then (whose LGOOD the reset
    would drop from the advertisement). Until then the enable it saw is held: it finishes what
    it owes (a few cycles; what it sends goes into the :class:`LinkCommandQueue`, which drops
    everything while the link is out of U0). Nothing else of the receiver changes.
    """

    def elaborate(self, platform):
        link_ready, self.enable = self.enable, Signal()
        seen = self.enable  # the enable LUNA's elaborate reads
        try:
            m = super().elaborate(platform)
        finally:
            self.enable = link_ready
        # The receiver's one FSM, by Amaranth 0.5's Module internals (pinned in pyproject).
        fsm = m._generated["fsm"]
        dispatching = fsm.state == fsm.encoding["DISPATCH_COMMAND"]
        held, was_dispatching, header_before = Signal(), Signal(), Signal()
        m.d.ss += [held.eq(seen), was_dispatching.eq(dispatching),
                   header_before.eq(self.packet_received)]
        settled = dispatching & was_dispatching & ~header_before
        m.d.comb += seen.eq(link_ready | (held & ~settled))
        # The raw receiver (LUNA's submodule "receiver"), swapped for itself held in reset out
        # of U0; its signals are the same objects, so LUNA's wiring stands.
        raw, src_loc = m._named_submodules["receiver"]
        m._named_submodules["receiver"] = (ResetInserter({"ss": ~link_ready})(raw), src_loc)
        return m


def advertise_after_every_recovery(receiver):
    """Give ``receiver`` (the ``HeaderPacketReceiver`` LUNA's link layer built, not elaborated
    yet: its signals are already wired) :class:`AdvertisingHeaderPacketReceiver`'s
    ``elaborate``. Returns it."""
    if type(receiver) is not HeaderPacketReceiver:
        raise TypeError(f"expected LUNA's HeaderPacketReceiver, got {type(receiver).__name__}")
    receiver.__class__ = AdvertisingHeaderPacketReceiver
    return receiver
