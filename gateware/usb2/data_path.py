"""What the bulk endpoints carry: the pattern, or the host's own data looped back."""

from amaranth import C, Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb2

from ..common.bot import BotFramer
from ..common.checker import PatternChecker
from ..common.packet_stream import PacketStreamSignature
from ..common.pattern import PATTERN_SHAPE, Mod63Counter, PatternByteSource

__all__ = ["Usb2DataPath"]


class Usb2DataPath(wiring.Component):
    """Connects the packet streams of the bulk endpoints as the data mode asks.

    - :attr:`~busprobe.protocol.usb2.DataMode.PATTERN`: a :class:`PatternByteSource` feeds the
      IN endpoint (always valid, so the IN ring is always full); every OUT byte goes to the
      :class:`PatternChecker` and is taken at once.
    - :attr:`~busprobe.protocol.usb2.DataMode.LOOPBACK`: OUT packets go into the IN endpoint as
      they are, packet boundaries included; when the IN ring is full the OUT endpoint NAKs. The
      checker still sees every OUT byte, so the device checks what the host sent and the host
      checks what came back.
    - :attr:`~busprobe.protocol.usb2.DataMode.MOD63`: a :class:`Mod63Counter` feeds the IN
      endpoint usbtest's mod-63 pattern, starting over every ``max_packet_size`` bytes (the
      packets the IN endpoint cuts); OUT bytes are taken and not checked.
    - :attr:`~busprobe.protocol.usb2.DataMode.BOT`: a :class:`BotFramer` between the endpoints
      and the pattern engines: CBWs from OUT, the pattern into IN or OUT data into the checker,
      CSWs into IN. Only with ``bot``; without it BOT is carried as PATTERN (the request
      handler stalls SET_DATA_MODE to BOT on such a bitstream).

    Attributes
    ----------
    mode: Signal(DataMode), input
        The data mode.
    pattern: Signal(PATTERN_SHAPE), input
        The pattern sent and expected.
    restart: Signal(), input
        Strobe: both pattern streams start over at byte 0.
    clear: Signal(), input
        Strobe: clear the checker's error count.
    to_in: PacketStreamSignature(1), output
        Into the IN endpoint.
    in_cut_through: Signal(), output
        ``to_in`` is a generator that never stalls (the IN endpoint's ``cut_through``).
    from_out: PacketStreamSignature(1), input
        From the OUT endpoint.
    pattern_errors: Signal(32), output
        Mismatched 32-bit words of the OUT stream (see :class:`PatternChecker`).
    first_error_offset: Signal(32), output
        OUT stream offset of the first mismatch.

    Parameters
    ----------
    bot: bool
        Include the BOT framer.
    """

    mode: In(usb2.DataMode)
    pattern: In(PATTERN_SHAPE)
    restart: In(1)
    clear: In(1)
    to_in: Out(PacketStreamSignature(1))
    in_cut_through: Out(1)
    from_out: In(PacketStreamSignature(1))
    pattern_errors: Out(32)
    first_error_offset: Out(32)

    def __init__(self, *, bot=False):
        self._bot = bot
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.source = source = PatternByteSource(domain="usb")
        m.submodules.checker = checker = PatternChecker(domain="usb")
        to_in, from_out = self.to_in, self.from_out
        m.d.comb += [
            source.pattern.eq(self.pattern),
            source.restart.eq(self.restart),
            checker.pattern.eq(self.pattern),
            checker.restart.eq(self.restart),
            checker.clear.eq(self.clear),
            self.pattern_errors.eq(checker.errors),
            self.first_error_offset.eq(checker.first_error_offset),
            # MOD63 OUT data is taken and not checked (the checker knows the streamed patterns).
            checker.stream.valid.eq(from_out.valid & from_out.ready
                                    & (self.mode != usb2.DataMode.MOD63)),
            checker.stream.payload.eq(from_out.p.data),
        ]
        mod63 = self._add_mod63(m, source)
        bot_mode = self.mode == usb2.DataMode.BOT if self._bot else C(0)
        if self._bot:
            self._add_bot(m, source, checker, bot_mode)
        with m.If(self.mode == usb2.DataMode.LOOPBACK):
            m.d.comb += [
                to_in.valid.eq(from_out.valid),
                to_in.p.eq(from_out.p),
                from_out.ready.eq(to_in.ready),
            ]
        with m.Elif(~bot_mode):
            m.d.comb += [
                to_in.valid.eq(source.stream.valid),
                self.in_cut_through.eq(1),
                to_in.p.data.eq(Mux(self.mode == usb2.DataMode.MOD63, mod63.byte,
                                    source.stream.payload)),
                source.stream.ready.eq(to_in.ready),
                from_out.ready.eq(1),
            ]
        return m

    def _add_mod63(self, m, source):
        """The IN side of MOD63: a counter of the mod-63 byte, started over every packet of
        :data:`~busprobe.protocol.usb2.MAX_PACKET_SIZE` bytes the IN endpoint takes (it cuts
        packets of that size from a stream that never closes one). Where a packet starts is
        the pattern source's byte count, which moves with the same bytes (the source runs
        whatever the mode, and restarts with it). Returns the counter."""
        m.submodules.mod63 = mod63 = Mod63Counter(domain="usb")
        taken = self.to_in.valid & self.to_in.ready
        in_packet = source.offset[:(usb2.MAX_PACKET_SIZE - 1).bit_length()]
        packet_end = taken & (in_packet == usb2.MAX_PACKET_SIZE - 1)
        m.d.comb += [mod63.advance.eq(taken), mod63.packet_start.eq(self.restart | packet_end)]
        return mod63

    def _add_bot(self, m, source, checker, bot_mode):
        m.submodules.bot = bot = BotFramer(max_packet_size=usb2.MAX_PACKET_SIZE, domain="usb")
        to_in, from_out = self.to_in, self.from_out
        m.d.comb += [bot.restart.eq(self.restart), bot.checked.ready.eq(1)]
        with m.If(bot_mode):
            # Packets end where the framing says, so the IN ring waits for whole ones: no
            # cut-through. The checker sees only the data the CBWs frame.
            m.d.comb += [
                checker.stream.valid.eq(bot.checked.valid),
                checker.stream.payload.eq(bot.checked.p.data),
                bot.out_packets.valid.eq(from_out.valid),
                bot.out_packets.p.eq(from_out.p),
                from_out.ready.eq(bot.out_packets.ready),
                to_in.valid.eq(bot.in_packets.valid),
                to_in.p.eq(bot.in_packets.p),
                bot.in_packets.ready.eq(to_in.ready),
                bot.source.valid.eq(source.stream.valid),
                bot.source.p.eq(source.stream.payload),
                source.stream.ready.eq(bot.source.ready),
            ]
