"""Bulk-Only Transport framing, defined once: CBW in, a data phase, CSW out; a handler says
what a command does.

The constants and layouts are :mod:`busprobe.protocol.bot`'s; this is their gateware twin. Two
components use it: the pattern framer (:class:`~.bot.BotFramer`, whose commands move pattern
bytes in the host's direction and length) and the null disk's engine
(:class:`~.scsi_engine.ScsiBotEngine`, whose commands are SCSI).
"""

from dataclasses import dataclass

from amaranth import Cat, Const, Mux, Signal
from amaranth.hdl import Value
from busprobe.protocol.bot import (
    CBW_OFFSETS,
    CBW_SIGNATURE,
    CBW_SIZE,
    CSW_SIGNATURE,
    CSW_SIZE,
    CswStatus,
)

__all__ = ["BotFraming", "BotHandler", "OutBeat", "at_most", "less_than"]


def at_most(value, limit):
    """``value <= limit`` for a wide ``value`` and a ``limit`` below 8: the high bits zero and a
    3-bit compare. (A 32-bit compare against a beat's byte count was the ECP5 ``ss`` clock's
    critical path, through the carry chain.)"""
    return (value[3:] == 0) & (value[:3] <= limit)


def less_than(value, limit):
    """``value < limit``, as :func:`at_most`."""
    return (value[3:] == 0) & (value[:3] < limit)


@dataclass(frozen=True)
class OutBeat:
    """The beat on ``out_packets`` in an OUT data phase, as the framing counts it.

    Attributes
    ----------
    count: Value
        Bytes in the beat (``keep``'s set bits; 1 at a byte a beat).
    over: Value
        The beat runs past the host's length (BOT §6.7 case Ho > Do: a phase error).
    reached: Value
        The beat reaches the host's length.
    short_end: Value
        The beat ends a short packet: the host's data phase ends early.
    """

    count: Value
    over: Value
    reached: Value
    short_end: Value


class BotHandler:
    """What a command does between the CBW and the CSW: the hooks :class:`BotFraming` calls as
    it builds its state machine. Each hook adds logic to the framing's module ``m``, inside the
    state it is called from; the framing's registers are the handler's to read and set there."""

    def start(self, m):
        """In DECODE, for a valid CBW (its fields are in :meth:`BotFraming.field`): set
        ``m.next`` to the handler's first state, or to a data state (``DATA_IN``,
        ``DATA_OUT``: set ``remaining`` first) or to ``CSW`` (set ``residue`` and ``status``)."""
        raise NotImplementedError

    def states(self, m):
        """The handler's own states (``with m.State(...)``), between DECODE and the data."""

    def data_in(self, m, take, beat):
        """In DATA_IN: returns ``(valid, data)`` for the IN beat; ``take`` (the beat is taken)
        and ``beat`` (its byte count) are for the handler's own accounting."""
        raise NotImplementedError

    def data_out(self, m, beat: OutBeat):
        """In DATA_OUT: where the beat's data go; returns the ``ready`` of ``out_packets`` (a
        beat is taken where it and ``valid`` are set)."""
        raise NotImplementedError

    def finish(self, m):
        """The CSW's last beat is taken: forget the command."""


class BotFraming:
    """USB mass storage Bulk-Only Transport, one command at a time, on the bulk endpoints'
    packet streams: the state machine and its registers, built into the module of the component
    that uses it (so its handler drives that component's ports from one module).

    Waits for a CBW on ``out_packets`` (its first 31 bytes are taken from whole beats of the
    packet). A packet of exactly 31 bytes starting with ``USBC`` is a command; the handler takes
    it from there (:meth:`BotHandler.start`, :meth:`BotHandler.states`). Any other packet where a
    CBW belongs is answered at once with a CSW of status phase error, the tag it carried and a
    residue of the whole length it asked for, and no data phase, as bridge chips answer a CBW
    they cannot take.

    - DATA_IN: ``remaining`` bytes go to ``in_packets`` as the handler gives them, ``last`` on
      the final beat (packets end where the host's length does: a short packet, or a full one
      with no ZLP);
    - DATA_OUT: up to ``remaining`` bytes of ``out_packets`` go where the handler puts them. A
      short packet ends the data phase early; a packet running past the length has its excess
      dropped (DRAIN) and the CSW says phase error (BOT §6.7, case Ho > Do). The residue is
      what is left of the host's length, or ``excess`` if that is more.

    Then the 13-byte CSW (the tag, ``residue``, ``status``) goes to ``in_packets`` as a packet of
    its own. Every count is in bytes whatever the width: a beat of ``width`` bytes carries
    ``keep`` (the last one of a packet may be partial).

    Attributes
    ----------
    host_length: Signal(32)
        ``dCBWDataTransferLength`` of the command.
    host_in: Signal()
        ``bmCBWFlags`` bit 7: the host expects data in.
    status: Signal(8)
        The CSW's status (a :class:`~busprobe.protocol.bot.CswStatus`).
    residue: Signal(32)
        The CSW's residue.
    remaining: Signal(32)
        Bytes of the data phase still to move.
    excess: Signal(32)
        The least residue of an OUT command: the host's bytes the device had no use for.
    waiting: Signal()
        Between a CSW and the next CBW, once a CBW was seen (its cycles are the gap between
        commands).
    phase_error: Signal()
        Strobe: the CSW starting to go out says phase error.

    Parameters
    ----------
    out_packets: PacketStreamSignature(width) interface
        From the bulk OUT endpoint.
    in_packets: PacketStreamSignature(width) interface
        To the bulk IN endpoint.
    width: int
        Bytes per beat of both streams.
    max_packet_size: int
        The bulk endpoints' wMaxPacketSize (tells a short OUT packet from a full one).
    domain: str
        Clock domain.
    """

    def __init__(self, out_packets, in_packets, *, width, max_packet_size, domain):
        self._out, self._in = out_packets, in_packets
        self._width, self._max_packet, self._domain = width, max_packet_size, domain
        self._cbw_beats = -(-CBW_SIZE // width)
        self._csw_beats = -(-CSW_SIZE // width)
        self._cbw = Signal(8 * width * self._cbw_beats)
        self._received = Signal(range(CBW_SIZE + width + 2))  # CBW bytes so far; stops past 31
        self._packet_bytes = Signal(range(max_packet_size + width + 1))  # OUT packet so far
        self._csw_index = Signal(range(self._csw_beats))
        self._tag = Signal(32)
        self._seen = Signal()
        self.host_length, self.host_in = Signal(32), Signal()
        self.status, self.residue = Signal(8), Signal(32)
        self.remaining, self.excess = Signal(32), Signal(32)
        self.waiting, self.phase_error = Signal(), Signal()

    def field(self, name, width=32):
        """The CBW's field ``name`` (:data:`~busprobe.protocol.bot.CBW_OFFSETS`)."""
        return self._cbw[8 * CBW_OFFSETS[name]:][:width]

    def cb(self, first, count=1):
        """Bytes ``first..first+count`` of the command block, big-endian."""
        base = CBW_OFFSETS["cb"]
        return Cat(*(self._cbw.word_select(base + first + count - 1 - i, 8)
                     for i in range(count)))

    def beat_bytes(self, stream):
        """Bytes in the beat on ``stream``: ``keep``'s low bits set (1 at a byte a beat)."""
        if self._width == 1:
            return 1
        keep = stream.payload.keep
        return sum(keep[i] for i in range(self._width))

    def keep(self, stream, count):
        """Drive ``stream``'s ``keep`` for a beat of ``min(count, width)`` bytes."""
        if self._width == 1:
            return []
        keep = (1 << self._width) - 1
        for n in range(self._width - 1, 0, -1):
            keep = Mux(count == n, (1 << n) - 1, keep)
        return [stream.payload.keep.eq(keep)]

    def elaborate(self, m, handler: BotHandler):
        """Add the framing's state machine, with ``handler``'s parts, to ``m``."""
        sync = m.d[self._domain]
        out = self._out
        m.d.comb += self.waiting.eq(self._seen & (self._received == 0))
        sync += self.phase_error.eq(0)

        with m.FSM(domain=self._domain):
            with m.State("CBW"):
                m.d.comb += out.ready.eq(1)
                with m.If(out.valid):
                    for beat in range(self._cbw_beats):
                        with m.If(self._received == beat * self._width):
                            sync += self._cbw.word_select(beat, 8 * self._width).eq(
                                out.payload.data)
                    with m.If(self._received <= CBW_SIZE):
                        sync += self._received.eq(self._received + self.beat_bytes(out))
                    with m.If(out.payload.last):
                        m.next = "DECODE"

            with m.State("DECODE"):
                sync += [self._tag.eq(self.field("tag")),
                         self.host_length.eq(self.field("data_transfer_length")),
                         self.host_in.eq(self.field("flags", 8)[7]), self._seen.eq(1)]
                with m.If((self._received == CBW_SIZE)
                          & (self.field("signature") == CBW_SIGNATURE)):
                    handler.start(m)
                with m.Else():
                    sync += [self.residue.eq(self.field("data_transfer_length")),
                             self.status.eq(CswStatus.PHASE_ERROR)]
                    m.next = "CSW"

            handler.states(m)
            self._data_in(m, handler)
            self._data_out(m, handler)

            with m.State("RESIDUE"):
                # A cycle after the data, so the compare is not behind the OUT endpoint's valid.
                sync += self.residue.eq(Mux(self.remaining > self.excess, self.remaining,
                                            self.excess))
                m.next = "CSW"

            with m.State("DRAIN"):
                # The host sent more than its CBW said: the rest of the packet goes nowhere.
                m.d.comb += out.ready.eq(1)
                with m.If(out.valid):
                    sync += self.status.eq(CswStatus.PHASE_ERROR)
                    with m.If(out.payload.last):
                        sync += self._packet_bytes.eq(0)
                        m.next = "CSW"

            self._csw(m, handler)

    def _data_in(self, m, handler):
        sync, inp, width = m.d[self._domain], self._in, self._width
        with m.State("DATA_IN"):
            take = inp.valid & inp.ready
            ending = at_most(self.remaining, width)
            beat = Mux(less_than(self.remaining, width), self.remaining, width)
            valid, data = handler.data_in(m, take, beat)
            m.d.comb += [inp.valid.eq(valid), inp.payload.data.eq(data),
                         inp.payload.last.eq(ending), *self.keep(inp, self.remaining)]
            with m.If(take):
                sync += self.remaining.eq(self.remaining - beat)
                with m.If(ending):
                    m.next = "CSW"

    def _data_out(self, m, handler):
        sync, out, remaining = m.d[self._domain], self._out, self.remaining
        with m.State("DATA_OUT"):
            count = self.beat_bytes(out)
            packet_end = self._packet_bytes + count
            beat = OutBeat(count=count, over=less_than(remaining, count),
                           reached=at_most(remaining, count),
                           short_end=out.payload.last & (packet_end < self._max_packet))
            ready = handler.data_out(m, beat)
            m.d.comb += out.ready.eq(ready)
            # ``ready``, not ``out.ready``: a handler's constant 1 folds away here.
            with m.If(out.valid & ready):
                sync += [remaining.eq(Mux(beat.over, 0, remaining - count)),
                         self._packet_bytes.eq(packet_end)]
                with m.If(out.payload.last):
                    sync += self._packet_bytes.eq(0)
                with m.If(beat.over):
                    sync += self.status.eq(CswStatus.PHASE_ERROR)
                with m.If(beat.reached & ~out.payload.last):
                    m.next = "DRAIN"
                with m.Elif(beat.reached | beat.short_end):
                    m.next = "RESIDUE"

    def _csw(self, m, handler):
        sync, inp, index = m.d[self._domain], self._in, self._csw_index
        with m.State("CSW"):
            csw = Cat(Const(CSW_SIGNATURE, 32), self._tag, self.residue, self.status)
            final = index == self._csw_beats - 1
            m.d.comb += [
                inp.valid.eq(1),
                inp.payload.data.eq(csw.word_select(index, 8 * self._width)),
                inp.payload.last.eq(final),
                *self.keep(inp, Mux(final, CSW_SIZE - (self._csw_beats - 1) * self._width,
                                    self._width)),
            ]
            with m.If(inp.ready):
                sync += index.eq(index + 1)
                with m.If(index == 0):
                    sync += self.phase_error.eq(self.status == CswStatus.PHASE_ERROR)
                with m.If(final):
                    # The next CBW starts from zeros: a short bad one echoes only its own bytes.
                    sync += [index.eq(0), self._cbw.eq(0), self._received.eq(0)]
                    handler.finish(m)
                    m.next = "CBW"
