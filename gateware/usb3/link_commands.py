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
swaps it in, in :class:`.core.BurstLinkLayer`, the one place): it takes each command whole as
soon as the generator offers it, so the generator never waits for the lane and its FSM gets back
to its ACKs at once, and it offers what it holds back to back with ``valid`` held, so once the
lane is granted every queued command goes out before the next data packet.
"""

from amaranth import Cat, DomainRenamer, Elaboratable, Module, ResetInserter, Signal
from amaranth.lib.fifo import SyncFIFOBuffered
from luna.gateware.usb.stream import USBRawSuperSpeedStream

__all__ = ["LinkCommandQueue", "queue_link_commands"]

#: A link command on a 4-symbol PIPE: its LCSTART word, then the command word and its copy.
_WORD_BITS = 32 + 4


class LinkCommandQueue(Elaboratable):
    """Whole link commands in, the same commands out back to back.

    Attributes
    ----------
    sink: USBRawSuperSpeedStream(), input stream
        Link commands as LUNA's ``LinkCommandGenerator`` sends them: an LCSTART word, then the
        command word, each held until ``ready``.
    source: USBRawSuperSpeedStream(), output stream
        The same words; ``valid`` stays high from the first word of the oldest command to the
        last word of the newest one queued.
    flush: Signal(), input
        Drop what is queued (the link left U0: LUNA's receiver advertises afresh on return).

    Parameters
    ----------
    depth: int
        Commands held. LUNA owes at most four LGOODs and four LCRDs (four header buffers) plus
        an LRTY, an LBAD and a keep-alive; eight more than cover what piles up during one data
        packet, and a full queue only makes the generator wait, as upstream.
    """

    def __init__(self, *, depth=8):
        self._depth = depth
        self.sink = USBRawSuperSpeedStream()
        self.source = USBRawSuperSpeedStream()
        self.flush = Signal()

    def elaborate(self, platform):
        m = Module()
        fifo = SyncFIFOBuffered(width=2 * _WORD_BITS, depth=self._depth)
        m.submodules.fifo = fifo = ResetInserter({"ss": self.flush})(DomainRenamer("ss")(fifo))
        sink, source = self.sink, self.source

        # In: hold the LCSTART word, write the pair when the command word comes. Ready only
        # while a whole command fits, so no command is ever taken half.
        start, second = Signal(_WORD_BITS), Signal()
        m.d.comb += sink.ready.eq(fifo.w_rdy)
        with m.If(sink.valid & sink.ready):
            m.d.ss += second.eq(~second)
            with m.If(~second):
                m.d.ss += start.eq(Cat(sink.data, sink.ctrl))
            with m.Else():
                m.d.comb += [fifo.w_en.eq(1), fifo.w_data.eq(Cat(start, sink.data, sink.ctrl))]

        # Out: the two words of the oldest command, the next one right after.
        half = Signal()  # the command word goes next
        word = fifo.r_data.word_select(half, _WORD_BITS)
        with m.If(fifo.r_rdy):
            m.d.comb += [source.valid.eq(1), source.data.eq(word[:32]), source.ctrl.eq(word[32:])]
            with m.If(source.ready):
                m.d.ss += half.eq(~half)
                m.d.comb += fifo.r_en.eq(half)

        with m.If(self.flush):
            m.d.ss += [second.eq(0), half.eq(0)]
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
