"""A two-entry buffer between a SuperSpeed stream's producer and a ``ready`` it must not see."""

from amaranth import Cat, Elaboratable, Module, Signal
from luna.gateware.usb.stream import SuperSpeedStreamInterface

__all__ = ["RegisteredReadyBuffer"]


class RegisteredReadyBuffer(Elaboratable):
    """Passes a SuperSpeed stream on one word a cycle, with the producer's ``ready`` registered.

    LUNA's SuperSpeed data transmitter ends a packet the first cycle its input is not valid, so a
    producer must keep ``valid`` up from ``first`` to ``last``; and its ``ready`` reaches the
    producer combinationally, from the transmitter's state through LUNA's endpoint and
    request-handler multiplexers. The vendor request handler advances a reply shift register of
    some 1,200 flip-flops on that ``ready``: on the ECPIX-5 build that path (six LUT levels and
    two long routes) limited the ``ss`` clock to 119-123 MHz on three nextpnr seeds of five.

    This buffer is the usual skid pair: a main register the consumer reads and a skid register
    that catches the word the producer offered while the consumer stopped. The producer's
    ``ready`` is "the skid register is empty", a flip-flop; the consumer's ``ready`` reaches only
    the buffer's 2 x 38 bits. It keeps one word a cycle through any pattern of stops, so the
    transmitter never sees a hole in a packet once the first word is in.

    Attributes
    ----------
    sink: SuperSpeedStreamInterface, input
        From the producer; its ``ready`` is registered.
    source: SuperSpeedStreamInterface, output
        To the consumer.
    flush: Signal(), input
        Drop both words (a new request abandons the reply in flight).

    Parameters
    ----------
    domain: str
        The clock domain (``ss``).
    stream_type: type
        The stream carried: LUNA's ``SuperSpeedStreamInterface`` (the default; a byte-valid
        mask) or ``USBRawSuperSpeedStream`` (symbols with their K flags, ``ctrl``, as the link
        layer's transmitters send them).
    """

    def __init__(self, *, domain: str = "ss", stream_type=SuperSpeedStreamInterface):
        self._domain = domain
        self.sink = stream_type()
        self.source = stream_type()
        self.flush = Signal()

    def elaborate(self, platform):
        m = Module()
        sync = m.d[self._domain]
        sink, source = self.sink, self.source

        def fields(stream):
            ctrl = [stream.ctrl] if hasattr(stream, "ctrl") else []
            return Cat(stream.data, stream.valid, stream.first, stream.last, *ctrl)

        width = len(fields(sink))
        main, skid = Signal(width), Signal(width)
        main_full, skid_full = Signal(), Signal()

        m.d.comb += [
            sink.ready.eq(~skid_full),
            fields(source).eq(main),
        ]
        with m.If(~main_full):
            m.d.comb += source.valid.eq(0)

        taken = main_full & source.ready
        offered = sink.valid.any() & ~skid_full
        with m.If(taken):
            with m.If(skid_full):
                sync += [main.eq(skid), skid_full.eq(0)]
            with m.Elif(offered):
                sync += main.eq(fields(sink))
            with m.Else():
                sync += main_full.eq(0)
        with m.Elif(offered):
            with m.If(main_full):
                sync += [skid.eq(fields(sink)), skid_full.eq(1)]
            with m.Else():
                sync += [main.eq(fields(sink)), main_full.eq(1)]
        # Last, so it overrides: a first arm of the chain above, a never-driven ``flush`` (the
        # IN endpoint's buffer) left Verilator two overlapping case arms to lint.
        with m.If(self.flush):
            sync += [main_full.eq(0), skid_full.eq(0)]
        return m
