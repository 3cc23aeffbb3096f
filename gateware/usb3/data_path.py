"""What the SuperSpeed bulk endpoints carry: the pattern, or the host's own data looped back."""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from busprobe.protocol import usb3

from ..common.packet_stream import PacketStreamSignature
from ..common.pattern import PATTERN_SHAPE, PatternGenerator
from .word_checker import PatternWordChecker

__all__ = ["Usb3DataPath"]


class Usb3DataPath(wiring.Component):
    """Connects the 32-bit packet streams of the bulk endpoints as the data mode asks.

    - :attr:`~busprobe.protocol.usb3.DataMode.PATTERN`: a :class:`PatternGenerator` feeds the
      IN endpoint four bytes a cycle (always valid, so its ring is always full); every OUT word
      goes to the :class:`PatternWordChecker`.
    - :attr:`~busprobe.protocol.usb3.DataMode.LOOPBACK`: OUT packets go into the IN endpoint as
      they are, packet boundaries included (``in_framed``), so each IN transfer ends where its
      OUT transfer did; when the IN ring is full the OUT endpoint stops draining, its buffers
      fill and its ACK TPs advertise fewer (NumP). The checker still sees every OUT word: the
      device checks what the host sent, the host checks what came back.

    Both directions run at once (SuperSpeed is dual simplex), as in the USB 2.0 loopback
    (``gateware/usb2/data_path.py``) but with 1024-byte packets and bursts.

    Attributes
    ----------
    mode: Signal(DataMode), input
        The data mode; change it only with ``restart`` (the endpoints are flushed with it).
    pattern: Signal(PATTERN_SHAPE), input
    restart: Signal(), input
        Strobe: both pattern streams start over at byte 0.
    clear: Signal(), input
        Strobe: clear the checker's error count.
    to_in: PacketStreamSignature(4), output
        Into the IN endpoint.
    in_framed: Signal(), output
        ``to_in`` carries packets to send as they are (the IN endpoint's ``framed``).
    from_out: PacketStreamSignature(4), input
        From the OUT endpoint.
    pattern_errors: Signal(32), output
        Mismatched 32-bit words of the OUT stream (see :class:`PatternWordChecker`).
    first_error_offset: Signal(32), output
        OUT stream offset of the first mismatch.
    """

    mode: In(usb3.DataMode)
    pattern: In(PATTERN_SHAPE)
    restart: In(1)
    clear: In(1)
    to_in: Out(PacketStreamSignature(4))
    in_framed: Out(1)
    from_out: In(PacketStreamSignature(4))
    pattern_errors: Out(32)
    first_error_offset: Out(32)

    def elaborate(self, platform):
        m = Module()
        m.submodules.source = source = PatternGenerator(domain="ss")
        m.submodules.checker = checker = PatternWordChecker()
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
            checker.stream.valid.eq(from_out.valid & from_out.ready),
            checker.stream.payload.eq(from_out.payload),
        ]
        with m.If(self.mode == usb3.DataMode.LOOPBACK):
            m.d.comb += [
                self.in_framed.eq(1),
                to_in.valid.eq(from_out.valid & checker.stream.ready),
                to_in.payload.eq(from_out.payload),
                from_out.ready.eq(to_in.ready & checker.stream.ready),
            ]
        with m.Else():
            m.d.comb += [
                to_in.valid.eq(1),
                to_in.payload.data.eq(source.word),
                to_in.payload.keep.eq(0b1111),
                source.advance.eq(to_in.ready),
                from_out.ready.eq(checker.stream.ready),
            ]
        return m
