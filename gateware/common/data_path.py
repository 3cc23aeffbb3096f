"""What the bulk endpoints carry on both buses: the pattern, or the host's data looped back."""

from amaranth import C, DomainRenamer, Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol.usb2 import DataMode

from .bot import BotFramer
from .checker import PatternChecker
from .packet_stream import PacketStreamSignature
from .pattern import PATTERN_SHAPE, Mod63Counter, PatternByteSource, PatternGenerator
from .word_checker import PatternWordChecker

__all__ = ["BulkDataPath"]


class BulkDataPath(wiring.Component):
    """Connects the packet streams of the bulk endpoints as the data mode asks, a byte a beat
    (USB 2.0, ``width`` 1) or a word a beat with ``keep`` (SuperSpeed, ``width`` 4).

    - :attr:`~busprobe.protocol.usb2.DataMode.PATTERN`: the pattern feeds the IN endpoint
      (always valid, so its ring is always full): :class:`~.pattern.PatternByteSource` a byte a
      cycle, :class:`~.pattern.PatternGenerator` a word a cycle; every OUT beat goes to the
      checker (:class:`~.checker.PatternChecker`, or the word checker
      :class:`~.word_checker.PatternWordChecker`).
    - :attr:`~busprobe.protocol.usb2.DataMode.LOOPBACK`: OUT packets go into the IN endpoint as
      they are, packet boundaries included (``in_framed``), so each IN transfer ends where its
      OUT transfer did; when the IN ring is full the OUT endpoint stops draining (USB 2.0: it
      NAKs; SuperSpeed: its buffers fill and its ACK TPs advertise fewer). The checker still
      sees every OUT beat: the device checks what the host sent, the host checks what came back.
      Both directions run at once.
    - :attr:`~busprobe.protocol.usb2.DataMode.MOD63` (``mod63``, width 1): a
      :class:`~.pattern.Mod63Counter` feeds the IN endpoint usbtest's mod-63 pattern, starting
      over every ``max_packet_size`` bytes (the packets the IN endpoint cuts); OUT bytes are
      taken and not checked.
    - :attr:`~busprobe.protocol.usb2.DataMode.BOT` (``bot``, width 1): a :class:`~.bot.BotFramer`
      between the endpoints and the pattern engines: CBWs from OUT, the pattern into IN or OUT
      data into the checker, CSWs into IN. Without ``bot``, BOT is carried as PATTERN (the
      request handler stalls SET_DATA_MODE to BOT on such a bitstream).

    Attributes
    ----------
    mode: Signal(DataMode), input
        The data mode; change it only with ``restart`` (the endpoints are flushed with it).
    pattern: Signal(PATTERN_SHAPE), input
        The pattern sent and expected.
    restart: Signal(), input
        Strobe: both pattern streams start over at byte 0.
    clear: Signal(), input
        Strobe: clear the checker's error count.
    to_in: PacketStreamSignature(width), output
        Into the IN endpoint.
    in_framed: Signal(), output
        ``to_in`` carries packets to send as they are (the USB 2.0 IN endpoint's
        ``cut_through`` is its inverse); otherwise it is a generator that never stalls.
    from_out: PacketStreamSignature(width), input
        From the OUT endpoint.
    pattern_errors: Signal(32), output
        Mismatched 32-bit words of the OUT stream.
    first_error_offset: Signal(32), output
        OUT stream offset of the first mismatch.

    Parameters
    ----------
    width: int
        Bytes a beat: 1 (USB 2.0) or 4 (SuperSpeed).
    domain: str
        Clock domain of the endpoints' streams.
    max_packet_size: int
        The bulk endpoints' wMaxPacketSize (MOD63 starts over at each; BOT tells short OUT
        packets by it).
    mod63: bool
        Include usbtest's mod-63 source (width 1).
    bot: bool
        Include the BOT framer (width 1).
    """

    def __init__(self, *, width, domain, max_packet_size, mod63=False, bot=False):
        if width not in (1, 4):
            raise ValueError(f"the data path moves 1 or 4 bytes a beat, not {width}")
        if width != 1 and (mod63 or bot):
            raise ValueError("MOD63 and BOT are USB 2.0 data modes: width 1 only")
        self._width, self._domain, self._max_packet = width, domain, max_packet_size
        self._mod63, self._bot = mod63, bot
        super().__init__({
            "mode": In(DataMode),
            "pattern": In(PATTERN_SHAPE),
            "restart": In(1),
            "clear": In(1),
            "to_in": Out(PacketStreamSignature(width)),
            "in_framed": Out(1),
            "from_out": In(PacketStreamSignature(width)),
            "pattern_errors": Out(32),
            "first_error_offset": Out(32),
        })

    def _engines(self, m):
        """The pattern source and checker of this width: ``(source, checker, checker_ready)``."""
        if self._width == 1:
            m.submodules.source = source = PatternByteSource(domain=self._domain)
            m.submodules.checker = checker = PatternChecker(domain=self._domain)
            # The byte checker takes a byte every cycle.
            return source, checker, C(1)
        m.submodules.source = source = PatternGenerator(domain=self._domain)
        checker = PatternWordChecker()
        if self._domain != "ss":
            checker = DomainRenamer({"ss": self._domain})(checker)
        m.submodules.checker = checker
        return source, checker, checker.stream.ready

    def elaborate(self, platform):
        m = Module()
        source, checker, checker_ready = self._engines(m)
        to_in, from_out = self.to_in, self.from_out
        m.d.comb += [
            source.pattern.eq(self.pattern),
            source.restart.eq(self.restart),
            checker.pattern.eq(self.pattern),
            checker.restart.eq(self.restart),
            checker.clear.eq(self.clear),
            self.pattern_errors.eq(checker.errors),
            self.first_error_offset.eq(checker.first_error_offset),
            # The checker sees every OUT beat taken, whichever way it goes.
            checker.stream.valid.eq(from_out.valid & from_out.ready & self._checked(self.mode)),
        ]
        if self._width == 1:
            m.d.comb += checker.stream.payload.eq(from_out.payload.data)
        else:
            m.d.comb += checker.stream.payload.eq(from_out.payload)
        mod63 = self._add_mod63(m, source) if self._mod63 else None
        bot_mode = self.mode == DataMode.BOT if self._bot else C(0)
        if self._bot:
            self._add_bot(m, source, checker, bot_mode)
        with m.If(self.mode == DataMode.LOOPBACK):
            m.d.comb += [
                self.in_framed.eq(1),
                to_in.valid.eq(from_out.valid & checker_ready),
                to_in.payload.eq(from_out.payload),
                from_out.ready.eq(to_in.ready & checker_ready),
            ]
        with m.Elif(~bot_mode):
            m.d.comb += [from_out.ready.eq(checker_ready), *self._pattern_in(source, mod63)]
        return m

    def _checked(self, mode):
        """Whether OUT data are checked in ``mode``: MOD63's are taken and not checked (the
        checker knows the streamed patterns only); without MOD63, always (no compare)."""
        return mode != DataMode.MOD63 if self._mod63 else C(1)

    def _pattern_in(self, source, mod63):
        """``to_in`` fed from the pattern source (or, in MOD63, the mod-63 counter)."""
        to_in = self.to_in
        if self._width == 1:
            data = source.stream.payload
            if mod63 is not None:
                data = Mux(self.mode == DataMode.MOD63, mod63.byte, data)
            return [to_in.valid.eq(source.stream.valid), to_in.payload.data.eq(data),
                    source.stream.ready.eq(to_in.ready)]
        return [to_in.valid.eq(1), to_in.payload.data.eq(source.word),
                to_in.payload.keep.eq((1 << self._width) - 1), source.advance.eq(to_in.ready)]

    def _add_mod63(self, m, source):
        """The IN side of MOD63: a counter of the mod-63 byte, started over every packet of
        ``max_packet_size`` bytes the IN endpoint takes (it cuts packets of that size from a
        stream that never closes one). Where a packet starts is the pattern source's byte
        count, which moves with the same bytes (the source runs whatever the mode, and restarts
        with it). Returns the counter."""
        m.submodules.mod63 = mod63 = Mod63Counter(domain=self._domain)
        taken = self.to_in.valid & self.to_in.ready
        in_packet = source.offset[:(self._max_packet - 1).bit_length()]
        packet_end = taken & (in_packet == self._max_packet - 1)
        m.d.comb += [mod63.advance.eq(taken), mod63.packet_start.eq(self.restart | packet_end)]
        return mod63

    def _add_bot(self, m, source, checker, bot_mode):
        m.submodules.bot = bot = BotFramer(max_packet_size=self._max_packet, domain=self._domain)
        to_in, from_out = self.to_in, self.from_out
        m.d.comb += [bot.restart.eq(self.restart), bot.checked.ready.eq(1)]
        with m.If(bot_mode):
            # Packets end where the framing says, so the IN ring waits for whole ones. The
            # checker sees only the data the CBWs frame.
            m.d.comb += [
                self.in_framed.eq(1),
                checker.stream.valid.eq(bot.checked.valid),
                checker.stream.payload.eq(bot.checked.payload.data),
                bot.out_packets.valid.eq(from_out.valid),
                bot.out_packets.payload.eq(from_out.payload),
                from_out.ready.eq(bot.out_packets.ready),
                to_in.valid.eq(bot.in_packets.valid),
                to_in.payload.eq(bot.in_packets.payload),
                bot.in_packets.ready.eq(to_in.ready),
                bot.source.valid.eq(source.stream.valid),
                bot.source.payload.eq(source.stream.payload),
                source.stream.ready.eq(bot.source.ready),
            ]
