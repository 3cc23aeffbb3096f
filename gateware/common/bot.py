"""Bulk-Only Transport between the bulk endpoints' packet streams and the pattern engines."""

from amaranth import Module, Mux, ResetInserter
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.bot import CBW_FLAG_IN, CswStatus

from .bot_framing import BotFraming, BotHandler, OutBeat
from .packet_stream import PacketStreamSignature

__all__ = ["BotFramer"]


class BotFramer(wiring.Component):
    """USB mass storage Bulk-Only Transport, one command at a time, on packet streams, whose
    commands move pattern bytes: :class:`~.bot_framing.BotFraming` with a handler that does not
    read the command block.

    A valid CBW starts a command of ``dCBWDataTransferLength`` bytes in the direction of
    ``bmCBWFlags`` bit 7 (the device's length and direction are the host's):

    - IN: that many bytes of ``source`` go to ``in_packets``, ``last`` on the final beat;
    - OUT: that many bytes of ``out_packets`` go to ``checked``, ``last`` where the command's
      data end (its length, or a short packet: the CSW's residue says how much is missing); a
      packet running past the length has its excess dropped and the CSW says phase error.

    Then the CSW; a bad CBW gets a CSW of phase error and no data phase (as the framing answers
    it).

    ``restart`` (SET_DATA_MODE, SET_PATTERN) drops whatever command is in progress.

    With ``width`` > 1 (USB 3.0's 32-bit streams) the framing is the same with ``keep`` lanes;
    ``source`` is then taken a whole beat at a time, so a data length that is not a multiple of
    ``width`` skips the rest of the last beat's bytes in the IN pattern.

    Attributes
    ----------
    restart: Signal(), input
        Strobe: wait for a CBW again, forgetting any command in progress.
    out_packets: PacketStreamSignature(width), input
        Packets the OUT endpoint received and ACKed.
    in_packets: PacketStreamSignature(width), output
        Packets for the IN endpoint: the data of IN commands, then every CSW.
    source: stream.Signature(8 * width), input
        Bytes to send in IN data phases (the pattern source).
    checked: PacketStreamSignature(width), output
        Bytes of OUT data phases (to the pattern checker); ``last`` ends each command's data.

    Parameters
    ----------
    width: int
        Bytes per beat of every stream.
    max_packet_size: int
        wMaxPacketSize of the bulk endpoints (tells a short OUT packet from a full one).
    domain: str
        Clock domain.
    """

    def __init__(self, *, width=1, max_packet_size=512, domain="usb"):
        self._width = width
        self._max_packet_size = max_packet_size
        self._domain = domain
        super().__init__({
            "restart": In(1),
            "out_packets": In(PacketStreamSignature(width)),
            "in_packets": Out(PacketStreamSignature(width)),
            "source": In(stream.Signature(8 * width)),
            "checked": Out(PacketStreamSignature(width)),
        })

    def elaborate(self, platform):
        m = Module()
        framing = BotFraming(self.out_packets, self.in_packets, width=self._width,
                             max_packet_size=self._max_packet_size, domain=self._domain)
        # restart returns every register of the framing to its reset value at once, whatever
        # state it is in: simpler than a restart branch in every state.
        commands = Module()
        framing.elaborate(commands, _PatternCommands(self, framing, self._domain))
        m.submodules.framing = ResetInserter({self._domain: self.restart})(commands)
        return m


class _PatternCommands(BotHandler):
    """The pattern framer's commands: the host's length in the host's direction, data from
    ``source`` and to ``checked``."""

    def __init__(self, framer, framing, domain):
        self._framer, self._framing, self._domain = framer, framing, domain

    def start(self, m):
        framing = self._framing
        length = framing.field("data_transfer_length")
        m.d[self._domain] += [framing.remaining.eq(length), framing.residue.eq(0),
                              framing.status.eq(CswStatus.PASSED)]
        with m.If(length == 0):
            m.next = "CSW"
        with m.Elif(framing.field("flags", 8) & CBW_FLAG_IN):
            m.next = "DATA_IN"
        with m.Else():
            m.next = "DATA_OUT"

    def data_in(self, m, take, beat):
        source = self._framer.source
        m.d.comb += source.ready.eq(self._framer.in_packets.ready)
        return source.valid, source.payload

    def data_out(self, m, beat: OutBeat):
        framing, checked = self._framing, self._framer.checked
        out = self._framer.out_packets
        taken = Mux(beat.over, framing.remaining, beat.count)
        m.d.comb += [checked.valid.eq(out.valid), checked.payload.data.eq(out.payload.data),
                     checked.payload.last.eq(beat.reached | beat.short_end),
                     *framing.keep(checked, taken)]
        return checked.ready
