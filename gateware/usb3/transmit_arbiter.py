"""The SuperSpeed link's transmit arbiter, granting the lane in the cycle a stream asks for it."""

from amaranth import Array, Cat, Module, Signal
from busprobe.protocol.usb3 import SKP_INTERVAL_SYMBOLS
from luna.gateware.usb.stream import SuperSpeedStreamArbiter, USBRawSuperSpeedStream

from .skid_buffer import RegisteredReadyBuffer

__all__ = ["SameCycleStreamArbiter"]


class SameCycleStreamArbiter(SuperSpeedStreamArbiter):
    """LUNA's transmit arbiter, with the lane handed over in the cycle it falls free.

    Upstream limitation (luna-usb 0.2.3, ``stream/arbiter.py``, ``StreamArbiter``): the index of
    the stream holding the lane is a register that changes the cycle after the holder drops
    ``valid``, so every change of stream costs a dead cycle, neither data nor logical idle (the
    physical layer scrambles the dropped stream's word; LUNA's SKP inserter may not use it).
    With both lanes busy each data packet is followed by two changes (to the link commands and
    back for the ACK TP): 2 of ~282 cycles per packet, 0.7 % of the SuperSpeed loopback.

    Here each stream enters through a :class:`.skid_buffer.RegisteredReadyBuffer` (a skid
    pair: its ``ready`` is a flip-flop, its ``valid`` another), and the lane is granted from
    those registers: the holder keeps it while its ``valid`` is high (a packet is never
    interrupted, as upstream), and in a cycle where it is low the highest-priority waiting
    stream gets it at once. Granting from the streams' own ``valid`` in the same cycle put
    LUNA's training-set generators, the grant and the whole ``ready`` chain of the packet
    transmitter (data transmitter, CRC, the endpoints' ring read) in one ``ss`` path: 106.8 MHz
    on the ECPIX-5 build. Behind the buffers the grant is a few LUTs from flip-flops and no
    producer sees the lane's ``ready``; each stream's words reach the lane a cycle later.

    The dead cycles were also the only ones in which LUNA's SKP inserter could *not* go; with
    them gone, the lane is never idle while commands wait, so the arbiter keeps its own count
    of the SKP ordered sets the inserter owes (the same rule: one per 354 symbols, sent in pairs
    in an idle cycle) and, at a boundary with two or more owed, grants nobody for a cycle: the
    inserter sends its pair there, and the partner's elastic buffer gets its SKPs at the rate
    USB 3.2 asks whatever the traffic.

    :func:`adopt` puts it in place of the arbiter LUNA's link layer built, before that is
    elaborated: the one place busprobe replaces it.

    Attributes
    ----------
    source: USBRawSuperSpeedStream(), output stream
        The lane (LUNA's).
    idle: Signal(), output
        No stream holds the lane: logical idle goes out, and the SKP inserter may send.
    counting: Signal(), input
        The link is in U0, where every cycle sends four symbols (logical idle included): the
        SKP count runs only then.
    flush: Signal(), input
        Drop what the streams' buffers hold (a warm or hot reset: the link starts over).
    skp_due: Signal(), output
        A pair of SKP ordered sets is owed: it goes at the next boundary where the holder drops
        ``valid``.
    waiting: Signal(len(streams)), output
        Each stream has a word in its buffer (bit ``i``: the ``i``-th stream added).
    """

    @classmethod
    def adopt(cls, arbiter):
        """Turn LUNA's ``SuperSpeedStreamArbiter`` ``arbiter`` (streams added, not elaborated
        yet) into this arbiter; returns it."""
        arbiter.__class__ = cls
        arbiter.counting = Signal()
        arbiter.flush = Signal()
        arbiter.skp_due = Signal()
        arbiter.waiting = Signal(len(arbiter._sinks))
        return arbiter

    def elaborate(self, platform):
        m = Module()
        source = self.source
        sinks = []
        for index, stream in enumerate(self._sinks):
            buffer = RegisteredReadyBuffer(domain="ss", stream_type=USBRawSuperSpeedStream)
            m.submodules[f"buffer_{index}"] = buffer
            m.d.comb += [buffer.sink.stream_eq(stream), buffer.flush.eq(self.flush)]
            sinks.append(buffer.source)
        valids = Array(sink.valid for sink in sinks)
        m.d.comb += self.waiting.eq(Cat(sink.valid for sink in sinks))

        holder = Signal(range(len(sinks)))  # the stream that had the lane last cycle
        grant = Signal(range(len(sinks)))
        granted = Signal()

        skp_owed = Signal(range(8))
        skp_bytes = Signal(range(SKP_INTERVAL_SYMBOLS))
        skp_due = skp_owed >= 2
        m.d.comb += self.skp_due.eq(skp_due)

        with m.If(valids[holder]):
            m.d.comb += [grant.eq(holder), granted.eq(1)]
        with m.Elif(~skp_due):
            # Reversed: the last assignment wins, so the first stream added has priority.
            for index in reversed(range(len(sinks))):
                with m.If(sinks[index].valid):
                    m.d.comb += [grant.eq(index), granted.eq(1)]
        m.d.ss += holder.eq(grant)
        m.d.comb += self.idle.eq(~granted)
        with m.If(granted):
            with m.Switch(grant):
                for index, sink in enumerate(sinks):
                    with m.Case(index):
                        m.d.comb += source.stream_eq(sink)

        # LUNA's CTCSkipInserter, counted alongside: four symbols a cycle; a pair of SKP
        # ordered sets leaves in an idle cycle once two are owed.
        needed = Signal()
        with m.If(self.counting):
            with m.If(skp_bytes + 4 >= SKP_INTERVAL_SYMBOLS):
                m.d.ss += skp_bytes.eq(skp_bytes + 4 - SKP_INTERVAL_SYMBOLS)
                m.d.comb += needed.eq(1)
            with m.Else():
                m.d.ss += skp_bytes.eq(skp_bytes + 4)
        sent = self.idle & skp_due
        with m.If(~self.counting):
            m.d.ss += [skp_owed.eq(0), skp_bytes.eq(0)]
        with m.Elif(needed & ~sent):
            m.d.ss += skp_owed.eq(skp_owed + 1)
        with m.Elif(sent & ~needed):
            m.d.ss += skp_owed.eq(skp_owed - 2)
        with m.Elif(sent & needed):
            m.d.ss += skp_owed.eq(skp_owed - 1)
        return m
